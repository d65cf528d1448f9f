"""What an event-time temporal join pays for its emitted rows being final (local/interval_reads.py).

Each run the versioned table's view is recomputed; with the recorded runs each version record also gets
the watermark before the run that read it (with_runs: the runs' starts sorted among the records) and its
validity from that mark (versions_as_read: a running MIN over the key's later records instead of a LEAD).
Over --rows version records of --keys keys in 4 partitions, read in --runs runs: that validity against the
LEAD alone, both counted to the end (a Spark job each), as ratios of --pairs alternating pairs (median and
worst; bench/figures.py), at the given numbers of runs.

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
from shift_left_dagster.local.spark import get_spark  # noqa: E402
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
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
