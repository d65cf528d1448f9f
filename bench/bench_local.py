"""Benchmark of the embedded local service (warm service, one SparkSession).

1. The whole sample project (p1, p2, c360: seeds, then each table's DDL and
   DML in dependency order) deployed over HTTP: time until every sink caught up,
   on a service just started, then on a warm one (a clean second service in the
   same process: its Spark JVM has run queries before, as a running service has);
   median, min and max of --tries tries each.
2. Throughput over 1 M input rows of a stateless statement (filter +
   projection) and a stateful one (join + aggregate), each next to the bare
   Spark query over the same parquet files in the same run, as ratios of
   --pairs pairs after a warm-up pair, which side first alternating (median and worst; bench/figures.py).
3. History: three new rows through a running GROUP BY aggregate into its upsert sink, over
   100 k and then 4 M rows of history: the median time until they are in the sink, and the ratio.
4. Table logs stay compacted: 1000 ticks of one record appended to a source
   and picked up by a stateless INSERT INTO ... SELECT; the batches and files
   source and sink hold after them, and the median tick of ticks 1-10 against
   ticks 991-1000.

With --profile: where the time of the sample project and of the stateful run goes instead
(bench/profile_local.py). With --parts, only those figures (e.g. `--parts sample-warm`: the warm
sample alone, to compare two commits in alternating processes).

Run: python bench/bench_local.py [--rows 1000000] [--pairs 7] [--tries 5] [--ticks 1000] [--profile]
     [--parts sample-fresh sample-warm throughput history ticks]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from bench import profile_local  # noqa: E402
from bench.figures import paired_ratio, repeated_time  # noqa: E402
from bench.local_scenarios import (  # noqa: E402
    Throughput,
    fast_client,
    load,
    sample_on_fresh_service,
    sample_on_warm_service,
    table_id,
    timed,
)
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from tests.integration.support import quiesce, run, unique  # noqa: E402

# issue 30: ratios to bare Spark over the same files; seconds for the sample project
TARGETS = {"stateless": 1.1, "stateful": 1.2, "sample_warm": 10.0, "sample_just_started": 15.0}
PARTS = ("sample-fresh", "sample-warm", "throughput", "history", "ticks")


def small_ticks(service: InProcessService, client, ticks: int) -> None:  # type: ignore[no-untyped-def]
    """One record appended per tick (as a producer would), each picked up by a run of a stateless statement."""
    run(client, unique("ddl"), "CREATE TABLE tick_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE tick_out (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tick"), "INSERT INTO tick_out SELECT id, UPPER(name) FROM tick_in WHERE id >= 0", "RUNNING")
    engine, spark = service.engine, service.engine.jobs.spark
    tables = [engine.store.table(table_id(n))
              for n in ("tick_in", "tick_out")]
    source = tables[0]
    assert source is not None
    seconds: list[float] = []
    merged: list[bool] = []  # whether compaction merged the source's batches during the tick
    for i in range(ticks):
        def tick(i: int = i) -> None:
            record = spark.createDataFrame([(i, f"n{i}")], "id BIGINT, name STRING")
            batch = engine.logs.write(source, record.withColumn("$rowtime", F.current_timestamp())
                                      .withColumn("$op", F.lit(0).cast("tinyint")), producer=None)
            assert batch is not None
            engine.store.append_batches([batch])
            quiesce(service.url)
        before = len(engine.store.batches(source.uid))
        seconds.append(timed(tick))
        merged.append(len(engine.store.batches(source.uid)) < before + 1)
    for table in tables:
        assert table is not None
        on_disk = sum(1 for f in (service.data_dir / "tables" / table.uid).rglob("*.parquet"))
        print(f"after {ticks} ticks {table.name}: {len(engine.store.batches(table.uid))} batches, {on_disk} files "
              f"(merged ones wait {engine.compaction.retention_seconds:.0f} s for readers before removal)")
    first, last = statistics.median(seconds[:10]), statistics.median(seconds[-10:])
    print(f"tick median: ticks 1-10 {first * 1000:.0f} ms, ticks {ticks - 9}-{ticks} {last * 1000:.0f} ms, "
          f"ratio {last / first:.2f}x")
    # what could move the last ticks: a merge among them, or slow ticks spread over the whole run (load)
    merging = [s for s, m in zip(seconds, merged, strict=True) if m]
    print(f"ticks with a merge: {len(merging)} (median {statistics.median(merging or [0]) * 1000:.0f} ms; "
          f"{sum(merged[:10])} of ticks 1-10, {sum(merged[-10:])} of the last 10); all ticks median "
          f"{statistics.median(seconds) * 1000:.0f} ms, p90 {sorted(seconds)[int(len(seconds) * 0.9)] * 1000:.0f} ms")


def history(service: InProcessService, client, sizes: tuple[int, ...] = (100_000, 4_000_000),  # type: ignore[no-untyped-def]
            repeat: int = 5, keys: int = 1000) -> None:
    """Three new raw rows (an INSERT over HTTP) until an aggregate's upsert sink holds them, with
    `sizes` rows of history in its source: the median over `repeat` tries, and the ratio between sizes."""
    engine = service.engine
    spark = engine.jobs.spark
    medians: list[float] = []
    for rows in sizes:
        source, sink = unique("hist_src").replace("-", "_"), unique("hist_agg").replace("-", "_")
        run(client, unique("ddl"), f"CREATE TABLE {source} (k STRING, v BIGINT) DISTRIBUTED INTO 2 BUCKETS")
        run(client, unique("ddl"), f"CREATE TABLE {sink} (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT "
                                   f"ENFORCED) DISTRIBUTED BY HASH(k) INTO 2 BUCKETS")
        load(service, source, spark.range(rows).select(
            F.concat(F.lit("k-"), (F.col("id") % keys).cast("string")).alias("k"), (F.col("id") % 100).alias("v")))
        run(client, unique("bench-agg"), f"INSERT INTO {sink} SELECT k, COUNT(*), SUM(v) FROM {source} GROUP BY k",
            "RUNNING", timeout=1800)
        quiesce(service.url)
        ids = [engine.store.table(table_id(n))
               for n in (source, sink)]
        assert ids[0] is not None and ids[1] is not None
        source_uid, table = ids[0].uid, ids[1]
        times: list[float] = []
        waits: list[float] = []  # of those, after the new rows were in the source: the aggregate's part
        for attempt in range(repeat):
            written = len(engine.store.batches(table.uid))
            offsets = sum(engine.store.end_offsets(source_uid).values())
            new = [f"new-{attempt}-{i}" for i in range(3)]
            started = time.perf_counter()
            client.create_statement(unique("bench-insert"), f"INSERT INTO {source} VALUES " +
                                    ", ".join(f"('{k}', {i + 1})" for i, k in enumerate(new)))
            arrived = None
            while len(engine.store.batches(table.uid)) == written:
                if arrived is None and sum(engine.store.end_offsets(source_uid).values()) > offsets:
                    arrived = time.perf_counter()
                time.sleep(0.005)
            times.append(time.perf_counter() - started)
            waits.append(time.perf_counter() - (arrived or started))
            held = {r["k"]: (r["n"], r["total"]) for r in engine.jobs.views.state(table).where(F.col("k").isin(new))
                    .collect()}
            assert held == {k: (1, i + 1) for i, k in enumerate(new)}, held
            quiesce(service.url)
        medians.append(statistics.median(times))
        print(f"history {rows:>9,} rows: 3 new rows in the aggregate's sink in {medians[-1]:.2f} s "
              f"(median of {repeat}; target < 1.5 s), {statistics.median(waits):.2f} s of it after they were "
              f"in the source (engine tick + the aggregate's run)")
    print(f"history {sizes[-1]:,} vs {sizes[0]:,} rows: {medians[-1] / medians[0]:.2f}x (target <= 1.2x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=7,
                        help="pairs of (ours, bare Spark) per ratio, after a warm-up pair")
    parser.add_argument("--tries", type=int, default=5, help="timings of the sample project per figure")
    parser.add_argument("--ticks", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="where the time goes instead (profile_local.py)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="only these figures")
    args = parser.parse_args()
    if args.profile:
        profile_local.main(["--rows", str(args.rows)])
        return
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    data = Path(tempfile.mkdtemp(prefix="bench-local-"))
    try:
        if "sample-fresh" in args.parts:
            repeated_time("sample project (24 tables, seeds + DDL + DML over HTTP) caught up, service just started",
                          lambda: sample_on_fresh_service(data), args.tries, TARGETS["sample_just_started"])
        if "sample-warm" in args.parts:
            repeated_time("sample project caught up, warm service", sample_on_warm_service(data), args.tries,
                          TARGETS["sample_warm"])
        print(f"load average {os.getloadavg()[0]:.2f}")
        if not {"throughput", "history", "ticks"} & set(args.parts):
            return
        with InProcessService(data / "service") as service:
            client = fast_client(service)
            if "throughput" in args.parts:
                throughput = Throughput(service, args.rows, data)
                print(f"loaded {args.rows:,} orders and 5,000 customers")
                for kind in ("stateless", "stateful"):
                    paired_ratio(f"{kind} {args.rows:,} rows, local service / bare Spark",
                                 lambda kind=kind: throughput.ours(kind), lambda kind=kind: throughput.bare(kind),
                                 args.pairs, TARGETS[kind])
                print(f"load average {os.getloadavg()[0]:.2f}")
            if "history" in args.parts:
                history(service, client)
            if "ticks" in args.parts:
                small_ticks(service, client, args.ticks)
            print(f"load average at end {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
