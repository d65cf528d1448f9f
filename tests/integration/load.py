"""Load helpers shared by the bounded load test and bench/bench_service_load.py.

Statements created under one label (``load-run``) so a run lists only its own,
results read by many threads at once, and what a process has open or mapped
outside its data folder.
"""

from __future__ import annotations

import os
import site
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import ResultRow

RUN_LABEL = "load-run"
T = TypeVar("T")
MB = 1024 * 1024
CONFLUENT_MAX_SQL_BYTES = 4 * MB  # "This query is too large to process (exceeds 4194304 bytes)"


@dataclass(frozen=True)
class Timings:
    """Wall time of a batch of operations and the latency of each."""

    wall: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall if self.wall else float("inf")

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    def describe(self, unit: str) -> str:
        return (f"{len(self.latencies)} {unit} in {self.wall:.2f} s ({self.rate:.0f}/s); latency p50 "
                f"{self.percentile(0.5) * 1000:.0f} ms, p95 {self.percentile(0.95) * 1000:.0f} ms, "
                f"max {max(self.latencies, default=0) * 1000:.0f} ms")


def timed_parallel(items: Sequence[T], action: Callable[[T], object], threads: int) -> tuple[Timings, list[object]]:
    """Run ``action`` on every item with ``threads`` workers; results in item order."""
    latencies: list[float] = [0.0] * len(items)

    def one(index: int) -> object:
        started = time.perf_counter()
        result = action(items[index])
        latencies[index] = time.perf_counter() - started
        return result

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(one, range(len(items))))
    return Timings(time.perf_counter() - started, latencies), results


def create_stopped(client: ConfluentClient, run_id: str, names: Sequence[str], threads: int) -> Timings:
    """Create ``names`` (stopped: the engine never runs them) labelled with ``run_id``."""
    sql = "CREATE TABLE load_never_run (id INT) DISTRIBUTED INTO 1 BUCKETS"
    timings, _ = timed_parallel(
        names, lambda name: client.create_statement(name, sql, stopped=True, labels={RUN_LABEL: run_id}), threads)
    return timings


def list_run(client: ConfluentClient, run_id: str) -> list[str]:
    """Every statement name of the run, over every page, in the order listed (duplicates kept)."""
    return [s.name for s in client.list_statements(label_selector={RUN_LABEL: run_id})]


def read_results(client: ConfluentClient, name: str, readers: int) -> tuple[Timings, list[list[ResultRow]]]:
    """``readers`` threads reading every result row of ``name`` at once."""
    timings, results = timed_parallel([name] * readers, lambda n: client.statement_results(n, timeout=120), readers)
    return timings, [list(rows) for rows in results]  # type: ignore[call-overload]


def installed_roots() -> tuple[str, ...]:
    """Where Python, its packages and Spark are installed: a venv under /tmp is common, and the jars and
    libraries a process maps from there are installed files, not scratch files it made."""
    places = [sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages(), site.getusersitepackages(),
              os.environ.get("SPARK_HOME", ""), os.environ.get("JAVA_HOME", "")]
    return tuple(sorted({f"{os.path.realpath(p)}/" for p in places if p}))


def files_outside(pid: int, folder: Path, roots: Sequence[str] = ("/tmp/", "/var/tmp/", "/dev/shm/")) -> list[str]:
    """Scratch files: files under ``roots`` that ``pid`` has open or mapped, not under ``folder`` and not
    installed (see installed_roots)."""
    paths: list[str] = []
    fd_dir = Path(f"/proc/{pid}/fd")
    for entry in fd_dir.iterdir() if fd_dir.exists() else []:
        try:
            paths.append(os.readlink(entry))
        except OSError:
            continue
    try:
        maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        maps = []
    paths += [parts[5] for parts in (line.split(maxsplit=5) for line in maps) if len(parts) == 6]
    kept = (f"{os.path.realpath(folder)}/", *installed_roots())
    cleaned = {p.removesuffix(" (deleted)") for p in paths}
    return sorted(p for p in cleaned if p.startswith(tuple(roots)) and not p.startswith(kept))


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0
