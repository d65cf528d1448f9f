"""A stateless statement keeps each source partition's order (as Flink does), whether its run sorts
by offsets or, when Spark reads each source partition whole and in order, writes without the sort.
Expected orders come from the source log as stored, compared in plain Python.

Records are written on the engine thread (`on_engine_thread`), several batches in one call where a test
needs one run to find them all: a busy machine then can not slip a run between them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from shift_left_dagster.local import jobs, storage
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME, TableDef
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.spark import in_row_order
from shift_left_dagster.local.storage import TableLogs
from tests.integration.support import client_for, quiesce, run, stored_table, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]


@pytest.fixture
def service(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InProcessService]:
    """A service whose runs over more than 100 records are computed and written by Spark."""
    monkeypatch.setattr(storage, "DRIVER_ROWS", 100)
    monkeypatch.setattr(jobs, "DRIVER_ROWS", 100)
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as started:
        yield started


def load(service: InProcessService, source: TableDef, *ranges: tuple[int, int],
         row_group_size: int | None = None) -> None:
    """One batch per (first id, count) range, spread over the table's partitions, all written in one call
    on the engine thread: no run sees some of them without the others. `row_group_size`: each file is
    rewritten in row groups of that many records before its batch is registered (no run reads it meanwhile)."""
    def write() -> None:
        spark = service.engine.logs.spark
        for first, count in ranges:
            rows = spark.range(first, first + count, numPartitions=3).select(
                F.col("id"), F.concat(F.lit("t"), F.col("id").cast("string")).alias("tag"),
                F.current_timestamp().alias(ROWTIME), F.lit(INSERT).cast("tinyint").alias(OP))
            batch = service.engine.logs.write(source, rows, producer=None)
            assert batch is not None
            for file in batch.files if row_group_size else ():
                path = service.data_dir / file
                pq.write_table(pq.read_table(path), str(path), row_group_size=row_group_size)
            service.engine.store.append_batches([batch])

    service.engine.on_engine_thread(write, timeout=300)


def logged(logs: TableLogs, table: TableDef) -> list[tuple[int, int, int]]:
    """(partition, offset, id) of every record, in log order."""
    return sorted((r["$partition"], r["$offset"], r["id"]) for r in logs.read(table).collect())


def assert_source_order_kept(logs: TableLogs, source: TableDef, sink: TableDef, kept: set[int]) -> None:
    place = {i: (p, o) for p, o, i in logged(logs, source)}
    written = logged(logs, sink)
    assert sorted(i for _p, _o, i in written) == sorted(kept)  # each record once
    for partition in range(sink.partitions):
        came = [place[i] for p, _o, i in written if p == partition]
        for source_partition in range(source.partitions):
            offsets = [o for p, o in came if p == source_partition]
            assert offsets == sorted(offsets), (partition, source_partition)


def started(service: InProcessService) -> tuple[TableDef, TableDef, list[bool]]:
    """Source and sink tables, a running stateless statement between them, and the `ordered` flag
    of each write its runs made."""
    client = client_for(service.url)
    source, sink = unique("order_src").replace("-", "_"), unique("order_sink").replace("-", "_")
    run(client, unique("ddl"), f"CREATE TABLE {source} (id BIGINT, tag STRING) DISTRIBUTED INTO 2 BUCKETS")
    run(client, unique("ddl"), f"CREATE TABLE {sink} (id BIGINT, tag STRING) DISTRIBUTED INTO 2 BUCKETS")
    flags: list[bool] = []
    write = TableLogs.write

    def spied(self: TableLogs, target: TableDef, *args: object, **kwargs: object) -> object:
        if target.name == sink:
            flags.append(bool(kwargs.get("ordered")))
        return write(self, target, *args, **kwargs)  # type: ignore[arg-type]

    service.engine.logs.write = spied.__get__(service.engine.logs)  # type: ignore[method-assign]
    run(client, unique("dml"), f"INSERT INTO {sink} SELECT id, UPPER(tag) FROM {source} WHERE id % 7 <> 3",
        "RUNNING")
    return stored_table(service, source), stored_table(service, sink), flags


def kept(first: int, count: int) -> set[int]:
    return {i for i in range(first, first + count) if i % 7 != 3}


def test_a_run_over_whole_files_writes_without_sorting_in_source_order(service: InProcessService) -> None:
    source, sink, flags = started(service)
    load(service, source, (0, 3000))
    quiesce(service.url)
    load(service, source, (3000, 2000))
    quiesce(service.url)
    assert flags[-2:] == [True, True]  # each run read one file per partition: no sort needed
    load(service, source, (5000, 100), (5100, 300), (5400, 500))  # Spark reads larger files first
    quiesce(service.url)
    assert_source_order_kept(service.engine.logs, source, sink, kept(0, 5900))
    assert flags[-1] is False  # two files per partition: the run sorts


def test_a_file_spark_splits_is_sorted(service: InProcessService, spark: SparkSession) -> None:
    source, sink, flags = started(service)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")  # a split per row group or so
    try:
        load(service, source, (0, 3000), row_group_size=100)  # rewritten before any run can read it
        quiesce(service.url)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert flags[-1] is False
    assert_source_order_kept(service.engine.logs, source, sink, kept(0, 3000))


def frames(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    left = spark.range(100).select(F.col("id"), F.array(F.col("id"), F.lit(1)).alias("xs"))
    return left, spark.range(50).select(F.col("id"), F.array(F.lit(2)).alias("xs"))


def test_only_scans_filters_projections_unnests_and_unions_keep_row_order(spark: SparkSession) -> None:
    left, right = frames(spark)
    kept = left.where("id > 3").select("id", F.explode("xs")).unionByName(right.select("id", F.explode("xs")))
    flat = in_row_order(kept)
    assert flat is not None and flat.collect() == kept.collect()  # the same rows in the same order, planned flat
    for reordering in (left.join(right, "id"), left.repartition(2), left.orderBy("id"),
                       left.groupBy("id").count(), left.distinct(), left.limit(5),
                       left.select("id", F.row_number().over(Window.orderBy("id")).alias("n"))):
        assert in_row_order(reordering) is None
