"""Whole-process times of the CLI a user waits for: --help, --version, the sample's inventory, and a
3000-table inventory cold (no analysis cache) and warm (the cache of a previous run).

Each round runs every command once, in turn (alternating), so a machine that slows down or speeds up weighs
on all of them alike; the median and the worst of the rounds are printed with the target the median should
meet, the median CPU seconds of the process and its workers (which a busy machine stretches least), and the
load average before and after (a busy machine's figures say so). First, `inventory --json` of each project
must print the same bytes cold and warm (and as the baseline's code, if given): else the bench stops.

    python bench/bench_cli.py [--tables 3000] [--rounds 7] [--baseline PATH]

`--baseline PATH` (a checkout of other code, e.g. `git worktree add /tmp/base main`) also runs each command
with PATH's code, alternating with ours in each round (its own analysis cache, so neither evicts the other's),
and prints the per-round ratios ours/baseline of wall and CPU time (median and worst): on a busy machine the
ratios mean more than the absolute times.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.figures import load_average, ratios, verdict  # noqa: E402

GENERATOR = ROOT / "tools" / "gen_synth_project.py"
CLI = [sys.executable, "-m", "shift_left_dagster.cli"]


def timed(command: list[str], before: Callable[[Path | None], None], code: Path = ROOT,
          cache: Path | None = None) -> tuple[float, float]:
    """(seconds from start to exit, CPU seconds) of one process running `code` (its output read and
    dropped); a failure stops the bench. `cache`: the analysis cache folder (None: the project's own),
    handed to `before`."""
    before(cache)
    environment = {k: v for k, v in os.environ.items() if k != "SHIFT_LEFT_DAGSTER_CACHE"}
    environment["PYTHONPATH"] = str(code)
    if cache is not None:
        environment["SHIFT_LEFT_DAGSTER_CACHE"] = str(cache)
    start, used = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, cwd=code, capture_output=True, text=True, env=environment)  # -m: cwd first
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - used
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return elapsed, cpu


def printed(command: list[str], code: Path, cache: Path) -> str:
    """What `command` prints with `code` and the analysis cache `cache` (kept as it is)."""
    environment = {**os.environ, "PYTHONPATH": str(code), "SHIFT_LEFT_DAGSTER_CACHE": str(cache)}
    done = subprocess.run(command, cwd=code, capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def check_outputs(command: list[str], out: Path, baseline: Path | None) -> str:
    """The figures mean nothing if the answers differ: `command` (inventory --json) prints the same bytes
    cold, warm (its kept report) and, with a baseline, as the baseline's code does."""
    fresh = out / "check-cache"
    shutil.rmtree(fresh, ignore_errors=True)
    outputs = {"cold": printed(command, ROOT, fresh / "ours"), "warm": printed(command, ROOT, fresh / "ours")}
    if baseline is not None:
        outputs["baseline"] = printed(command, baseline, fresh / "baseline")
    shutil.rmtree(fresh, ignore_errors=True)
    if len(set(outputs.values())) != 1:
        raise SystemExit(f"{' '.join(command[-3:])}: the outputs differ: {sorted(outputs)}")
    return f"{' '.join(command[-3:])}: the same {len(outputs['cold'])} bytes {', '.join(outputs)}"


def _children_cpu() -> float:
    """CPU seconds of the processes this one waited for (and theirs: a cold scan's workers): what a busy
    machine stretches least."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="bench/out/cli")
    parser.add_argument("--baseline", type=Path, help="a checkout of other code to compare with, in pairs")
    args = parser.parse_args()
    out = ROOT / args.out
    if not (out / "pipelines").is_dir():
        subprocess.run([sys.executable, str(GENERATOR), "--tables", str(args.tables), "--out", str(out)],
                       check=True, capture_output=True)
    big = out / "pipelines"
    cache = out / ".shift_left_dagster"  # the big project's analysis cache (beside pipelines/: project/inventory.py)

    def baseline_cache_of(command: list[str]) -> Path:
        """The baseline's cache, one per project (the cache file holds one project's analyses)."""
        return out / "baseline-cache" / Path(command[-1]).parent.name

    def nothing(_: Path | None) -> None:
        return None

    def drop_cache(folder: Path | None) -> None:
        shutil.rmtree(folder or cache, ignore_errors=True)

    sample = ROOT / "flink_project" / "pipelines"
    cases: list[tuple[str, list[str], Callable[[Path | None], None], float]] = [
        ("--help", [*CLI, "--help"], nothing, 0.5),
        ("--version", [*CLI, "--version"], nothing, 0.5),
        ("inventory sample", [*CLI, "inventory", str(sample)], nothing, 1.0),
        (f"inventory {args.tables} cold", [*CLI, "inventory", str(big)], drop_cache, 3.0),
        (f"inventory {args.tables} warm", [*CLI, "inventory", str(big)], nothing, 0.5),
    ]
    for project in (sample, big):
        print(check_outputs([*CLI, "inventory", "--json", str(project)], out, args.baseline))
    for _, command, before, _ in cases:  # warm-up: imports in the page cache, the caches written once
        timed(command, before)
        if args.baseline:
            timed(command, before, args.baseline, baseline_cache_of(command))
    print(f"before: {load_average()}")
    ours: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in cases}
    theirs: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in cases}
    for _ in range(args.rounds):
        for name, command, before, _ in cases:
            ours[name].append(timed(command, before))
            if args.baseline:
                theirs[name].append(timed(command, before, args.baseline, baseline_cache_of(command)))
    print(f"whole processes, {args.rounds} alternating rounds (median, worst); after: {load_average()}")
    for name, _, _, target in cases:
        times, cpu = [t for t, _ in ours[name]], [c for _, c in ours[name]]
        median, worst = statistics.median(times), max(times)
        print(f"{name:24} median {median:5.2f} s  worst {worst:5.2f} s  (CPU median {statistics.median(cpu):5.2f} s)  "
              f"{verdict(median, target)}")
        if args.baseline:
            print(f"{'':24} vs {args.baseline}: wall {ratios(times, [t for t, _ in theirs[name]])}; "
                  f"CPU {ratios(cpu, [c for _, c in theirs[name]])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
