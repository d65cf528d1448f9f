"""The issue 25 reproductions through the `shift-left-dagster` CLI, against a local service process:
kill -9 of a deployment that holds the lease, then deploy again (case 3); a deleted DML file refused,
the table's data intact (case 1)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shift_left_dagster.deploy.lease import DeploymentLease
from shift_left_dagster.local import process
from shift_left_dagster.local.settings import DATA_DIR_ENV
from tests.integration.support import PROJECT, client_for, quiesce, select

pytestmark = pytest.mark.service

INT2_DML = "pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"


class Cli:
    """The CLI in subprocesses, on a copy of the sample project and a service process of its own."""

    def __init__(self, root: Path, data_dir: Path):
        self.root, self.url = root, process.status(data_dir).url
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SL_", "CONFIG_FILE", "DAGSTER"))}
        self.env.update({DATA_DIR_ENV: str(data_dir), "PIPELINES": str(root / "pipelines")})

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "shift_left_dagster.cli", *args]

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def leases(self) -> list[str]:
        """Lease statements on the service, read directly (a CLI start costs seconds on a busy machine)."""
        return [s.name for s in client_for(self.url).list_statements() if "-lease-" in s.name]

    def deploy_taking_over(self, table: str, held: dict) -> None:
        """`deploy TABLE` plans within 30 s, saying in one line that it took the dead holder's lease over,
        deploys, and frees the lease."""
        started = time.monotonic()
        again = subprocess.Popen(self.command("deploy", table), cwd=self.root, env=self.env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert again.stdout is not None
        first = again.stdout.readline()
        planned_after = time.monotonic() - started
        _, err = again.communicate(timeout=600)
        assert again.returncode == 0, err
        assert first.startswith(f"deploy plan for {table}") and planned_after < 30, (first, planned_after)
        assert [line for line in err.splitlines() if "lease" in line] == [
            f"taking over the deployment lease {held['lease']} from {held['holder']} (dead)"], err
        assert not self.leases()

    def lease(self) -> dict:
        done = self.run("lease", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    base = tmp_path_factory.mktemp("cli-lease")
    shutil.copytree(PROJECT, base / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    process.start(base / "service", port=0)
    try:
        yield Cli(base / "project", base / "service")
    finally:
        process.stop(base / "service")


def test_a_killed_deployment_holding_the_lease_blocks_nothing(cli: Cli) -> None:
    killed = subprocess.Popen(cli.command("deploy", "int_table_2"), cwd=cli.root, env=cli.env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert killed.stdout is not None
    first = killed.stdout.readline()  # the plan is printed once planned, holding the lease
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert first.startswith("deploy plan for int_table_2"), first
    held = cli.lease()["holder"]
    assert held["holder"] == f"{socket.gethostname()}:{killed.pid}" and held["alive"] is False

    planned = cli.run("plan", "int_table_2", timeout=120)  # read-only: never takes nor waits for the lease
    assert planned.returncode == 0 and planned.stdout.startswith("deploy plan for int_table_2"), planned.stderr
    assert cli.lease()["holder"]["holder"] == held["holder"]

    cli.deploy_taking_over("int_table_2", held)


def test_a_killed_dagster_materialize_holding_the_lease_blocks_nothing(cli: Cli, tmp_path: Path) -> None:
    name = cli.lease()["lease"]
    client = client_for(cli.url)
    env = {**cli.env, "DAGSTER_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "shift_left_dagster.defs.definitions",
               "--select", "src_b"]
    run = subprocess.Popen(command, cwd=cli.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    deadline = time.monotonic() + 300
    while not [s for s in client.list_statements() if s.name == name] and run.poll() is None:
        assert time.monotonic() < deadline, "the run never took the lease"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the run and its step process, once it planned
    run.wait()
    held = cli.lease()["holder"]
    assert held["holder"].startswith("dagster-run:") and held["alive"] is False

    cli.deploy_taking_over("src_b", held)


def test_lease_shows_a_live_holder_and_break_clears_it(cli: Cli) -> None:
    name = cli.lease()["lease"]
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        DeploymentLease(client_for(cli.url), name, "dagster-run:elsewhere",
                        process=f"{socket.gethostname()}:{other.pid}").acquire()
        shown = cli.run("lease")
        assert shown.returncode == 0 and shown.stdout.startswith(f"dagster-run:elsewhere holds {name} since")
        assert "alive" in shown.stdout
        cleared = cli.run("lease", "--break")
        assert cleared.returncode == 0 and cleared.stdout.startswith("cleared: dagster-run:elsewhere holds")
        assert not cli.leases()
    finally:
        other.kill()
        other.wait()


def test_deploying_a_table_whose_dml_file_is_gone_is_refused_and_keeps_its_data(cli: Cli) -> None:
    client = client_for(cli.url)
    if not any(s.name == "local-p1-dml-int-table-2" for s in client.list_statements()):  # run alone
        assert cli.run("deploy", "int_table_2").returncode == 0
    quiesce(cli.url)
    before = select(client, "SELECT * FROM int_table_2")
    assert before
    (cli.root / INT2_DML).unlink()
    refused = cli.run("deploy", "int_table_2")
    assert refused.returncode != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("error: table 'int_table_2' is excluded: ") and f"{INT2_DML}:1: missing" in last
    assert "Traceback" not in refused.stderr and "done" not in refused.stdout
    quiesce(cli.url)
    assert select(client, "SELECT * FROM int_table_2") == before
    assert client.get_statement("local-p1-dml-int-table-2").phase == "RUNNING"
