"""The deployment lease knows when its holder is dead, and is keyed by the project's identity, never by
its folder's name (issue 25, case 3), over real HTTP to the local service."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, asset, materialize

from shift_left_dagster.defs.resources import run_liveness
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.lease import DeploymentLease, LeaseBusy
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service

HOST = socket.gethostname()


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("lease-service"), spark_factory=lambda: spark) as running:
        yield running


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def lease(service: InProcessService, holder: str, name: str = "local-lease-test", **kwargs: object) -> DeploymentLease:
    return DeploymentLease(client_for(service.url), name, holder, poll_seconds=0.1, **kwargs)  # type: ignore[arg-type]


def takeovers(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "taking over" in r.getMessage()]


def test_a_dead_cli_holder_is_taken_over_at_once_with_one_warning(service, caplog) -> None:  # type: ignore[no-untyped-def]
    gone = f"{HOST}:{dead_pid()}"
    lease(service, gone, process=gone).acquire()  # what a kill -9 of a CLI deployment leaves
    mine = lease(service, "me", wait_seconds=60)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        mine.acquire()
    assert time.monotonic() - started < 20  # the service's own calls only: no wait for the holder
    assert takeovers(caplog) == [f"taking over the deployment lease local-lease-test from {gone} (dead)"]
    assert not [r for r in caplog.records if "waiting" in r.getMessage()]
    held = mine.current()
    assert held is not None and held.holder == "me" and held.alive is True  # this process holds it
    mine.release()
    assert mine.current() is None


def test_a_dagster_run_holder_whose_run_ended_is_taken_over(service, caplog) -> None:  # type: ignore[no-untyped-def]
    runs = {"dagster-run:ended": False, "dagster-run:running": True}
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the holder's live process
    try:
        for run, alive in runs.items():
            lease(service, run, process=f"{HOST}:{other.pid}").acquire()
            mine = lease(service, "dagster-run:mine", wait_seconds=1.5, liveness=runs.get)
            with caplog.at_level(logging.WARNING):
                if alive:
                    with pytest.raises(LeaseBusy) as busy:
                        mine.acquire()
                    message = str(busy.value)
                    assert "\n" not in message and "dagster-run:running holds local-lease-test since" in message
                    assert "alive" in message
                    assert sum("waiting for the deployment lease" in r.getMessage() for r in caplog.records) == 1
                    mine.break_()
                else:
                    mine.acquire()
                    assert takeovers(caplog) == [
                        "taking over the deployment lease local-lease-test from dagster-run:ended (dead)"]
                    mine.release()
    finally:
        other.kill()
        other.wait()


def test_an_unknown_holder_keeps_the_stale_rule(service) -> None:  # type: ignore[no-untyped-def]
    lease(service, "elsewhere:1", process="another-host:1").acquire()
    with pytest.raises(LeaseBusy):
        lease(service, "me", wait_seconds=0.5).acquire()
    mine = lease(service, "me", wait_seconds=5, stale_seconds=0)
    mine.acquire()
    mine.release()


def test_dagster_liveness_asks_the_instance_for_the_run() -> None:
    @asset
    def one() -> int:
        return 1

    instance = DagsterInstance.ephemeral()
    run_id = materialize([one], instance=instance).run_id
    alive = run_liveness(instance)
    assert alive(f"dagster-run:{run_id}") is False  # finished: not in progress
    assert alive("dagster-run:not-a-run-of-this-instance") is None and alive(f"{HOST}:1") is None


# -- identity ----------------------------------------------------------------------------------


def two_projects(tmp_path: Path) -> tuple[Path, Path]:
    """The sample project, and a one-table project, each in a folder named flink_project."""
    a = tmp_path / "a" / "flink_project"
    shutil.copytree(PROJECT, a, ignore=shutil.ignore_patterns(".shift_left_dagster"))
    scripts = tmp_path / "b" / "flink_project" / "pipelines" / "sources" / "pb" / "src_b_only" / "sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / "ddl.src_b_only.sql").write_text("CREATE TABLE src_b_only (k STRING)")
    return a, tmp_path / "b" / "flink_project"


def deployer(service: InProcessService, root: Path, **config: object) -> Deployer:
    settings = local_defaults(service.url)
    settings.app = settings.app.model_copy(update=config)
    graph = ProjectGraph(build_inventory(root / "pipelines"))
    return Deployer(client=client_for(service.url), graph=graph, config=settings, lease_wait_seconds=2)


def test_two_projects_in_folders_of_the_same_name_never_share_a_lease_nor_statements(service, tmp_path) -> None:  # type: ignore[no-untyped-def]
    root_a, root_b = two_projects(tmp_path)
    a, b = deployer(service, root_a), deployer(service, root_b)
    assert a.lease().name != b.lease().name
    assert "flink-project" not in a.lease().name and "flink-project" not in b.lease().name
    assert deployer(service, root_a, project_name="sales").lease().name == "local-lease-sales"
    b.deploy(["src_b_only"]).wait()
    ddl = next(s for s in client_for(service.url).list_statements() if s.name == "local-pb-ddl-src-b-only")
    assert ddl.phase == "COMPLETED" and ddl.metadata.labels["sl_project"] == b.identity
    with b.deploy(["src_b_only"]):  # b holds its lease: a's deployments do not wait for it
        started = time.monotonic()
        housekeeping = a.housekeep()
        housekeeping.release()
        assert time.monotonic() - started < 2
    assert "local-pb-ddl-src-b-only" not in {n for s in housekeeping.plan.steps for n in s.retire}
    assert "local-pb-ddl-src-b-only" in {n for s in b.housekeep().plan.steps for n in s.retire}
    undeploy = a.undeploy(["src_b_only"], strict=False)
    undeploy.release()
    assert [s.action.value for s in undeploy.plan.steps] == ["skip"]  # nothing retired, nothing dropped
