"""Which run read each input row of an outer interval join (local/interval_reads.py), for a statement
that has run thousands of times: each row's run and that run's watermark, expected from the recorded runs
in plain Python, at a number of runs where one CASE per run nested in the next overflowed Spark's
analyser (a few hundred runs of a long-lived statement)."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession

from shift_left_dagster.local.catalog import OFFSET, PARTITION
from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.interval_reads import with_runs
from shift_left_dagster.local.store import IntervalRead

pytestmark = pytest.mark.spark

RUNS = 5000
UID = "t-1"


def recorded_runs(rng: random.Random) -> list[IntervalRead]:
    """RUNS runs over two partitions: each begins where the last left off, some finding nothing new in a
    partition (the same start twice); the watermark before each rises."""
    starts, reads = [0, 0], []
    for run in range(RUNS):
        reads.append(IntervalRead(watermark=1_000 * run, starts={UID: {0: starts[0], 1: starts[1]}}))
        starts = [s + rng.choice([0, 1, 3]) for s in starts]
    return reads


def expected(reads: list[IntervalRead], partition: int, offset: int) -> tuple[int, int]:
    began = [i for i, read in enumerate(reads) if read.starts[UID][partition] <= offset]
    return (began[-1], reads[began[-1]].watermark) if began else (0, MIN_WATERMARK)


def test_each_row_gets_the_latest_run_that_began_at_or_before_it(spark: SparkSession) -> None:
    rng = random.Random(26)
    reads = recorded_runs(rng)
    ends = [reads[-1].starts[UID][p] + 2 for p in (0, 1)]
    rows = [(p, o) for p in (0, 1) for o in sorted(rng.sample(range(ends[p]), 300))] + [(1, 0), (0, ends[0])]
    frame = spark.createDataFrame([(p, o, f"v{o}") for p, o in rows], f"`{PARTITION}` INT, `{OFFSET}` BIGINT, v STRING")
    got = {(r[0], r[1]): (r[2], r[3], r[4]) for r in with_runs(frame, UID, 2, reads).collect()}
    assert got == {(p, o): (f"v{o}", *expected(reads, p, o)) for p, o in rows}
