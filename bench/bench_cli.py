"""Whole-process times of the CLI a user waits for: --help, --version, the sample's inventory, and a
3000-table inventory cold (no analysis cache) and warm (the cache of a previous run).

Each round runs every command once, in turn (alternating), so a machine that slows down or speeds up weighs
on all of them alike; the median and the worst of the rounds are printed with the target the median should
meet, and the load average before and after (a busy machine's figures say so).

    python bench/bench_cli.py [--tables 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.figures import load_average, verdict  # noqa: E402

GENERATOR = ROOT / "tools" / "gen_synth_project.py"
CLI = [sys.executable, "-m", "shift_left_dagster.cli"]


def timed(command: list[str], before: Callable[[], None]) -> float:
    """Seconds from start to exit of one process (its output read and dropped); a failure stops the bench."""
    before()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items() if k != "SHIFT_LEFT_DAGSTER_CACHE"},
                               "PYTHONPATH": str(ROOT)})
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="bench/out/cli")
    args = parser.parse_args()
    out = ROOT / args.out
    if not (out / "pipelines").is_dir():
        subprocess.run([sys.executable, str(GENERATOR), "--tables", str(args.tables), "--out", str(out)],
                       check=True, capture_output=True)
    big = out / "pipelines"
    cache = out / ".shift_left_dagster"  # the big project's analysis cache (beside pipelines/: project/inventory.py)

    def nothing() -> None:
        return None

    def drop_cache() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    sample = ROOT / "flink_project" / "pipelines"
    cases: list[tuple[str, list[str], Callable[[], None], float]] = [
        ("--help", [*CLI, "--help"], nothing, 0.5),
        ("--version", [*CLI, "--version"], nothing, 0.5),
        ("inventory sample", [*CLI, "inventory", str(sample)], nothing, 1.0),
        (f"inventory {args.tables} cold", [*CLI, "inventory", str(big)], drop_cache, 3.0),
        (f"inventory {args.tables} warm", [*CLI, "inventory", str(big)], nothing, 0.5),
    ]
    for _, command, before, _ in cases:  # warm-up: imports in the page cache, the caches written once
        timed(command, before)
    print(f"before: {load_average()}")
    times: dict[str, list[float]] = {name: [] for name, *_ in cases}
    for _ in range(args.rounds):
        for name, command, before, _ in cases:
            times[name].append(timed(command, before))
    print(f"whole processes, {args.rounds} alternating rounds (median, worst); after: {load_average()}")
    for name, _, _, target in cases:
        median, worst = statistics.median(times[name]), max(times[name])
        print(f"{name:24} median {median:5.2f} s  worst {worst:5.2f} s  {verdict(median, target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
