"""Run latency on a warm local service (issue 29, build 2): what a user waits for one table.

On a copy of the sample project with its own local service (started, then warmed by one deployment
of TABLE), it times, as whole processes, alternately:

- `shift-left-dagster deploy TABLE`   (plan + statements, nothing to change once warm)
- `shift-left-dagster check TABLE`    (the asset checks from a terminal; target < 5 s)
- `dg launch --assets TABLE`          (a Dagster materialisation, checks included; target < 8 s)

and prints each one's median and worst. Run by hand: python bench/bench_run_latency.py [--table src_table_1]
[--repeat 3]. The service is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"check": 5.0, "dg launch": 8.0}


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="src_table_1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    shutil.copytree(ROOT / "flink_project", work / "flink_project",
                    ignore=shutil.ignore_patterns(".shift_left_dagster"))
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(ROOT / name, work / name)
    (work / "dagster_home").mkdir()
    env = {**{k: v for k, v in os.environ.items() if k not in ("PIPELINES", "CONFIG_FILE")},
           "DAGSTER_HOME": str(work / "dagster_home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cli = [sys.executable, "-m", "shift_left_dagster.cli"]
    dg = shutil.which("dg") or str(Path(sys.executable).parent / "dg")
    commands = {"deploy": [*cli, "deploy", args.table], "check": [*cli, "check", args.table],
                "dg launch": [dg, "launch", "--assets", args.table]}
    try:
        warm = timed([*cli, "local", "start"], work, env) + timed(commands["deploy"], work, env)
        print(f"service started and {args.table} deployed once: {warm:.1f} s (not counted)")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, command in commands.items():
                times[name].append(timed(command, work, env))
        print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for name, values in times.items():
            target = f" (target {TARGETS[name]:.0f} s)" if name in TARGETS else ""
            print(f"{name:10} median {statistics.median(values):6.2f} s  worst {max(values):6.2f} s{target}  "
                  f"runs: {', '.join(f'{v:.2f}' for v in values)}")
    finally:
        subprocess.run([*cli, "local", "stop"], cwd=work, env=env, capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
