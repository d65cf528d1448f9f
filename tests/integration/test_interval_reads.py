"""Which run read each input row of an outer interval join (local/interval_reads.py), for a statement
that has run thousands of times: each row's run and that run's watermark, expected from the recorded runs
in plain Python, at a number of runs where one CASE per run nested in the next overflowed Spark's
analyser (a few hundred runs of a long-lived statement). And the versions an event-time temporal join's
probe row sees (versions_as_read): those read by the run that emitted it, expected from Flink's rule in
plain Python."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import DELETE, INSERT, OFFSET, OP, PARTITION
from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.interval_reads import record_run, versions_as_read, with_runs
from shift_left_dagster.local.store import IntervalRead, RunState, SourceProgress
from shift_left_dagster.translation.spark import VALID_FROM, VALID_TO

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


def test_a_probe_row_sees_the_versions_read_by_the_run_that_emitted_it(spark: SparkSession) -> None:
    """Random version records (some deletes, many late for their run's watermark) of three keys over 30 runs;
    Flink's TemporalRowTimeJoinOperator emits a probe row at t in the first run whose watermark after reaches
    t, joined to the latest record at or before t (by time, then position) among those read by then, none when
    that is a delete. Exactly one version of the key is valid at t locally when that record is one, else none."""
    rng = random.Random(26)
    runs, minute = 30, 60_000
    marks = [MIN_WATERMARK] + sorted(rng.randrange(0, 300) * minute for _ in range(runs))  # before each run, then
    records, reads, offset = [], [], 0
    for run in range(runs):
        reads.append(IntervalRead(watermark=marks[run], starts={UID: {0: offset}}))
        for _ in range(rng.randrange(0, 4)):
            time = rng.randrange(0, 320) * minute
            records.append((0, offset, rng.choice("abc"), time, DELETE if rng.random() < 0.15 else INSERT, run))
            offset += 1
    frame = spark.createDataFrame([r[:5] for r in records],
                                  f"`{PARTITION}` INT, `{OFFSET}` BIGINT, k STRING, t BIGINT, `{OP}` INT")
    time = F.timestamp_millis(F.col("t"))
    valid = versions_as_read(UID, 1, reads)(frame, time, [F.col("k")]).where(F.col(f"`{OP}`") != DELETE)
    versions = [(r["k"], r[OFFSET], r["f"], r["u"]) for r in valid.select(
        "k", OFFSET, F.unix_millis(F.col(VALID_FROM)).alias("f"), F.unix_millis(F.col(VALID_TO)).alias("u")).collect()]
    probes = [(k, rng.randrange(0, 320) * minute) for k in "abc" for _ in range(40)]
    checked = 0
    for key, at in probes:
        emitted = next((run for run in range(runs) if marks[run + 1] >= at), None)  # (probes read before run 0)
        if emitted is None:
            continue
        seen = [r for r in records if r[2] == key and r[5] <= emitted and r[3] <= at]
        latest = max(seen, key=lambda r: (r[3], r[1]), default=None)
        expected = [latest[1]] if latest is not None and latest[4] != DELETE else []
        got = [o for k, o, f, u in versions if k == key and f is not None and f <= at and (u is None or at < u)]
        assert got == expected, (key, at, emitted)
        checked += 1
    assert checked > 60


def test_a_run_without_new_rows_of_the_query_is_not_recorded_and_no_row_changes(spark: SparkSession) -> None:
    """A statement set's query reading table a, beside another reading c: 200 runs, in some only c gets rows.
    Those runs are not recorded (after the first), and each row of a keeps its run's watermark and the order
    of its run among the others' (what the joins compare), as when every run was recorded."""
    rng = random.Random(27)
    state = RunState(sources={name: SourceProgress(table_uid=name, start={0: 0}, next={0: 0}) for name in "ac"})
    every: list[IntervalRead] = []
    for run in range(200):
        fresh = {"c"} | ({"a"} if run == 0 or rng.random() < 0.5 else set())
        every.append(IntervalRead(watermark=run * 1_000, starts={"a": dict(state.sources["a"].next)}))
        record_run(state, "0", run * 1_000, {"a"}, fresh)
        for name in fresh:
            state.sources[name].next = {0: state.sources[name].next[0] + rng.randrange(1, 4)}
    kept = state.interval_reads["0"]
    assert 60 < len(kept) < 140 and all(set(r.starts) == {"a"} for r in kept)
    rows = spark.createDataFrame([(0, o) for o in range(state.sources["a"].next[0])],
                                 f"`{PARTITION}` INT, `{OFFSET}` BIGINT")

    def runs_of(reads: list[IntervalRead]) -> list[tuple[int, int, int]]:
        return sorted((r[1], r[2], r[3]) for r in with_runs(rows, "a", 1, reads).collect())

    compacted, full = runs_of(kept), runs_of(every)
    assert [(o, m) for o, _r, m in compacted] == [(o, m) for o, _r, m in full]
    pairs = list(zip(compacted, full, strict=True))
    assert all((a[1] < b[1]) == (c[1] < d[1]) for a, c in pairs for b, d in pairs[::7])


def test_the_runs_are_a_local_relation_that_starts_no_python_worker(spark: SparkSession) -> None:
    """The runs' markers are rows Spark holds on the driver (an inline table): a Python list given to
    createDataFrame is a Python RDD, whose every query starts a Python worker and more Spark jobs (the
    sample's temporal join took two more jobs and ~0.2 s for them)."""
    reads = recorded_runs(random.Random(5))
    rows = spark.range(40).select((F.col("id") % 2).cast("int").alias(PARTITION), F.col("id").alias(OFFSET))
    plan = with_runs(rows, UID, 2, reads)._jdf.queryExecution().optimizedPlan().toString()
    assert "ExternalRDD" not in plan and "LogicalRDD" not in plan, plan
