"""The local service's benchmark scenarios, shared by bench_local.py (figures) and profile_local.py
(where their time goes): the sample project deployed over HTTP, and bulk-loaded tables for the
1 M-row queries next to bare Spark."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.local.catalog import TableId
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from tests.integration.support import client_for, deploy_pipelines, quiesce, run, seed_statements, unique

ROOT = Path(__file__).resolve().parents[1]
SINKS = ("fct_order", "v_p", "dim_c360_users", "fct_c360_purchase", "fct_c360_item_sales", "fct_c360_hourly_activity")
STATELESS = ("SELECT order_id, customer_id, UPPER(TRIM(status)) AS status, "
             "CAST(quantity * price AS DECIMAL(12, 2)) AS amount FROM {orders} WHERE quantity > 0")
STATEFUL = ("SELECT c.segment, COUNT(*) AS orders, CAST(SUM(o.quantity * o.price) AS DECIMAL(18, 2)) AS revenue "
            "FROM {orders} AS o JOIN {customers} AS c ON o.customer_id = c.customer_id GROUP BY c.segment")
CASES = {  # kind -> (sink columns, query)
    "stateless": ("order_id STRING, customer_id STRING, status STRING, amount DECIMAL(12, 2)", STATELESS),
    "stateful": ("segment STRING, orders BIGINT, revenue DECIMAL(18, 2), PRIMARY KEY (segment) NOT ENFORCED",
                 STATEFUL),
}


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def fast_client(service: InProcessService) -> ConfluentClient:
    """A client polling every 50 ms: the figures time the service, not the client's polling."""
    client = client_for(service.url)
    client.settings.poll.initial = client.settings.poll.step = 0.05
    return client


def deploy_project(client: ConfluentClient) -> int:
    """Seeds, then each sink's tables' DDL and DML in dependency order, one statement after another."""
    count = 0
    for seed in sorted((ROOT / "flink_project" / "seeds").glob("*.sql")):
        for sql in seed_statements(seed.stem):
            run(client, unique("bench-seed"), sql)
            count += 1
    return count + deploy_pipelines(client, SINKS, "bench")


def sample_on_fresh_service(data: Path) -> float:
    """A new service (its own data folder, this process's JVM), the sample deployed at once: seconds
    until every sink caught up."""
    with InProcessService(data / unique("fresh")) as fresh:
        client = fast_client(fresh)
        run(client, unique("warm"), "SELECT 1")  # the service answers
        return timed(lambda: (deploy_project(client), quiesce(fresh.url)))


def sample_on_warm_service(data: Path) -> Callable[[], float]:
    """Run the sample once on a service; the returned action redeploys it on a second, clean service
    (its own data folder) of the same process, whose JVM has run the queries before."""
    with InProcessService(data / unique("warm")) as service:
        deploy_project(fast_client(service))
        quiesce(service.url)

    def again() -> float:
        with InProcessService(data / unique("warm")) as second:
            client = fast_client(second)
            run(client, unique("warm"), "SELECT 1")
            return timed(lambda: (deploy_project(client), quiesce(second.url)))

    return again


def table_id(name: str) -> TableId:
    return TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=name)


def load(service: InProcessService, table: str, frame: DataFrame) -> list[str]:
    """Bulk-write rows straight into a table's log (one batch); return its parquet files."""
    engine = service.engine
    definition = engine.store.table(table_id(table))
    assert definition is not None
    batch = engine.logs.write(definition, frame.withColumn("$rowtime", F.current_timestamp())
                              .withColumn("$op", F.lit(0).cast("tinyint")), producer=None)
    assert batch is not None
    engine.store.append_batches([batch])
    return [str(service.data_dir / f) for b in engine.store.batches(definition.uid) for f in b.files]


class Throughput:
    """bench_orders (`rows` orders) and bench_customers (5,000, an upsert table) loaded into a service;
    a case run as a statement there (until caught up) or as the bare Spark query over the same files."""

    def __init__(self, service: InProcessService, rows: int, scratch: Path) -> None:
        self.service, self.client, self.scratch = service, fast_client(service), scratch
        client = self.client
        run(client, unique("warm"), "SELECT 1")
        self.spark = spark = service.engine.jobs.spark
        run(client, unique("ddl"), "CREATE TABLE bench_orders (order_id STRING, customer_id STRING, "
                                   "quantity INT, price DECIMAL(10, 2), status STRING) DISTRIBUTED INTO 2 BUCKETS")
        run(client, unique("ddl"), "CREATE TABLE bench_customers (customer_id STRING, segment STRING, "
                                   "PRIMARY KEY (customer_id) NOT ENFORCED) DISTRIBUTED BY HASH(customer_id) "
                                   "INTO 2 BUCKETS")
        self.orders = load(service, "bench_orders", spark.range(rows).select(
            F.concat(F.lit("ord-"), F.col("id").cast("string")).alias("order_id"),
            F.concat(F.lit("c-"), (F.col("id") % 5000).cast("string")).alias("customer_id"),
            (F.col("id") % 7).cast("int").alias("quantity"),
            ((F.col("id") % 10000) / 100).cast("decimal(10,2)").alias("price"),
            F.when(F.col("id") % 3 == 0, F.lit(" paid ")).otherwise(F.lit("created")).alias("status")))
        self.customers = load(service, "bench_customers", spark.range(5000).select(
            F.concat(F.lit("c-"), F.col("id").cast("string")).alias("customer_id"),
            F.concat(F.lit("seg-"), (F.col("id") % 10).cast("string")).alias("segment")))

    def ours(self, kind: str) -> float:
        """A new sink and an INSERT INTO it, until the service caught up."""
        columns, template = CASES[kind]
        sink = unique(f"bench_{kind}").replace("-", "_")
        run(self.client, unique("ddl"), f"CREATE TABLE {sink} ({columns}) DISTRIBUTED INTO 2 BUCKETS")
        query = template.format(orders="bench_orders", customers="bench_customers")
        return timed(lambda: (run(self.client, unique("bench-run"), f"INSERT INTO {sink} {query}", "RUNNING",
                                  timeout=1800), quiesce(self.service.url)))

    def bare(self, kind: str) -> float:
        """The same query by Spark alone over the same parquet files, written as parquet."""
        self.spark.read.parquet(*self.orders).createOrReplaceTempView("bare_orders")
        self.spark.read.parquet(*self.customers).createOrReplaceTempView("bare_customers")
        out = self.scratch / f"bare-{time.monotonic_ns()}"
        query = CASES[kind][1].format(orders="bare_orders", customers="bare_customers")
        return timed(lambda: self.spark.sql(query).write.parquet(str(out)))
