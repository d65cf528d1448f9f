"""Table log writes: a small batch written by the driver (Arrow, pyarrow) is the batch a Spark write
makes of the same records: same values of every stored type, partitions, offsets, times, ops and
counts. Expected invariants (every record written once, offsets dense per partition, each key's
records in input order) are checked in plain Python."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from shift_left_dagster.local import storage
from shift_left_dagster.local.catalog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, ColumnDef, TableDef, TableId
from shift_left_dagster.local.storage import NotNullViolation, TableLogs
from shift_left_dagster.local.store import Batch, Store

COLUMNS = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("amount", "DECIMAL(10, 2)"), ("tags", "ARRAY<STRING>"),
           ("attrs", "MAP<STRING, INT>"), ("at", "TIMESTAMP(3)"), ("seen", "TIMESTAMP_LTZ(3)"),
           ("point", "ROW<`x` INT, `y` DOUBLE>"), ("raw", "BYTES"), ("day", "DATE")]
SCHEMA = ("id BIGINT, name STRING, amount DECIMAL(10,2), tags ARRAY<STRING>, attrs MAP<STRING,INT>, "
          "at TIMESTAMP_NTZ, seen TIMESTAMP, point STRUCT<x: INT, y: DOUBLE>, raw BINARY, day DATE, "
          "`$rowtime` TIMESTAMP, `$op` TINYINT, seq BIGINT")
START = datetime(2025, 3, 1, 12, 0, 0)
OPS = (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)


def table_def(name: str, keyed: bool) -> TableDef:
    columns = [ColumnDef(name=n, type=t.removesuffix(" NOT NULL"), nullable=not t.endswith("NOT NULL"))
               for n, t in COLUMNS]
    return TableDef(uid=f"uid-{name}", id=TableId(catalog="c", database="d", name=name), columns=columns,
                    distribution=["id"] if keyed else [], partitions=3, changelog_mode="retract")


def rows(count: int) -> list[tuple]:
    """Records of every stored type, NULLs included; `seq` is their input order."""
    made = []
    for i in range(count):
        made.append((i % 7, None if i % 5 == 0 else f"n{i}", Decimal(i) / 4 if i % 3 else None,
                     [f"t{i}", None] if i % 2 else [], {"k": i} if i % 4 else None,
                     START + timedelta(seconds=i), START + timedelta(minutes=i),
                     (i, i / 8) if i % 6 else None, bytes([i % 256]), (START + timedelta(days=i)).date(),
                     START + timedelta(milliseconds=i), OPS[i % 4], i))
    return made


def hashable(value: object) -> object:
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    if isinstance(value, list | tuple):
        return tuple(hashable(v) for v in value)
    return value


def frame(spark: SparkSession, data: list[tuple]) -> DataFrame:
    return spark.createDataFrame(data, SCHEMA).repartition(4)  # input order scattered over Spark partitions


def logged(logs: TableLogs, table: TableDef) -> list[tuple]:
    """Every record as stored, in log order (partition, offset)."""
    names = [n for n, _ in COLUMNS] + ["$rowtime", "$partition", "$offset", "$op"]
    found = [tuple(r[n] for n in names) for r in logs.read(table).collect()]
    return sorted(found, key=lambda r: (r[-3], r[-2]))


def write_both(spark: SparkSession, tmp_path: Path, keyed: bool,
               data: list[tuple]) -> tuple[TableLogs, dict[bool, tuple[TableDef, Batch]]]:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    written: dict[bool, tuple[TableDef, Batch]] = {}
    for small in (True, False):
        table = table_def(f"t_{keyed}_{small}", keyed)
        store.create_table(table)
        batch = logs.write(table, frame(spark, data), "p", order_by=["seq"], small_input=small, collect=small)
        assert batch is not None
        store.append_batches([batch])
        written[small] = (table, batch)
    return logs, written


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_a_batch_written_by_the_driver_is_the_one_spark_writes(spark: SparkSession, tmp_path: Path,
                                                                keyed: bool) -> None:
    data = rows(60)
    codegen = spark.conf.get("spark.sql.codegen.wholeStage")
    logs, written = write_both(spark, tmp_path, keyed, data)
    assert spark.conf.get("spark.sql.codegen.wholeStage") == codegen  # the driver's write ran without, then restored
    (driver_table, driver), (spark_table, spark_batch) = written[True], written[False]
    for batch in (driver, spark_batch):  # a file per partition, named by its first offset, nothing else
        table_dir = tmp_path / batch.path.rsplit("/", 1)[0]
        assert sorted(str(f.relative_to(tmp_path)) for f in table_dir.rglob("*") if f.is_file()) == \
            sorted(batch.files)
        assert [f.split("/")[2:4] for f in batch.files] == [[f"$partition={p}", "$base=0"] for p in batch.ranges]
    assert (driver.rows, driver.retractions, driver.ranges) == \
        (spark_batch.rows, spark_batch.retractions, spark_batch.ranges)
    records = logged(logs, driver_table)
    assert records == logged(logs, spark_table)
    # plain-Python invariants: every record once, offsets dense per partition, a key's records in input order
    assert Counter(hashable(r[:-3] + (r[-1],)) for r in records) == Counter(hashable(d[:12]) for d in data)
    assert driver.rows == 60 and driver.retractions == sum(d[11] in (UPDATE_BEFORE, DELETE) for d in data)
    for partition in {r[-3] for r in records}:
        offsets = [r[-2] for r in records if r[-3] == partition]
        assert offsets == list(range(len(offsets)))
    if keyed:
        for key in range(7):
            in_log = [r[6] for r in records if r[0] == key]
            assert in_log == sorted(in_log)  # `seen` grows with the input order


def test_a_batch_larger_than_the_driver_takes_is_written_by_spark(spark: SparkSession, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "DRIVER_ROWS", 10)
    data = rows(25)
    logs, written = write_both(spark, tmp_path, True, data)
    (driver_table, driver), (spark_table, spark_batch) = written[True], written[False]
    assert driver.rows == spark_batch.rows == 25  # counted once, over the whole batch
    assert driver.ranges == spark_batch.ranges
    assert logged(logs, driver_table) == logged(logs, spark_table)


def test_a_null_key_written_by_the_driver_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("nulls", keyed=True)
    store.create_table(table)
    bad = [(None, *row[1:]) for row in rows(3)]
    with pytest.raises(NotNullViolation, match="Column 'id' is NOT NULL"):
        logs.write(table, frame(spark, bad), "p", small_input=True, collect=True)
    assert store.batches(table.uid) == [] and not any(p.name.startswith(".tmp") for p in
                                                      (tmp_path / "tables" / table.uid).iterdir())


def test_merged_batches_of_every_type_keep_each_record_where_it_was(spark: SparkSession, tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("merged", keyed=True)
    store.create_table(table)
    data = rows(45)
    for start, small in ((0, True), (15, False), (30, True)):  # files the driver and Spark wrote, side by side
        batch = logs.write(table, frame(spark, data[start:start + 15]), "p", order_by=["seq"], small_input=small,
                           collect=small)
        assert batch is not None
        store.append_batches([batch])
    before = logged(logs, table)
    runs = store.batches(table.uid)
    merged = logs.merge(table, runs)
    assert store.replace_batches(runs, merged)
    assert logged(logs, table) == before  # every value, partition, offset, time and op as it was
    assert (merged.rows, merged.retractions) == (45, sum(d[11] in (UPDATE_BEFORE, DELETE) for d in data))
    assert merged.ranges == {p: (0, sum(r[-3] == p for r in before)) for p in {r[-3] for r in before}}
