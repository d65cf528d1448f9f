"""What an event-time temporal join pays for its emitted rows being final (local/interval_reads.py).

Each run the versioned table's view is recomputed; with the recorded runs each version record also gets
the watermark before the run that read it (with_runs: the runs' starts sorted among the records) and its
validity from that mark (versions_as_read: a running MIN over the key's later records instead of a LEAD).
Over --rows version records of --keys keys in 4 partitions, read in --runs runs: that validity against the
LEAD alone, both counted to the end (a Spark job each), as ratios of --pairs alternating pairs (median and
worst; bench/figures.py), at the given numbers of runs. Then the runs' markers as the engine builds them
(an inline VALUES table the driver holds: spark.integer_rows) against createDataFrame of the same Python list
(a Python RDD, as before perf6), in a sample-sized query (200 rows, 10 runs): the fixed cost of each run.

Run: python bench/bench_temporal_reads.py [--rows 1000000] [--keys 1000] [--runs 10 1000] [--pairs 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import DataFrame, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.figures import load_average, paired_ratio  # noqa: E402
from shift_left_dagster.local.catalog import OFFSET, PARTITION  # noqa: E402
from shift_left_dagster.local.interval_reads import versions_as_read  # noqa: E402
from shift_left_dagster.local.spark import get_spark, integer_rows  # noqa: E402
from shift_left_dagster.local.store import IntervalRead  # noqa: E402
from shift_left_dagster.translation.spark import VALID_FROM, VALID_TO  # noqa: E402

UID, PARTITIONS = "versions-1", 4


def records(rows: int, keys: int) -> DataFrame:
    """Version records in 4 partitions: a minute apart, every 50th an hour older (late for its run)."""
    spark = get_spark()
    frame = spark.range(rows).select(
        (F.col("id") % PARTITIONS).cast("int").alias(PARTITION), (F.col("id") / PARTITIONS).cast("long").alias(OFFSET),
        (F.col("id") % keys).cast("string").alias("k"),
        F.when(F.col("id") % 50 == 0, F.col("id") * 60_000 - 3_600_000).otherwise(F.col("id") * 60_000).alias("t"))
    return frame.cache()


def runs(rows: int, count: int) -> list[IntervalRead]:
    """`count` runs reading the records in equal parts, the watermark before each the last time read."""
    per = rows // PARTITIONS // count
    return [IntervalRead(watermark=run * per * PARTITIONS * 60_000 - 1,
                         starts={UID: {p: run * per for p in range(PARTITIONS)}}) for run in range(count)]


def timed(frame: DataFrame) -> float:
    began = time.monotonic()
    frame.select(F.sum(F.unix_millis(F.coalesce(F.col(VALID_TO), F.col(VALID_FROM))))).collect()
    return time.monotonic() - began


def markers_query(as_python_list: bool) -> float:
    """A small query over 200 records and the markers of 10 runs in 2 partitions (a sample-sized run)."""
    spark = get_spark()
    markers = [(p, run * 10, run, run * 1000) for p in range(2) for run in range(10)]
    began = time.monotonic()
    built = spark.createDataFrame(markers, f"`{PARTITION}` INT, `{OFFSET}` BIGINT, r INT, m BIGINT") \
        if as_python_list else integer_rows(spark, markers, [(PARTITION, "INT"), (OFFSET, "BIGINT"), ("r", "INT"),
                                                             ("m", "BIGINT")])
    rows = spark.range(200).select((F.col("id") % 2).cast("int").alias(PARTITION), F.col("id").alias(OFFSET))
    rows.unionByName(built, allowMissingColumns=True).groupBy(PARTITION).agg(F.max("r")).collect()
    return time.monotonic() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--runs", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    print(load_average())
    versions = records(args.rows, args.keys)
    versions.count()
    time_ = F.timestamp_millis(F.col("t"))
    keys = [F.col("k")]
    order = Window.partitionBy(*keys).orderBy(time_, F.col(PARTITION), F.col(OFFSET))
    plain = versions.withColumn(VALID_FROM, time_).withColumn(VALID_TO, F.lead(time_).over(order))
    for count in args.runs:
        as_read = versions_as_read(UID, PARTITIONS, runs(args.rows, count))(versions, time_, keys)
        paired_ratio(f"versions as read ({count} runs) / plain LEAD, {args.rows} records",
                     partial(timed, as_read), partial(timed, plain), args.pairs, None)
    markers_query(True), markers_query(False)  # (both planned once before)
    paired_ratio("markers as an inline VALUES table / as createDataFrame of a Python list, 10 runs",
                 partial(markers_query, False), partial(markers_query, True), max(args.pairs, 11), None)
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
