"""Checks run on the local service's own Spark through the Spark Connect server it offers: neither
`shift-left-dagster check` nor a Dagster run against the local service starts a JVM (issue 29), and
their verdicts are those of a run on a Spark session of its own.

The service runs detached (`local start`, its own JVM), on a copy of the sample project. Each check
runs in a child process, as a terminal or a Dagster run worker would, which reports its verdicts,
whether it holds a classic SparkContext and the java processes among its descendants. The reference
run sets SHIFT_LEFT_SPARK_MASTER (a master of its own: the local session), and must show a JVM, so
the probe is seen to catch one. Stopping the service stops its Connect server.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shift_left_dagster.local.process import start, stop
from tests.integration.support import PROJECT

pytestmark = [pytest.mark.service, pytest.mark.spark]

TABLES = ["src_table_3", "int_table_2"]
ROOT = Path(__file__).resolve().parents[2]
VERDICT = ("table", "check", "passed", "severity", "message")


class Service:
    """A detached local service of a copy of the sample project, and the environment of its clients."""

    def __init__(self, base: Path) -> None:
        self.project = base / "project"
        shutil.copytree(PROJECT, self.project, ignore=shutil.ignore_patterns(".shift_left_dagster"))
        self.data_dir = base / "service"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SL_") and k not in ("CONFIG_FILE", "DAGSTER_HOME", "SPARK_REMOTE")}
        self.env.update(SHIFT_LEFT_LOCAL_DATA=str(self.data_dir), PIPELINES=str(self.project / "pipelines"),
                        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", *args], cwd=self.project,
                              env=env or self.env, capture_output=True, text=True, timeout=600)

    def status(self) -> dict[str, Any]:
        done = self.cli("local", "status", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def child(self, mode: str, **extra_env: str) -> dict[str, Any]:
        """The checks of TABLES in a child process (`mode`: cli or dagster); its report."""
        done = subprocess.run([sys.executable, "-m", "tests.integration.test_checks_on_service_spark", mode],
                              cwd=self.project, env={**self.env, **extra_env}, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Started, its Spark Connect offer awaited (up to 3 min: its JVM starts first), TABLES deployed."""
    running = Service(tmp_path_factory.mktemp("service-spark"))
    start(running.data_dir, port=0)
    try:
        deadline = time.monotonic() + 180
        while running.status().get("spark_connect_url") is None and time.monotonic() < deadline:
            time.sleep(1)
        deployed = running.cli("deploy", *TABLES)
        assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
        yield running
    finally:
        stop(running.data_dir)


def test_check_runs_on_the_services_spark_without_a_jvm_and_agrees_with_a_session_of_its_own(
        service: Service) -> None:
    assert service.status()["spark_connect_url"], "the running service offers no Spark Connect server"
    offered = service.child("cli")
    own = service.child("cli", SHIFT_LEFT_SPARK_MASTER="local[1]")
    assert own["classic_context"] and own["java"], own  # the probe sees a JVM where there is one
    assert not offered["classic_context"] and offered["java"] == [] and offered["remote"], offered
    verdicts = sorted(tuple(o[k] for k in VERDICT) for o in offered["outcomes"])
    assert verdicts == sorted(tuple(o[k] for k in VERDICT) for o in own["outcomes"])
    assert {(t, c) for t, c, *_ in verdicts} >= {("int_table_2", "reconciled"), ("src_table_3", "reconciled")}
    assert all(o["passed"] for o in offered["outcomes"]), offered["outcomes"]
    assert all(o["metadata"].get("compared_rows", 1) > 0 for o in offered["outcomes"])


def test_a_dagster_run_checks_on_the_services_spark_without_a_jvm(service: Service) -> None:
    report = service.child("dagster")
    assert report["success"] and sorted(report["materialized"]) == sorted(TABLES), report
    assert not report["classic_context"] and report["java"] == [] and report["remote"], report
    # pyspark's Connect mode is process-wide: once the run's session ends, a classic session works again
    # (a test process that ran a Dagster run first got Connect sessions for the rest of the suite)
    assert not report["connect_mode_after"] and report["classic_after"], report
    assert report["checks"] and all(c["passed"] for c in report["checks"]), report["checks"]


def test_promote_verifies_on_the_services_spark_without_a_jvm(service: Service) -> None:
    """`promote` verifies the new versions of a reprocess on the service's Spark, as `check` does (issue 31):
    no JVM in its process, the verification passes (a correct reprocess from T), the new versions serve."""
    started = service.cli("reprocess", "src_table_3", "--from", "2026-01-02", "--allow-partial-history")
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    report = service.child("promote")
    assert report["exit"] in (0, None), report
    assert not report["classic_context"] and report["java"] == [] and report["remote"], report
    statements = service.cli("statements")
    assert "src-table-3-v2" in statements.stdout and "int-table-2-v2" in statements.stdout, statements.stdout


def test_stopping_the_service_stops_its_connect_server(service: Service) -> None:
    port = service.status()["spark_connect_port"]
    assert _listening(port)
    assert stop(service.data_dir)
    assert not _listening(port) and service.status()["spark_connect_url"] is None
    assert not (service.data_dir / "spark_connect.json").exists()


# --- the child process ------------------------------------------------------------------------------


def _java_descendants() -> list[int]:
    """Pids of java processes started, directly or not, by this process."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parent = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                found.append(pid)
        todo += children.get(pid, [])
    return found


def _check_from_the_cli() -> dict[str, Any]:
    from shift_left_dagster.cli import app

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            app(["check", *TABLES, "--json"], standalone_mode=False)
        except SystemExit as exit_:  # a failing check exits 1; the verdicts still say which
            assert exit_.code in (0, 1, None), exit_.code
    text = out.getvalue()
    return {"outcomes": json.loads(text[text.index("["):])}


def _promote_from_the_cli() -> dict[str, Any]:
    from shift_left_dagster.cli import app

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            app(["promote"], standalone_mode=False)
            code: int | str | None = 0
        except SystemExit as exit_:
            code = exit_.code
    return {"exit": code, "output": out.getvalue()[-3000:]}


def _check_in_a_dagster_run() -> dict[str, Any]:
    from dagster import AssetSelection, materialize

    from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
    from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
    from shift_left_dagster.defs.resources import ConfluentFlinkResource

    result = materialize(
        build_flink_assets(FlinkProject(Path(os.environ["PIPELINES"]))),
        selection=AssetSelection.assets(*TABLES) | AssetSelection.checks_for_assets(*TABLES),
        raise_on_error=False,
        resources={"confluent": ConfluentFlinkResource(mode="local"), "checks": FlinkChecksResource(),
                   "spark": SparkResource()})
    return {"success": result.success,
            "materialized": [e.asset_key.path[-1] for e in result.get_asset_materialization_events() if e.asset_key],
            "checks": [{"table": e.asset_key.path[-1], "check": e.check_name, "passed": e.passed}
                       for e in result.get_asset_check_evaluations()]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["cli", "dagster", "promote"])
    report = {"cli": _check_from_the_cli, "dagster": _check_in_a_dagster_run,
              "promote": _promote_from_the_cli}[parser.parse_args().mode]()
    from pyspark import SparkContext
    from pyspark.sql.utils import is_remote

    report.update(classic_context=SparkContext._active_spark_context is not None,
                  remote="pyspark.sql.connect.session" in sys.modules, java=_java_descendants(),
                  connect_mode_after=is_remote())
    if parser.parse_args().mode == "dagster":  # the process can still have a classic Spark afterwards
        from shift_left_dagster.local.spark import get_spark

        report.update(classic_after=hasattr(get_spark(), "_jsc"))
    print(json.dumps(report))
