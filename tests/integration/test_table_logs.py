"""Table log writes: a small batch written by the driver (Arrow, pyarrow) is the batch a Spark write
makes of the same records: same values of every stored type, partitions, offsets, times, ops and
counts. Expected invariants (every record written once, offsets dense per partition, each key's
records in input order) are checked in plain Python."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.local import storage
from shift_left_dagster.local.catalog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, ColumnDef, TableDef, TableId
from shift_left_dagster.local.spark import is_local_relation
from shift_left_dagster.local.storage import NotNullViolation, TableLogs
from shift_left_dagster.local.store import Batch, Store
from shift_left_dagster.local.views import TableViews

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



def test_a_batch_of_inserts_only_has_no_op_column_and_reads_as_inserts(spark: SparkSession, tmp_path: Path) -> None:
    """+I is implied by a file without `$op`: a batch of inserts only, written by the driver (its ops all
    +I) or by Spark (its $op a constant +I), has no such column; read alone, beside a file with `$op`
    (a filter on $op pushed down must not drop a file without it), and merged with one, every record
    keeps its op."""
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("inserts", keyed=False)
    store.create_table(table)
    data = rows(45)
    inserts = [d[:11] + (INSERT,) + d[12:] for d in data[:30]]
    for chunk, small in ((inserts[:15], True), (inserts[15:], False)):
        records = frame(spark, chunk).withColumn("$op", F.lit(INSERT).cast("tinyint"))
        batch = logs.write(table, records, "p", order_by=["seq"], small_input=small, collect=small)
        assert batch is not None and batch.retractions == 0
        assert all("$op" not in pq.read_schema(tmp_path / f).names for f in batch.files)
        store.append_batches([batch])
    assert {r[-1] for r in logged(logs, table)} == {INSERT}
    mixed = logs.write(table, frame(spark, data[30:]), "p", order_by=["seq"], small_input=True, collect=True)
    assert mixed is not None and all("$op" in pq.read_schema(tmp_path / f).names for f in mixed.files)
    store.append_batches([mixed])
    expected = Counter(hashable(d[:12]) for d in [*inserts, *data[30:]])
    before = logged(logs, table)
    assert Counter(hashable(r[:-3] + (r[-1],)) for r in before) == expected
    kept = logs.read(table).where(F.col("`$op`") != UPDATE_BEFORE).count()
    assert kept == sum(d[11] != UPDATE_BEFORE for d in [*inserts, *data[30:]])
    runs = store.batches(table.uid)
    merged = logs.merge(table, runs)
    assert store.replace_batches(runs, merged)
    assert logged(logs, table) == before


FLAT = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("amount", "DECIMAL(10, 2)"), ("at", "TIMESTAMP(3)"),
        ("seen", "TIMESTAMP_LTZ(3)"), ("raw", "BYTES"), ("day", "DATE"), ("score", "DOUBLE"), ("ok", "BOOLEAN"),
        ("tags", "ARRAY<STRING>"), ("attrs", "MAP<STRING, INT>"), ("point", "ROW<`x` INT, `y z` DECIMAL(6, 2)>")]


MAP = "map('k', {})"


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_values_the_driver_holds_are_written_without_a_spark_job(spark: SparkSession, tmp_path: Path, keyed: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """INSERT ... VALUES: Spark holds the rows on the driver (a local relation); they are taken from there
    with no Spark job, as the batch toArrow gives, times unshifted in a process that is not on UTC."""
    monkeypatch.setenv("TZ", "America/New_York")  # Python's rows would carry times in this zone
    time.tzset()
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    values = ", ".join(
        f"({i % 4}, {'NULL' if i % 5 == 0 else repr(f'n{i}')}, {i}.25, TIMESTAMP_NTZ'2025-03-01 12:00:{i:02d}', "
        f"TIMESTAMP'2025-03-01 23:{i:02d}:00', X'0{i % 10}', DATE'2025-03-{i + 1:02d}', {i / 8}, {i % 2 == 0}, "
        f"array('t{i}', NULL), {'NULL' if i % 4 == 0 else MAP.format(i)}, named_struct('x', {i}, 'y z', {i}.5), "
        f"TIMESTAMP'2025-03-01 00:00:00.{i:03d}', {OPS[i % 4]}, {i})" for i in range(12))
    sql = (f"SELECT CAST(id AS BIGINT) id, name, CAST(amount AS DECIMAL(10, 2)) amount, at, seen, raw, day, "
           f"CAST(score AS DOUBLE) score, ok, tags, CAST(attrs AS MAP<STRING, INT>) attrs, "
           f"CAST(point AS STRUCT<x: INT, `y z`: DECIMAL(6, 2)>) point, `$rowtime`, CAST(`$op` AS TINYINT) `$op`, "
           f"CAST(seq AS BIGINT) seq FROM VALUES {values} "
           f"AS v(id, name, amount, at, seen, raw, day, score, ok, tags, attrs, point, `$rowtime`, `$op`, seq)")
    written = {}
    try:
        for local in (True, False):
            columns = [ColumnDef(name=n, type=t.removesuffix(" NOT NULL"), nullable=not t.endswith("NOT NULL"))
                       for n, t in FLAT]
            table = TableDef(uid=f"uid-{keyed}-{local}", id=TableId(catalog="c", database="d", name=f"v{local}"),
                             columns=columns, distribution=["id"] if keyed else [], partitions=3 if keyed else 1)
            store.create_table(table)
            records = spark.sql(sql) if local else spark.sql(sql).repartition(2)  # a Spark job's rows
            assert is_local_relation(records) == local
            jobs = spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()
            batch = logs.write(table, records, "p", order_by=["seq"], small_input=True, collect=True)
            assert (spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs() == jobs) == local
            assert batch is not None
            store.append_batches([batch])
            written[local] = (table, batch)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    names = [n for n, _ in FLAT] + ["$rowtime", "$partition", "$offset", "$op"]

    def stored(table: TableDef) -> list[tuple]:
        return sorted((tuple(hashable(r[n]) for n in names) for r in logs.read(table).collect()),
                      key=lambda r: (r[-3], r[-2]))

    assert stored(written[True][0]) == stored(written[False][0])
    assert written[True][1].ranges == written[False][1].ranges
    seen = {r[1]: r[4] for r in stored(written[True][0])}  # read back in this process's zone again: UTC
    assert seen["n1"] == datetime(2025, 3, 1, 23, 1)


def test_an_upsert_table_holding_each_key_once_is_its_records(spark: SparkSession, tmp_path: Path) -> None:
    """State of an upsert table: its records as they are (no latest-row window) while each key is held once
    and nothing is deleted; the latest row per key, deletes removed, once a key repeats or is deleted."""
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    views = TableViews(logs)
    columns = [ColumnDef(name="id", type="BIGINT", nullable=False), ColumnDef(name="name", type="STRING")]
    table = TableDef(uid="uid-up", id=TableId(catalog="c", database="d", name="up"), columns=columns,
                     primary_key=["id"], distribution=["id"], partitions=2, changelog_mode="upsert")
    store.create_table(table)

    def append(rows: list[tuple[int, str, int]]) -> None:
        frame = spark.createDataFrame([(i, n, START, op) for i, n, op in rows],
                                      "id BIGINT, name STRING, `$rowtime` TIMESTAMP, `$op` TINYINT")
        batch = logs.write(table, frame, "p", small_input=True, collect=True)
        assert batch is not None
        store.append_batches([batch])

    def state() -> tuple[set[tuple[int, str]], bool]:
        frame = views.state(table)
        windowed = "Window" in frame._jdf.queryExecution().optimizedPlan().toString()
        return {(r["id"], r["name"]) for r in frame.collect()}, windowed

    append([(i, f"n{i}", INSERT) for i in range(6)])
    append([(i, f"m{i}", INSERT) for i in range(6, 9)])
    expected = {(i, f"n{i}") for i in range(6)} | {(i, f"m{i}") for i in range(6, 9)}
    assert state() == (expected, False)
    append([(2, "again", UPDATE_AFTER)])  # a key held twice: its latest row
    assert state() == ((expected - {(2, "n2")}) | {(2, "again")}, True)
    append([(7, "m7", DELETE)])
    assert state() == ((expected - {(2, "n2"), (7, "m7")}) | {(2, "again")}, True)


def test_highest_times_come_from_the_files_statistics(spark: SparkSession, tmp_path: Path) -> None:
    """A run's watermark input (the highest time per partition) from parquet statistics, no Spark job, as
    plain Python computes it from the records; a range ending inside a file is left to Spark, alike."""
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    views = TableViews(logs)
    columns = [ColumnDef(name="id", type="BIGINT"), ColumnDef(name="at", type="TIMESTAMP(3)"),
               ColumnDef(name="seen", type="TIMESTAMP_LTZ(3)")]
    table = TableDef(uid="uid-times", id=TableId(catalog="c", database="d", name="times"), columns=columns,
                     distribution=["id"], partitions=3)
    store.create_table(table)
    records = [(i, None if i % 3 == 0 else START + timedelta(milliseconds=7 * i, microseconds=999),
                START + timedelta(seconds=i)) for i in range(40)]
    for start, small in ((0, True), (20, False)):  # a file the driver wrote, one Spark wrote
        frame = spark.createDataFrame([(*r, START, INSERT) for r in records[start:start + 20]], "id BIGINT, "
                                      "at TIMESTAMP_NTZ, seen TIMESTAMP, `$rowtime` TIMESTAMP, `$op` TINYINT")
        batch = logs.write(table, frame, "p", small_input=small, collect=small)
        assert batch is not None
        store.append_batches([batch])
    located = [(r["$partition"], r["$offset"], r["id"]) for r in views.located(table).collect()]
    ends = {p: max(o for q, o, _ in located if q == p) + 1 for p, _, _ in located}
    epoch = datetime(1970, 1, 1)

    def expected(ranges: dict[int, tuple[int, int]], at: int) -> dict[int, int | None]:
        found: dict[int, int | None] = {}
        for p, offset, i in located:
            if ranges[p][0] <= offset < ranges[p][1]:
                value = records[i][at]
                millis = None if value is None else (value - epoch) // timedelta(milliseconds=1)
                found[p] = max(filter(None, (found.get(p), millis)), default=None)
        return found

    whole = {p: (0, end) for p, end in ends.items()}
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    jobs = scheduler.numTotalJobs()
    assert views.highest_times(table, "at", whole) == expected(whole, 1)
    assert views.highest_times(table, "seen", whole) == expected(whole, 2)
    assert scheduler.numTotalJobs() == jobs
    partial = {p: (1, end - 1) for p, end in ends.items()}
    assert views.highest_times(table, "at", partial) == expected(partial, 1)


def test_a_read_of_the_same_files_is_the_dataframe_built_before(spark: SparkSession, tmp_path: Path) -> None:
    """A table's log read again as it stands (same files, same columns, same offsets) is the DataFrame read
    before: no file listing and no analysis again. A new batch, other offsets or an altered table read anew,
    and each read holds exactly its records (plain Python counts)."""
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    views = TableViews(logs)
    columns = [ColumnDef(name="id", type="BIGINT"), ColumnDef(name="name", type="STRING")]
    table = TableDef(uid="uid-again", id=TableId(catalog="c", database="d", name="again"), columns=columns,
                     partitions=1)
    store.create_table(table)

    def append(ids: range) -> None:
        records = spark.createDataFrame([(i, f"n{i}", START, INSERT) for i in ids],
                                        "id BIGINT, name STRING, `$rowtime` TIMESTAMP, `$op` TINYINT")
        batch = logs.write(table, records, "p", small_input=True, collect=True)
        assert batch is not None
        store.append_batches([batch])

    append(range(5))
    first = logs.read(table)
    assert logs.read(table) is first and logs.read(table, {0: (0, 5)}) is first  # every file read whole
    assert views.changes(table) is views.changes(table)
    part = logs.read(table, {0: (1, 3)})
    assert part is not first and part is logs.read(table, {0: (1, 3)})
    assert sorted(r["id"] for r in part.collect()) == [1, 2]
    append(range(5, 8))
    assert logs.read(table, {0: (0, 5)}) is first
    both = logs.read(table)
    assert both is not first and sorted(r["id"] for r in both.collect()) == list(range(8))
    altered = table.model_copy(update={"columns": [*columns, ColumnDef(name="note", type="STRING")]})
    widened = views.changes(altered)
    assert widened is not views.changes(table) and "note" in widened.columns
    assert [r["note"] for r in widened.collect()] == [None] * 8


def test_a_batch_of_one_time_keeps_it_once_and_reads_it_on_every_record(spark: SparkSession, tmp_path: Path) -> None:
    """A batch Spark writes whose records share one `$rowtime` (a bulk load, a stateless run over one)
    keeps that time once, in its name, as a Kafka batch written with LogAppendTime keeps it in its header:
    its files have no `$rowtime` column. Read alone, beside a batch with the column (a filter on $rowtime
    pushed down must not drop a file without it), through the files' statistics, and merged with one, every
    record keeps its time."""
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("one_time", keyed=False)
    store.create_table(table)
    data = rows(45)
    at = datetime(2025, 3, 2, 8, 30, 15, 123000)
    same = [d[:10] + (at,) + d[11:] for d in data[:30]]
    for chunk in (same[:15], same[15:]):  # two batches of one time each, as Spark writes them
        batch = logs.write(table, frame(spark, chunk).withColumn("$rowtime", F.lit(at)), "p", order_by=["seq"])
        assert batch is not None
        assert all("$rowtime" not in pq.read_schema(tmp_path / f).names for f in batch.files)
        store.append_batches([batch])
    assert {r[-4] for r in logged(logs, table)} == {at}
    ends = store.end_offsets(table.uid)
    millis = (at.replace(tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    highest = logs.highest_times(table, "$rowtime", {p: (0, end) for p, end in ends.items()})
    assert highest == dict.fromkeys(ends, millis)
    several = logs.write(table, frame(spark, data[30:]), "p", order_by=["seq"])  # times of their own
    assert several is not None and all("$rowtime" in pq.read_schema(tmp_path / f).names for f in several.files)
    store.append_batches([several])
    expected = Counter(hashable(d[:12]) for d in [*same, *data[30:]])
    before = logged(logs, table)
    assert Counter(hashable(r[:-3] + (r[-1],)) for r in before) == expected
    late = logs.read(table).where(F.col("`$rowtime`") >= F.lit(at)).count()
    assert late == sum(d[10] >= at for d in [*same, *data[30:]])
    runs = store.batches(table.uid)
    merged = logs.merge(table, runs)
    assert store.replace_batches(runs, merged)
    assert logged(logs, table) == before
