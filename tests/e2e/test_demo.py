"""The first hour: from a fresh folder, `shift-left-dagster demo` deploys *fct_order into a persistent
Dagster instance that `dg dev` then shows with every deployed table materialised."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from tests.integration.support import PROJECT

pytestmark = pytest.mark.service

ROOT = PROJECT.parent
P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]


def test_demo_leaves_an_instance_showing_every_deployed_table(tmp_path: Path) -> None:
    shutil.copytree(PROJECT, tmp_path / "flink_project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "PIPELINES", "CONFIG_FILE")}
    cli = [sys.executable, "-m", "shift_left_dagster.cli"]
    try:
        # The run's steps are printed as they happen: each line is read while the demo is still running.
        with subprocess.Popen([*cli, "demo"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as demo:
            lines = [(line, demo.poll() is None) for line in demo.stdout or []]
            stderr = demo.stderr.read() if demo.stderr else ""
        stdout = "".join(line for line, _ in lines)
        assert demo.returncode == 0, stdout[-3000:] + stderr[-3000:]
        steps = [(line, live) for line, live in lines if line.strip().startswith("step ")]
        assert any("done: deploy fct_order" in line for line, _ in steps), stdout[-3000:]
        assert all(live for _, live in steps)  # printed while dg launch ran, not after it
        assert stdout.index("done: deploy fct_order") < stdout.index("statements of the deployment")
        home = tmp_path / ".shift_left_dagster" / "dagster_home"
        assert f"DAGSTER_HOME={home}" in stdout and "local stop" in stdout
        assert "local-p1-dml-fct-order" in stdout
        with DagsterInstance.from_config(str(home)) as instance:
            for table in P1:
                assert instance.get_latest_materialization_event(AssetKey(table)) is not None, table

        # The CLI runs the same deployment object against the same service.
        def cli_json(*args: str) -> object:
            done = subprocess.run([*cli, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            return json.loads(done.stdout) if "--json" in args else done.stdout

        plan = cli_json("plan", "--product", "p1", "--json")
        assert all(step["action"] == "skip" for step in plan["steps"]), plan  # type: ignore[index]
        forced = cli_json("deploy", "src_table_3", "--force")
        assert "recreate" in forced and "fct_order" in forced  # its children follow, from earliest
        report = cli_json("statements", "--json")
        rows = report["statements"]  # type: ignore[index]
        assert report["metrics_error"] is None  # type: ignore[index]
        assert {(r["table"], r["phase"]) for r in rows if r["kind"] == "dml"} >= {(t, "RUNNING") for t in P1}
        untouched = next(r for r in rows if r["table"] == "int_table_1" and r["kind"] == "dml")
        assert untouched["records_in"] > 0 and untouched["records_out"] > 0, untouched  # the Metrics API's counts
        table = cli_json("statements", "--product", "p1")
        assert "PENDING" in table.splitlines()[0] and "local-p1-dml-int-table-1" in table  # type: ignore[union-attr]
        dry = cli_json("undeploy", "fct_order", "--dry-run")
        assert "undeploy" in dry and "fct_order" in dry
    finally:
        subprocess.run([*cli, "local", "stop"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
