"""What judging late rows record by record costs over a table of several partitions (local/late_rows.py).

Over one partition a run gives each record the watermark it met with one Spark window; over several it
replays the table's records run by run on the driver (`_arrivals`, up to REPLAYED_ROWS). Two tables hold
the same --history records (event times a minute apart per key, every 20th an hour older: late), one of
1 partition and one of 6 (hashed by key); a statement reads each (a TUMBLE window, or a ROWS-bounded
OVER). Each sample writes --batch more records into both tables and times the run that reads them, on
6 partitions against 1 partition, as ratios of --pairs alternating pairs (median and worst;
bench/figures.py).

Run: python bench/bench_late_rows.py [--history 10000 50000] [--batch 100] [--pairs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.figures import load_average, paired_ratio  # noqa: E402
from bench.local_scenarios import fast_client, load, timed  # noqa: E402
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from tests.integration.support import quiesce, run, unique  # noqa: E402

KEYS = 200
QUERIES = {
    "window": "SELECT k, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(ts), "
              "INTERVAL '10' MINUTE)) GROUP BY k, window_start, window_end",
    "bounded OVER": "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
                    "AS total FROM {t}",
}
SINKS = {"window": "k STRING, window_start TIMESTAMP(3), n BIGINT", "bounded OVER": "k STRING, v INT, total INT"}


def events(spark, first: int, count: int) -> DataFrame:  # type: ignore[no-untyped-def]
    """Records `first`..`first + count`: key id % KEYS, a minute apart per key, every 20th an hour older."""
    minute = (F.col("id") / KEYS).cast("long") * 60_000
    late = F.when(F.col("id") % 20 == 0, minute - 3_600_000).otherwise(minute)
    return spark.range(first, first + count).select(
        F.concat(F.lit("k"), (F.col("id") % KEYS).cast("string")).alias("k"),
        (F.col("id") % 100).cast("int").alias("v"),
        F.timestamp_millis(late + 1_772_352_000_000).alias("ts"))


class Pair:
    """Both tables, a statement of `kind` over each, and how many records each holds."""

    def __init__(self, service: InProcessService, kind: str, history: int) -> None:
        self.service, self.client = service, fast_client(service)
        run(self.client, unique("warm"), "SELECT 1")  # the engine has started its Spark session
        self.spark = service.engine.jobs.spark
        self.written = {1: history, 6: history}  # records per table
        self.tables: dict[int, str] = {}
        for partitions in (1, 6):
            table = unique(f"late_{partitions}").replace("-", "_")
            run(self.client, unique("ddl"), f"CREATE TABLE {table} (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR "
                                            f"ts AS ts - INTERVAL '1' SECOND) DISTRIBUTED BY HASH(k) INTO {partitions} "
                                            f"BUCKETS")
            load(service, table, events(self.spark, 0, history))
            sink = f"{table}_out"
            run(self.client, unique("ddl"), f"CREATE TABLE {sink} ({SINKS[kind]}) DISTRIBUTED INTO 1 BUCKETS")
            run(self.client, unique("dml"), f"INSERT INTO {sink} {QUERIES[kind].format(t=table)}", "RUNNING",
                timeout=1800)
            self.tables[partitions] = table
        quiesce(service.url)

    def next_run(self, partitions: int, batch: int) -> float:
        """Write `batch` more records into the table of `partitions`; seconds until the run read them."""
        load(self.service, self.tables[partitions], events(self.spark, self.written[partitions], batch))
        self.written[partitions] += batch
        return timed(lambda: quiesce(self.service.url))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    print(load_average())
    with tempfile.TemporaryDirectory() as scratch, InProcessService(Path(scratch) / "service") as service:
        for kind in QUERIES:
            for history in args.history:
                pair = Pair(service, kind, history)
                paired_ratio(f"{kind}: a run of {args.batch} records over {history}, 6 partitions / 1 partition",
                             partial(pair.next_run, 6, args.batch), partial(pair.next_run, 1, args.batch),
                             args.pairs, None)
    print(load_average())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
