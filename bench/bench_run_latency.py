"""Run latency on a warm local service (issue 29, build 2): what a user waits for one table.

On a copy of the sample project with its own local service (started, then warmed by one deployment
of TABLE and one check), it times, as whole processes, alternately:

- `shift-left-dagster deploy TABLE`   (plan + statements, nothing to change once warm)
- `shift-left-dagster check TABLE`    (the asset checks from a terminal, on the service's Spark through
                                       its Spark Connect server; target < 5 s)
- the same check with a Spark of its own (SHIFT_LEFT_SPARK_MASTER set: the JVM the checks started
                                       before the service offered its Spark; the baseline of a ratio)
- `dg launch --assets TABLE`          (a Dagster materialisation, checks included; target < 8 s)
- the same with a Spark of its own in the run   (its baseline)

and prints each one's median and worst, the per-pair ratios to the own-JVM baselines
(alternating pairs: robust to the machine's load), the load average, and where the time goes:
the check's phases measured in a process of its own (start and imports, connect: the Connect client
and its session, read: planning and resolving the sink files on the server, compute: the queries'
execution) and the Dagster run's phases from its event log (code loaded, step process started,
deploy, checks, exit). Run by hand: python bench/bench_run_latency.py [--table src_table_1] [--repeat 3].
The service is stopped at the end.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.figures import verdict  # noqa: E402

TARGETS = {"check": 5.0, "dg launch": 8.0}
OWN_JVM = {"SHIFT_LEFT_SPARK_MASTER": "local[*]"}


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}")
    return elapsed


def run_phases(dagster_home: Path, started: float, ended: float) -> dict[str, float]:
    """The newest run's phases from its event log (wall-clock timestamps; `started`/`ended`: the process's)."""
    from dagster import DagsterEventType, DagsterInstance

    os.environ["DAGSTER_HOME"] = str(dagster_home)
    with DagsterInstance.get() as instance:
        run = instance.get_runs(limit=1)[0]
        events = [e for e in instance.all_logs(run.run_id) if e.dagster_event is not None]
    first: dict[Any, float] = {}
    last: dict[Any, float] = {}
    for event in events:
        kind = event.dagster_event.event_type  # type: ignore[union-attr]
        first.setdefault(kind, event.timestamp)
        last[kind] = event.timestamp
    materialized = first[DagsterEventType.ASSET_MATERIALIZATION]
    checked = last.get(DagsterEventType.ASSET_CHECK_EVALUATION, materialized)
    return {"load code": first[DagsterEventType.RUN_START] - started,
            "start step process": first[DagsterEventType.STEP_START] - first[DagsterEventType.RUN_START],
            "deploy": materialized - first[DagsterEventType.STEP_START],
            "checks": checked - materialized,
            "exit": ended - checked}


def check_phases(table: str) -> dict[str, float]:
    """In this process (started by the bench in the project copy): one `check` of `table` as the CLI
    runs it, split into phases; RPC times say what the service's Spark spent reading and computing."""
    began = time.perf_counter()
    from pyspark.sql.connect.client import core  # the Connect client: pandas, pyarrow, grpc

    from shift_left_dagster.checks import ChecksSettings, SinkConfig, find_dml_statements, open_reader, run_checks
    from shift_left_dagster.checks.session import checks_session, end_session
    from shift_left_dagster.cli import _graph
    from shift_left_dagster.deploy.target import connect, local_data_dir, target_config

    spent: dict[str, float] = collections.defaultdict(float)
    for method, phase in (("_analyze", "read"), ("_execute_and_fetch", "compute"), ("_execute", "compute")):
        original = getattr(core.SparkConnectClient, method)

        def measured(*args: Any, _original: Callable[..., Any] = original, _phase: str = phase,
                     **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_phase] += time.perf_counter() - began

        setattr(core.SparkConnectClient, method, measured)
    imported = time.perf_counter()
    graph, target = _graph(None), target_config(None)
    client, data_dir = connect(target), local_data_dir(None, None)
    found = time.perf_counter()
    spark = checks_session(data_dir)
    connected = time.perf_counter()
    reader = open_reader(SinkConfig(data_dir=data_dir), spark)
    chosen = [graph.tables[table]]
    outcomes = run_checks(chosen, reader, find_dml_statements(client, chosen, target.env_name), ChecksSettings())
    reader.close()
    done = time.perf_counter()
    end_session(spark)
    assert all(o.passed for o in outcomes), [o.message for o in outcomes if not o.passed]
    return {"imports": imported - began, "project": found - imported, "connect": connected - found,
            "read": spent["read"], "compute": spent["compute"],
            "python": done - connected - spent["read"] - spent["compute"]}


def median_phases(samples: list[dict[str, float]]) -> str:
    return ", ".join(f"{k} {statistics.median(s[k] for s in samples):.2f}" for k in samples[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="src_table_1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check-phases", action="store_true", help=argparse.SUPPRESS)  # the probe, in the copy
    args = parser.parse_args()
    if args.check_phases:
        print(json.dumps(check_phases(args.table)))
        return
    work = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    shutil.copytree(ROOT / "flink_project", work / "flink_project",
                    ignore=shutil.ignore_patterns(".shift_left_dagster"))
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(ROOT / name, work / name)
    (work / "dagster_home").mkdir()
    env = {**{k: v for k, v in os.environ.items() if k not in ("PIPELINES", "CONFIG_FILE", *OWN_JVM)},
           "DAGSTER_HOME": str(work / "dagster_home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cli = [sys.executable, "-m", "shift_left_dagster.cli"]
    dg = shutil.which("dg") or str(Path(sys.executable).parent / "dg")
    commands = {"deploy": ([*cli, "deploy", args.table], env), "check": ([*cli, "check", args.table], env),
                "check, own JVM": ([*cli, "check", args.table], {**env, **OWN_JVM}),
                "dg launch": ([dg, "launch", "--assets", args.table], env),
                "dg launch, own JVM": ([dg, "launch", "--assets", args.table], {**env, **OWN_JVM})}
    probe = [sys.executable, str(Path(__file__).resolve()), "--check-phases", "--table", args.table]
    try:
        warm = timed([*cli, "local", "start"], work, env)
        status: dict[str, Any] = {}
        deadline = time.monotonic() + 300
        while not status.get("spark_connect_url") and time.monotonic() < deadline:  # its Spark starts after
            status = json.loads(subprocess.run([*cli, "local", "status", "--json"], cwd=work, env=env,
                                               capture_output=True, text=True, check=True).stdout)
            time.sleep(1)
        warm += timed(commands["deploy"][0], work, env) + timed(commands["check"][0], work, env)
        offered = "offered" if status.get("spark_connect_url") else "NOT offered (checks start their own JVM)"
        print(f"service started, {args.table} deployed and checked once: {warm:.1f} s (not counted); "
              f"Spark Connect {offered}")
        times: dict[str, list[float]] = {name: [] for name in commands}
        runs, checks = [], []
        for _ in range(args.repeat):
            for name, (command, command_env) in commands.items():
                started = time.time()
                times[name].append(timed(command, work, command_env))
                if name == "dg launch":
                    runs.append(run_phases(work / "dagster_home", started, time.time()))
            done = subprocess.run(probe, cwd=work, env=env, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise SystemExit(f"check phases failed: {(done.stdout + done.stderr)[-2000:]}")
            checks.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"load average (1, 5 min) at the end: {os.getloadavg()[0]:.2f}, {os.getloadavg()[1]:.2f} "
              f"on {os.cpu_count()} cores")
        for name, values in times.items():
            median = statistics.median(values)
            target = f"  {verdict(median, TARGETS[name])}" if name in TARGETS else ""
            print(f"{name:15} median {median:6.2f} s  worst {max(values):6.2f} s  "
                  f"runs: {', '.join(f'{v:.2f}' for v in values)}{target}")
        for name in ("check", "dg launch"):
            ratios = [a / b for a, b in zip(times[name], times[f"{name}, own JVM"], strict=True)]
            print(f"{name} / {name} with its own JVM, per alternating pair: median {statistics.median(ratios):.2f}x, "
                  f"worst {max(ratios):.2f}x")
        print(f"check phases (s, medians, in-process probe): {median_phases(checks)}")
        print(f"dg launch phases (s, medians, from the run's events): {median_phases(runs)}")
    finally:
        subprocess.run([*cli, "local", "stop"], cwd=work, env=env, capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
