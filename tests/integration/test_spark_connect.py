"""The asset checks on a Spark Connect server: `SparkResource(remote="sc://...")` reads the sink data
through a Connect session, no JVM of its own in the run's process.

The fixture starts pyspark's bundled Connect server (`spark-submit --class
...SparkConnectServer`, the spark-connect jar ships in pyspark's jars) on a
free loopback port. A Python process holds either a classic SparkContext or
Connect sessions, never both (pyspark refuses `spark.remote` once a context
exists, and a Connect session switches the process's functions to Connect),
so the run happens in a child process of its own, as a Dagster run worker
would: it deploys two tables to this module's local service (which runs on
the test session's classic Spark) and evaluates their checks over Connect.
The child prints its results as JSON.

Skipped when pyspark's Connect client dependencies (pyspark[connect]) are not
installed, unless SL_REQUIRE_SPARK_CONNECT is set (CI sets it): then it fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shift_left_dagster.local.lifetime import set_parent_death_signal
from shift_left_dagster.local.process import InProcessService

pytestmark = [pytest.mark.spark, pytest.mark.service]

TABLES = ["src_table_3", "int_table_2"]
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
CLIENT_MODULES = ("pandas", "pyarrow", "grpc", "grpc_status", "google.protobuf", "zstandard")


def _missing_client_modules() -> list[str]:
    """The Connect client's modules (pyspark[connect]) that cannot be imported here."""
    missing = []
    for module in CLIENT_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a missing parent package (google)
            found = False
        if not found:
            missing.append(module)
    return missing


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """sc://127.0.0.1:PORT of a Spark Connect server (local[2], UTC), stopped with the module."""
    missing = _missing_client_modules()
    if missing:
        if os.environ.get("SL_REQUIRE_SPARK_CONNECT"):
            pytest.fail(f"SL_REQUIRE_SPARK_CONNECT is set and pyspark[connect] modules are missing: {missing}")
        pytest.skip(f"pyspark[connect] client modules missing: {missing}")
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("spark-connect")
    port = _free_port()
    jvm = f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Djava.io.tmpdir={work}"
    command = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_CLASS, "--master", "local[2]",
               "--driver-memory", "1g", "--driver-java-options", jvm]
    for key, value in {"spark.connect.grpc.binding.address": "127.0.0.1",
                       "spark.connect.grpc.binding.port": str(port),
                       "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                       "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
                       "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                       "spark.sql.warehouse.dir": str(work / "warehouse")}.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOCAL_DIRS": str(work), "SPARK_LOG_DIR": str(work)}
    env.pop("SPARK_REMOTE", None)
    log = work / "connect-server.log"
    with log.open("wb") as out:  # the JVM gets SIGTERM if this process dies first (parent-death signal)
        server = subprocess.Popen(command, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True,
                                  preexec_fn=set_parent_death_signal)
    try:
        yield f"sc://127.0.0.1:{_started_port(server, log)}"
    finally:
        _stop(server)


def _started_port(server: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> int:
    """The port the server's log says it started on (Spark takes the next one if ours was taken meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace")
        started = re.search(r"Spark Connect server started at: [^\s]*:(\d+)", text)
        if started and _listening(int(started.group(1))):
            return int(started.group(1))
        if server.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"Spark Connect server did not start (exit {server.returncode}):\n{text[-3000:]}")
        time.sleep(0.5)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group (the JVM), SIGKILL it if still there after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        if server.poll() is not None:
            return
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """A service of this module's own (its tables must not meet other tests'), on the shared Spark."""
    with InProcessService(tmp_path_factory.mktemp("connect-checks"), spark_factory=lambda: spark) as running:
        yield running


def _run_child(service: InProcessService, remote: str, *extra: str) -> dict[str, Any]:
    """Materialise TABLES with their checks in a child process whose Spark is the Connect session."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "SPARK_REMOTE")}
    child = subprocess.run(
        [sys.executable, "-m", "tests.integration.test_spark_connect", "--url", service.url,
         "--data-dir", str(service.data_dir), "--remote", remote, *extra],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    report: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["remote_session"] and not report["classic_context"], report  # checks read through Connect
    assert report["success"], report
    assert sorted(report["materialized"]) == sorted(TABLES)
    return report


def _passed_with_rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The checks by (table, check), all passed, the row-comparing ones over at least one row."""
    checks = {(c["table"], c["check"]): c for c in report["checks"]}
    assert {("int_table_2", "reconciled"), ("int_table_2", "unique_primary_key"),
            ("src_table_3", "reconciled")} <= set(checks), sorted(checks)
    assert all(c["passed"] for c in checks.values()), {k: c["description"] for k, c in checks.items()}
    for key in (("int_table_2", "reconciled"), ("src_table_3", "reconciled"), ("int_table_2", "unique_primary_key")):
        assert (checks[key]["compared_rows"] or 0) > 0, checks[key]
    assert checks[("int_table_2", "reconciled")]["missing"] == 0
    return checks


def test_checks_run_over_spark_connect(service: InProcessService, connect_url: str) -> None:
    """Deploy, then the checks read the local service's storage (its parquet logs, sqlite progress)."""
    _passed_with_rows(_run_child(service, connect_url))


def test_checks_of_landed_files_over_spark_connect(service: InProcessService, connect_url: str, spark,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path) -> None:
    """The Confluent Cloud shape: tables landed as parquet files, reconciled over Connect (re-run: no deploy)."""
    from shift_left_dagster.local.reader import LocalData

    _run_child(service, connect_url)  # deployed (a no-op when the test above ran first)
    data = LocalData(service.data_dir, spark)
    try:
        for table in ("raw_payments", *TABLES):
            data.current_rows(data.table(table)).write.parquet(str(tmp_path / table))
    finally:
        data.close()
    report = _run_child(service, connect_url, "--files", str(tmp_path / "{table}"))
    checks = _passed_with_rows(report)
    assert checks[("src_table_3", "reconciled")]["compared_rows"] == spark.read.parquet(
        str(tmp_path / "src_table_3")).count()


def _materialize_over_connect(url: str, data_dir: str, remote: str, files: str | None) -> dict[str, Any]:
    """In the child: deploy TABLES with their checks, the checks' Spark being the Connect session, reading
    the local service's storage, or with `files` the parquet files at that path template."""
    from dagster import AssetSelection, materialize
    from pyspark import SparkContext
    from pyspark.sql.utils import is_remote

    from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
    from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
    from shift_left_dagster.defs.resources import ConfluentFlinkResource
    from tests.integration.support import PROJECT

    result = materialize(
        build_flink_assets(FlinkProject(PROJECT / "pipelines")),
        selection=AssetSelection.assets(*TABLES) | AssetSelection.checks_for_assets(*TABLES),
        raise_on_error=False,
        resources={"confluent": ConfluentFlinkResource(mode="local", local_url=url, local_data_dir=data_dir),
                   "checks": FlinkChecksResource(sink="files", path_template=files) if files else FlinkChecksResource(),
                   "spark": SparkResource(remote=remote)})

    def value(metadata: Any, key: str) -> Any:
        return metadata[key].value if key in metadata else None

    return {
        "success": result.success,
        "remote_session": is_remote(),
        "classic_context": SparkContext._active_spark_context is not None,
        "materialized": [e.asset_key.path[-1] for e in result.get_asset_materialization_events() if e.asset_key],
        "checks": [{"table": e.asset_key.path[-1], "check": e.check_name, "passed": e.passed,
                    "description": e.description, "compared_rows": value(e.metadata, "compared_rows"),
                    "missing": value(e.metadata, "missing")} for e in result.get_asset_check_evaluations()],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--remote", required=True)
    parser.add_argument("--files", default=None, help="path template of landed tables, with {table}")
    args = parser.parse_args()
    print(json.dumps(_materialize_over_connect(args.url, args.data_dir, args.remote, args.files)))
