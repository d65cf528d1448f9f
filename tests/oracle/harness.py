"""Both sides of the oracle on a corpus, and their verdicts; shared by the test and the benchmark.

Flink runs in its own process while the local service works on the same
cases, so the two overlap on the machine's cores.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.oracle.compare import Verdict, compare_all
from tests.oracle.corpus import Case
from tests.oracle.flink import run_flink
from tests.oracle.local import run_local
from tests.oracle.venv import REQUIRE_ENV, ready, venv_dir

# Cases the two engines do not agree on yet, each with the exact reason: case -> why. Each is an
# xfail(strict=True) in the test, so it fails the day the two agree (then take it out of this list).
KNOWN_DIFFERENCES: dict[str, str] = {
    "array_agg_order_after_update":
        "Flink's ARRAY_AGG retracts an updated row's element from its list and appends the new value "
        "(red: [cy, ax, bz]); the local engine recomputes the group over the table's current rows and "
        "lists them in key order ([ax, bz, cy]): the recomputed view carries no arrival order to sort by",
    "join_left_interval_pending":
        "a LEFT interval join emits an unmatched left row (p-2, FALSE) in the first run before the "
        "watermark passes p-2's interval end, then deletes it when the match arrives (D into an "
        "append sink); Flink emits the NULL-padded row only once the watermark passes the interval",
    "top_n_ties_two_runs":
        "ROW_NUMBER ... = 1 with tied ORDER BY values: Flink's Top-N keeps the row that arrived first "
        "(a later equal row does not displace it); the local recompute picks the latest tied row",
    "window_cascade_two_runs":
        "cascaded windows (HOP over a TUMBLE's window_time) with the input in two runs: the second "
        "run's HOP windows count only the hourly buckets fired in that run, not those of the first "
        "(Flink: 3 buckets / 4 hits in [23:00, 03:00), local 1 / 1)",
    "window_late_in_same_run":
        "the local watermark advances once per run, after its records (event_time.py: records read in "
        "one run are never late to each other); Flink (and the oracle, watermark per record) drops a "
        "row whose window already closed behind an earlier row of the same batch",
}


@dataclass
class OracleRun:
    verdicts: dict[str, Verdict]
    flink_seconds: float
    local_seconds: float
    compare_seconds: float


def require_pyflink() -> None:
    """Skip without the PyFlink venv (checked before the service and Spark start); fail when CI requires it."""
    if not ready():
        message = f"the PyFlink venv is absent ({venv_dir()}): python -m tests.oracle.venv --install"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set and {message}")
        pytest.skip(message)


def run_oracle(cases: list[Case], url: str, data_dir: Path, spark: SparkSession, *, each: bool = False) -> OracleRun:
    with ThreadPoolExecutor(max_workers=1) as pool:
        flink_future = pool.submit(_timed, lambda: run_flink(cases, each=each))
        local_started = time.monotonic()
        local = run_local(cases, url, data_dir, spark)
        local_seconds = time.monotonic() - local_started
        flink, flink_seconds = flink_future.result()
    began = time.monotonic()
    verdicts = compare_all({c.name: flink[c.name] for c in cases}, local, spark)
    return OracleRun(verdicts=verdicts, flink_seconds=flink_seconds, local_seconds=local_seconds,
                     compare_seconds=time.monotonic() - began)


def _timed(work):  # type: ignore[no-untyped-def]
    began = time.monotonic()
    result = work()
    return result, time.monotonic() - began
