"""The service as a background process: CLI start/status/stop, and a SIGKILL while statements run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from shift_left_dagster.local import process
from tests.integration.support import client_for, quiesce
from tests.integration.test_p1_pipeline import assert_p1_sinks, deploy_p1

pytestmark = pytest.mark.service


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "local", *args],
                          capture_output=True, text=True, timeout=180, check=False)


def test_kill_during_runs_then_restart_converges(tmp_path):  # type: ignore[no-untyped-def]
    data = str(tmp_path / "service")
    started = cli("start", "--data-dir", data, "--port", "0")
    assert started.returncode == 0, started.stderr
    info = json.loads(cli("status", "--data-dir", data, "--json").stdout)
    assert info["running"] and info["organization_id"] and info["environment_id"] == "env-local"
    again = cli("start", "--data-dir", data)  # idempotent: reports the running service
    assert again.returncode == 0 and str(info["pid"]) in again.stdout

    try:
        deploy_p1(client_for(info["url"]), "kill")  # statements RUNNING, the pipeline not caught up yet
        os.kill(info["pid"], signal.SIGKILL)
        while process.status(data).running:
            time.sleep(0.1)

        restarted = process.ensure_running(data)  # stale pid file: a new process on the same URL
        assert restarted.pid != info["pid"] and restarted.url == info["url"]
        assert quiesce(restarted.url)["quiet"]
        assert_p1_sinks(client_for(restarted.url))
    finally:
        stopped = cli("stop", "--data-dir", data)
    assert stopped.stdout.strip() == "stopped"
    assert json.loads(cli("status", "--data-dir", data, "--json").stdout)["running"] is False
    assert cli("stop", "--data-dir", data).stdout.strip() == "not running"
