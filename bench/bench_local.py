"""Benchmark of the embedded local service (warm service, one SparkSession).

1. The whole sample project (p1, p2, c360: seeds, then each table's DDL and
   DML in dependency order) deployed over HTTP: time until every sink caught up,
   on a service just started, then on a warm one (a clean second service in the
   same process: its Spark JVM has run queries before, as a running service has);
   median, min and max of --tries tries each.
2. Throughput over 1 M input rows of a stateless statement (filter +
   projection) and a stateful one (join + aggregate), each next to the bare
   Spark query over the same parquet files in the same run, as ratios of
   --pairs alternating pairs (median and worst; bench/figures.py).
3. History: three new rows through a running GROUP BY aggregate into its upsert sink, over
   100 k and then 4 M rows of history: the median time until they are in the sink, and the ratio.
4. Table logs stay compacted: 1000 ticks of one record appended to a source
   and picked up by a stateless INSERT INTO ... SELECT; the batches and files
   source and sink hold after them, and the median tick of ticks 1-10 against
   ticks 991-1000.

Run: python bench/bench_local.py [--rows 1000000] [--pairs 5] [--tries 5] [--ticks 1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from bench.figures import paired_ratio, repeated_time  # noqa: E402
from shift_left_dagster.local.catalog import TableId  # noqa: E402
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.settings import IDENTITY  # noqa: E402
from tests.integration.support import client_for, pipeline_order, quiesce, run, seed_statements, unique  # noqa: E402

SINKS = ("fct_order", "v_p", "dim_c360_users", "fct_c360_purchase", "fct_c360_item_sales", "fct_c360_hourly_activity")
# issue 30: ratios to bare Spark over the same files; seconds for the sample project
TARGETS = {"stateless": 1.1, "stateful": 1.2, "sample_warm": 10.0, "sample_just_started": 15.0}
STATELESS = ("SELECT order_id, customer_id, UPPER(TRIM(status)) AS status, "
             "CAST(quantity * price AS DECIMAL(12, 2)) AS amount FROM {orders} WHERE quantity > 0")
STATEFUL = ("SELECT c.segment, COUNT(*) AS orders, CAST(SUM(o.quantity * o.price) AS DECIMAL(18, 2)) AS revenue "
            "FROM {orders} AS o JOIN {customers} AS c ON o.customer_id = c.customer_id GROUP BY c.segment")


def deploy_project(client) -> int:  # type: ignore[no-untyped-def]
    count = 0
    for seed in sorted((ROOT / "flink_project" / "seeds").glob("*.sql")):
        for sql in seed_statements(seed.stem):
            run(client, unique("bench-seed"), sql)
            count += 1
    deployed: set[str] = set()
    for sink in SINKS:
        for table, ddl, dml in pipeline_order(sink):
            if table not in deployed:
                deployed.add(table)
                run(client, unique("bench-ddl"), ddl)
                run(client, unique("bench-dml"), dml, "RUNNING", "COMPLETED")
                count += 2
    return count


def load(service: InProcessService, table: str, frame) -> list[str]:  # type: ignore[no-untyped-def]
    """Bulk-write rows straight into a table's log (one batch); return its parquet files."""
    engine = service.engine
    definition = engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                            name=table))
    assert definition is not None
    batch = engine.logs.write(definition, frame.withColumn("$rowtime", F.current_timestamp())
                              .withColumn("$op", F.lit(0).cast("tinyint")), producer=None)
    assert batch is not None
    engine.store.append_batches([batch])
    return [str(service.data_dir / f) for b in engine.store.batches(definition.uid) for f in b.files]


def small_ticks(service: InProcessService, client, ticks: int) -> None:  # type: ignore[no-untyped-def]
    """One record appended per tick (as a producer would), each picked up by a run of a stateless statement."""
    run(client, unique("ddl"), "CREATE TABLE tick_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE tick_out (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tick"), "INSERT INTO tick_out SELECT id, UPPER(name) FROM tick_in WHERE id >= 0", "RUNNING")
    engine, spark = service.engine, service.engine.jobs.spark
    tables = [engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=n))
              for n in ("tick_in", "tick_out")]
    source = tables[0]
    assert source is not None
    seconds: list[float] = []
    for i in range(ticks):
        def tick(i: int = i) -> None:
            record = spark.createDataFrame([(i, f"n{i}")], "id BIGINT, name STRING")
            batch = engine.logs.write(source, record.withColumn("$rowtime", F.current_timestamp())
                                      .withColumn("$op", F.lit(0).cast("tinyint")), producer=None)
            assert batch is not None
            engine.store.append_batches([batch])
            quiesce(service.url)
        seconds.append(timed(tick))
    for table in tables:
        assert table is not None
        on_disk = sum(1 for f in (service.data_dir / "tables" / table.uid).rglob("*.parquet"))
        print(f"after {ticks} ticks {table.name}: {len(engine.store.batches(table.uid))} batches, {on_disk} files "
              f"(merged ones wait {engine.compaction.retention_seconds:.0f} s for readers before removal)")
    first, last = statistics.median(seconds[:10]), statistics.median(seconds[-10:])
    print(f"tick median: ticks 1-10 {first * 1000:.0f} ms, ticks {ticks - 9}-{ticks} {last * 1000:.0f} ms, "
          f"ratio {last / first:.2f}x")


def timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


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
        ids = [engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=n))
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
    parser.add_argument("--pairs", type=int, default=5, help="alternating (ours, bare Spark) pairs per ratio")
    parser.add_argument("--tries", type=int, default=5, help="timings of the sample project per figure")
    parser.add_argument("--ticks", type=int, default=1000)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-local-"))
    try:
        def just_started() -> float:
            """A new service (its own data folder, this process's JVM), the sample deployed at once."""
            with InProcessService(data / unique("fresh")) as fresh:
                client = client_for(fresh.url)
                client.settings.poll.initial = client.settings.poll.step = 0.05  # time the service, not polling
                run(client, unique("warm"), "SELECT 1")  # the service answers
                return timed(lambda: (deploy_project(client), quiesce(fresh.url)))

        def warm() -> float:
            """A service that already ran the sample once, redeploying it into a clean data folder of its own."""
            with InProcessService(data / unique("warm")) as service:
                client = client_for(service.url)
                client.settings.poll.initial = client.settings.poll.step = 0.05
                deploy_project(client)
                quiesce(service.url)
            with InProcessService(data / unique("warm")) as service:
                client = client_for(service.url)
                client.settings.poll.initial = client.settings.poll.step = 0.05
                run(client, unique("warm"), "SELECT 1")
                return timed(lambda: (deploy_project(client), quiesce(service.url)))

        repeated_time("sample project (24 tables, seeds + DDL + DML over HTTP) caught up, service just started",
                      just_started, args.tries, TARGETS["sample_just_started"])
        repeated_time("sample project caught up, warm service", warm, args.tries, TARGETS["sample_warm"])
        with InProcessService(data / "service") as service:
            client = client_for(service.url)
            client.settings.poll.initial = client.settings.poll.step = 0.05
            run(client, unique("warm"), "SELECT 1")
            spark = service.engine.jobs.spark

            run(client, unique("ddl"), "CREATE TABLE bench_orders (order_id STRING, customer_id STRING, "
                                       "quantity INT, price DECIMAL(10, 2), status STRING) DISTRIBUTED INTO 2 BUCKETS")
            run(client, unique("ddl"), "CREATE TABLE bench_customers (customer_id STRING, segment STRING, "
                                       "PRIMARY KEY (customer_id) NOT ENFORCED) DISTRIBUTED BY HASH(customer_id) "
                                       "INTO 2 BUCKETS")
            orders = load(service, "bench_orders", spark.range(args.rows).select(
                F.concat(F.lit("ord-"), F.col("id").cast("string")).alias("order_id"),
                F.concat(F.lit("c-"), (F.col("id") % 5000).cast("string")).alias("customer_id"),
                (F.col("id") % 7).cast("int").alias("quantity"),
                ((F.col("id") % 10000) / 100).cast("decimal(10,2)").alias("price"),
                F.when(F.col("id") % 3 == 0, F.lit(" paid ")).otherwise(F.lit("created")).alias("status")))
            customers = load(service, "bench_customers", spark.range(5000).select(
                F.concat(F.lit("c-"), F.col("id").cast("string")).alias("customer_id"),
                F.concat(F.lit("seg-"), (F.col("id") % 10).cast("string")).alias("segment")))
            print(f"loaded {args.rows:,} orders and 5,000 customers")

            def ours(kind: str, columns: str, query: str) -> float:
                sink = unique(f"bench_{kind}").replace("-", "_")
                run(client, unique("ddl"), f"CREATE TABLE {sink} ({columns}) DISTRIBUTED INTO 2 BUCKETS")
                return timed(lambda: (run(client, unique("bench-run"), f"INSERT INTO {sink} {query}", "RUNNING",
                                          timeout=1800), quiesce(service.url)))

            def bare(query: str) -> float:
                spark.read.parquet(*orders).createOrReplaceTempView("bare_orders")
                spark.read.parquet(*customers).createOrReplaceTempView("bare_customers")
                out = data / f"bare-{time.monotonic_ns()}"
                return timed(lambda: spark.sql(query).write.parquet(str(out)))

            cases = [
                ("stateless", "order_id STRING, customer_id STRING, status STRING, amount DECIMAL(12, 2)", STATELESS),
                ("stateful", "segment STRING, orders BIGINT, revenue DECIMAL(18, 2), "
                             "PRIMARY KEY (segment) NOT ENFORCED", STATEFUL),
            ]
            for kind, columns, template in cases:
                paired_ratio(f"{kind} {args.rows:,} rows, local service / bare Spark",
                             lambda kind=kind, columns=columns, template=template: ours(
                                 kind, columns, template.format(orders="bench_orders", customers="bench_customers")),
                             lambda template=template: bare(template.format(orders="bare_orders",
                                                                            customers="bare_customers")),
                             args.pairs, TARGETS[kind])
            history(service, client)

            small_ticks(service, client, args.ticks)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
