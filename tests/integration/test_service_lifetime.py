"""A real service process for folder B while folder A's service holds B's recorded port: B starts on a
free port and never sees A's statements; its Spark JVM ends with it (crash or stop) and keeps its scratch
files under B. Folder A is the in-process test service."""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shift_left_dagster.confluent.client import ConfluentClient, bind_to_data_dir
from shift_left_dagster.local import process
from shift_left_dagster.local.health import probe
from shift_left_dagster.local.lifetime import group_members
from shift_left_dagster.project.config import local_defaults
from tests.integration.load import files_outside
from tests.integration.support import SNAPSHOT, client_for, run, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "local", *args],
                          capture_output=True, text=True, timeout=180, check=False)


def wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def spark_jvm(pid: int) -> int | None:
    return next((m for m in group_members(pid) if "org.apache.spark" in command_line(m)), None)


def ready(url: str) -> bool:
    health = probe(url)
    return health is not None and health.ready


def test_b_starts_elsewhere_sees_only_its_statements_and_its_jvm_ends_with_it(local_service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder_a, folder_b = Path(local_service.data_dir).resolve(), (tmp_path / "project-b").resolve()
    folder_b.mkdir()
    a_name = unique("only-in-a")
    client_for(local_service.url).create_statement(a_name, "CREATE TABLE only_in_a (id INT)", stopped=True)
    # B last ran on the port A's service holds now.
    (folder_b / process.STATE_FILE).write_text(process.LocalServiceInfo(
        url=local_service.url, port=local_service.port, pid=999_999, data_dir=str(folder_b)).model_dump_json())

    started = cli("start", "--data-dir", str(folder_b), "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    try:
        assert info["port"] != local_service.port and str(folder_a) in started.stderr
        assert process.LocalServiceInfo.model_validate_json((folder_b / process.STATE_FILE).read_text()).port == \
            info["port"]  # the free port chosen is recorded
        wait_until(lambda: ready(info["url"]), 120, "B's engine")
        b_client = ConfluentClient.from_config(bind_to_data_dir(local_defaults(info["url"]), folder_b))
        b_name = unique("only-in-b")
        b_client.create_statement(b_name, "CREATE TABLE only_in_b (id INT)", stopped=True)
        assert [s.name for s in b_client.list_statements()] == [b_name]
        assert b_name not in {s.name for s in client_for(local_service.url).list_statements()}

        # Spark at work (a table written, a join and aggregate read back), then: no scratch file outside B.
        run(b_client, "b-ddl", "CREATE TABLE b_rows (id INT, k STRING) DISTRIBUTED INTO 2 BUCKETS")
        run(b_client, "b-insert", "INSERT INTO b_rows VALUES " + ", ".join(f"({i}, 'k{i % 7}')" for i in range(500)))
        run(b_client, "b-select", "SELECT r.k, COUNT(*) AS n FROM b_rows r JOIN b_rows s ON r.id = s.id GROUP BY r.k",
            properties=SNAPSHOT)
        assert len(b_client.statement_results("b-select")) == 7
        service = info["pid"]
        jvm = spark_jvm(service)
        assert jvm is not None, [command_line(m) for m in group_members(service)]
        assert f"-Djava.io.tmpdir={folder_b}/tmp" in command_line(jvm)
        assert files_outside(jvm, folder_b) == [] and files_outside(service, folder_b) == []
        assert not Path(f"/tmp/hsperfdata_{getpass.getuser()}/{jvm}").exists()

        os.kill(service, signal.SIGKILL)  # a crash: no Python code of the service runs
        wait_until(lambda: not group_members(service), 30, "the crashed service's JVM to end")

        restarted = json.loads(cli("start", "--data-dir", str(folder_b), "--json").stdout)
        assert restarted["pid"] != service and restarted["url"] == info["url"]
        wait_until(lambda: ready(restarted["url"]), 120, "B's restarted engine")
        assert spark_jvm(restarted["pid"]) is not None
        assert b_name in {s.name for s in b_client.list_statements()}
        stopped = cli("stop", "--data-dir", str(folder_b))
        assert stopped.stdout.strip() == "stopped"
        assert group_members(restarted["pid"]) == []  # `local stop` leaves no JVM behind
    finally:
        cli("stop", "--data-dir", str(folder_b))
