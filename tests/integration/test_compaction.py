"""Table log compaction: many small batches merge into one batch holding exactly the same records
(values, partition, offset, $rowtime, $op), and a statement reading the table meanwhile still
reads every record exactly once. Expected records come from what the test wrote, in plain Python."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from shift_left_dagster.local.catalog import DELETE, INSERT, ColumnDef, TableDef, TableId
from shift_left_dagster.local.compaction import CompactionPolicy, compact, remove_retired
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.store import Store
from tests.integration.support import client_for, quiesce, run, unique

POLICY = CompactionPolicy(small_rows=1000, max_small_batches=4, retention_seconds=0)
START = datetime(2025, 1, 1)
SCHEMA = "id BIGINT, name STRING, `$rowtime` TIMESTAMP, `$op` TINYINT"


def table_def(name: str) -> TableDef:
    return TableDef(uid=f"uid-{name}", id=TableId(catalog="c", database="d", name=name),
                    columns=[ColumnDef(name="id", type="BIGINT"), ColumnDef(name="name", type="STRING")],
                    distribution=["id"], partitions=2, changelog_mode="retract")


def records(logs: TableLogs, table: TableDef, **read: Any) -> list[tuple]:
    """Every record as (partition, offset, id, name, rowtime, op), in log order."""
    rows = logs.read(table, **read).collect()
    return sorted((r["$partition"], r["$offset"], r["id"], r["name"], r["$rowtime"], r["$op"]) for r in rows)


def files(root: Path, table: TableDef) -> int:
    """Files of the table on disk (each batch has one per partition it holds), folders and all."""
    return sum(1 for f in (root / table.uid).rglob("*") if f.is_file())


def test_small_batches_merge_keeping_every_record(spark: SparkSession, tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("compacted")
    store.create_table(table)
    written: list[tuple[int, str, datetime, int, str]] = []  # id, name, rowtime, op, producer
    for i in range(40):
        producer = "other" if i in (20, 21) else "p"  # another statement's batches split the run
        op = DELETE if i % 7 == 6 else INSERT
        row = (i % 9, f"n{i}", START + timedelta(seconds=i), op, producer)
        written.append(row)
        batch = logs.write(table, spark.createDataFrame([row[:4]], SCHEMA), producer)
        assert batch is not None
        store.append_batches([batch])
    before = records(logs, table)
    assert len(store.batches(table.uid)) == 40 and files(tmp_path / "tables", table) == 40
    # what the test wrote, each partition's offsets dense from 0 in write order
    assert Counter((r[2], r[3], r[4], r[5]) for r in before) == Counter(w[:4] for w in written)
    for partition in {r[0] for r in before}:
        assert [r[1] for r in before if r[0] == partition] == list(range(sum(r[0] == partition for r in before)))
    by_producer = {p: records(logs, table, producer=p) for p in ("p", "other")}
    middle = {0: (3, 11), 1: (2, 9)}
    ranged = records(logs, table, ranges=middle)

    merged = compact(logs, POLICY)
    remove_retired(logs, POLICY)

    batches = store.batches(table.uid)
    assert merged == 40 - len(batches)
    assert len(batches) == 3  # p's first 20, the other statement's 2, p's last 18
    assert [b.producer for b in batches] == ["p", "other", "p"]
    assert files(tmp_path / "tables", table) == sum(len(b.ranges) for b in batches)
    assert sum(b.retractions for b in batches) == sum(w[3] == DELETE for w in written)
    assert records(logs, table) == before
    assert {p: records(logs, table, producer=p) for p in ("p", "other")} == by_producer
    assert records(logs, table, ranges=middle) == ranged
    store.close()


def test_a_running_statement_reads_a_compacted_table_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark, compaction=POLICY) as service:
        client = client_for(service.url)
        source, sink = unique("cmp_src").replace("-", "_"), unique("cmp_sink").replace("-", "_")
        run(client, unique("ddl"), f"CREATE TABLE {source} (id BIGINT, name STRING) DISTRIBUTED BY HASH(id) "
                                   f"INTO 2 BUCKETS")
        run(client, unique("ddl"), f"CREATE TABLE {sink} (id BIGINT, label STRING) DISTRIBUTED INTO 2 BUCKETS")
        run(client, unique("dml"), f"INSERT INTO {sink} SELECT id * 10, UPPER(name) FROM {source} WHERE id % 3 <> 0",
            "RUNNING")
        engine = service.engine
        tables = [engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=n))
                  for n in (source, sink)]
        assert tables[0] is not None and tables[1] is not None
        for i in range(30):  # one record at a time, each picked up by a run of the statement
            batch = engine.logs.write(tables[0], spark.createDataFrame(
                [(i, f"n{i}", START + timedelta(seconds=i), INSERT)], SCHEMA), producer=None)
            assert batch is not None
            engine.store.append_batches([batch])
            quiesce(service.url)
        expected = Counter((i * 10, f"N{i}") for i in range(30) if i % 3 != 0)
        got = Counter((r["id"], r["label"]) for r in engine.logs.read(tables[1]).collect())
        assert got == expected  # no record lost, none read twice
        for table in tables:
            held = engine.store.batches(table.uid)
            assert len(held) <= POLICY.max_small_batches
            assert files(tmp_path / "service" / "tables", table) == sum(len(b.ranges) for b in held)


def test_merged_files_stay_for_readers_until_the_retention_passes(spark: SparkSession, tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("retained")
    store.create_table(table)
    for i in range(6):
        batch = logs.write(table, spark.createDataFrame([(i, f"n{i}", START, INSERT)], SCHEMA), "p")
        assert batch is not None
        store.append_batches([batch])
    listed = [str(tmp_path / f) for b in store.batches(table.uid) for f in b.files]  # a reader beside the service
    retained = CompactionPolicy(small_rows=1000, max_small_batches=4, retention_seconds=3600)
    assert compact(logs, retained) == 5
    remove_retired(logs, retained)
    assert logs.remove_unregistered() == 0  # a restart keeps them too
    assert sorted(r["id"] for r in spark.read.parquet(*listed).collect()) == list(range(6))
    remove_retired(logs, POLICY)  # retention over
    assert files(tmp_path / "tables", table) == len(store.batches(table.uid)[0].ranges)
    store.close()


def test_a_restart_deletes_what_no_committed_run_names(spark: SparkSession, tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    table = table_def("crashed")
    store.create_table(table)
    kept = logs.write(table, spark.createDataFrame([(1, "a", START, INSERT), (2, "b", START, INSERT)], SCHEMA), "p")
    assert kept is not None
    store.append_batches([kept])
    lost = logs.write(table, spark.createDataFrame([(3, "c", START, INSERT), (4, "d", START, INSERT)], SCHEMA), "p")
    assert lost is not None  # written, never committed: a crash before the run's commit
    (tmp_path / "tables" / table.uid / ".tmp-b-interrupted").mkdir()
    assert logs.remove_unregistered() == len(lost.files) + 1
    left = sorted(str(f.relative_to(tmp_path)) for f in (tmp_path / "tables").rglob("*") if f.is_file())
    assert left == sorted(kept.files)
    assert not [d for d in (tmp_path / "tables" / table.uid).rglob("*") if d.is_dir() and not any(d.iterdir())]
    assert sorted(r[2] for r in records(logs, table)) == [1, 2]
    store.close()
