"""A Dagster run terminated mid-deployment stops within 30 s, leaves every statement as it was or as
planned, says which steps ran, and releases the project's lease (issue 27).

Dagster terminates a run by interrupting its process (SIGINT, as `DefaultRunLauncher.terminate` does
through the code server); the run here is a real `materialize` in a child process, interrupted once
its deployment has started statements. Before, the executor's thread pool waited for each in-flight
step's 600 s timeout and nothing stopped the steps not started yet.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


def table_dml(name: str) -> bool:
    """A table's DML statement (seed statements are named seed-...)."""
    return name.startswith("local-") and "-dml-" in name

RUN = textwrap.dedent("""
    import sys
    from dagster import AssetSelection, DagsterInstance, materialize
    from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
    from shift_left_dagster.defs.builder import flink_resources
    from shift_left_dagster.defs.resources import ConfluentFlinkResource
    from shift_left_dagster.checks import ChecksSettings

    project = FlinkProject(sys.argv[2])
    assets = build_flink_assets(project, checks=ChecksSettings(enabled=[]))
    selection = AssetSelection.assets("fct_order", "fct_c360_purchase").upstream()
    result = materialize(assets, selection=selection, instance=DagsterInstance.ephemeral(),
                         resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=sys.argv[1])),
                         raise_on_error=False)
    print("RUN SUCCESS" if result.success else "RUN NOT SUCCESSFUL", flush=True)
""")


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("terminate-service"), spark_factory=lambda: spark) as running:
        yield running


def test_a_terminated_run_stops_soon_and_leaves_statements_sound(service, tmp_path):  # type: ignore[no-untyped-def]
    client = client_for(service.url)
    script = tmp_path / "run.py"
    script.write_text(RUN)
    child = subprocess.Popen([sys.executable, str(script), service.url, str(PROJECT / "pipelines")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    while not [s for s in client.list_statements() if table_dml(s.name)]:  # its deployment has started
        assert child.poll() is None, child.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the run started no statement in 240 s"
        time.sleep(0.2)
    interrupted = time.monotonic()
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate(timeout=60)
    stopped_in = time.monotonic() - interrupted
    assert stopped_in < 30, f"stopped after {stopped_in:.1f} s"
    assert "RUN SUCCESS" not in output
    assert "deployment stopped: steps" in output, output[-3000:]

    statements = {s.name: s.phase for s in client.list_statements()}
    assert not [n for n in statements if "-lease-" in n], statements  # released
    settle = time.monotonic() + 30  # a statement created just before the stop starts, as its step planned
    while [p for p in statements.values() if p == "PENDING"] and time.monotonic() < settle:
        time.sleep(0.5)
        statements = {s.name: s.phase for s in client.list_statements()}
    dml = {n: p for n, p in statements.items() if table_dml(n)}
    assert dml and all(p == "RUNNING" for p in dml.values()), dml  # started ones run; nothing half-failed
    assert not [n for n, p in statements.items() if p in ("FAILED", "STOPPED", "PENDING")], statements

    # The next deployment plans at once (no lease to wait for) and converges.
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    started = time.monotonic()
    Deployer(client=client, graph=graph, config=local_defaults(service.url), seeds_dir=PROJECT / "seeds",
             lease_wait_seconds=5).deploy(["fct_order", "fct_c360_purchase"]).wait()
    assert time.monotonic() - started < 240
    phases = {s.name: s.phase for s in client.list_statements() if table_dml(s.name)}
    assert all(p == "RUNNING" for p in phases.values()), phases
