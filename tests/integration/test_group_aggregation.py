"""Incremental group aggregation (local/group_aggregation.py) writes what recomputing writes.

The same GROUP BY query runs twice over one append source, tick after tick: once as written (its
top is the aggregate: incremental, accumulators per key), once wrapped in `SELECT * FROM (...)`
(its top is no aggregate: recomputed over the whole input each run). Each tick both sinks must
receive the same changelog records, and at the end hold what plain Python computes from the rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.local.catalog import DELETE, INSERT, OP, ROWTIME, UPDATE_AFTER, UPDATE_BEFORE, TableDef, TableId
from shift_left_dagster.local.ddl import Ddl
from shift_left_dagster.local.group_aggregation import STATE_DIR
from shift_left_dagster.local.jobs import Jobs
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.store import Store
from shift_left_dagster.project.parsing import parse_one_statement
from tests.integration.support import client_for, quiesce, run, select, unique, wired

pytestmark = pytest.mark.service

Row = tuple[Any, ...]
UPSERT_SINK = ("(k STRING, g INT, n BIGINT, nv BIGINT, total DECIMAL(18, 2), lo INT, hi INT, mean DECIMAL(14, 6), "
               "PRIMARY KEY (k, g) NOT ENFORCED) DISTRIBUTED BY HASH(k, g) INTO 2 BUCKETS")
UPSERT_QUERY = ("SELECT k, g, COUNT(*) AS n, COUNT(v) AS nv, CAST(SUM(v) AS DECIMAL(18, 2)) AS total, MIN(w) AS lo, "
                "MAX(w) AS hi, AVG(v) AS mean FROM ga_src WHERE w IS NULL OR w <> 13 GROUP BY k, g "
                "HAVING COUNT(*) <= 3 OR SUM(v) > 100")
D = Decimal
UPSERT_TICKS: list[list[Row]] = [
    [("a", 1, D("1.50"), 5), ("a", 1, None, 7), ("b", 1, D("2.25"), None), ("b", 2, None, None),
     ("c", 1, D("10.00"), 13)],
    [("a", 1, D("3.00"), 2), ("b", 1, D("0.10"), 9), ("d", 1, D("-5.00"), 1), ("c", 1, D("1.00"), 13)],
    [("a", 1, D("1.00"), 3), ("b", 2, D("99.99"), 4), ("b", 2, D("0.02"), 4)],  # (a, 1) leaves the HAVING
    [("b", 2, D("7.00"), 7), ("a", 1, D("200.00"), 1)]  # (a, 1) comes back, (b, 2) stays by its sum
    + [("m", i, D(i) / 100, i % 7) for i in range(150)] + [("m", i, None, None) for i in range(0, 150, 3)],
    [("d", 1, D("1.00"), 1)] * 3,  # (d, 1) leaves
    [("d", 1, D("1.00"), 1), ("c", 1, D("1.00"), 13)],  # (d, 1) touched, stays out: nothing written for it
]


@pytest.fixture(scope="module")
def client(local_service: InProcessService) -> ConfluentClient:
    return client_for(local_service.url)


def literal(value: Any) -> str:
    return "NULL" if value is None else f"'{value}'" if isinstance(value, str) else str(value)


def insert(client: ConfluentClient, table: str, rows: list[Row]) -> None:
    values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    run(client, unique("ga-insert"), f"INSERT INTO {table} VALUES {values}")


def sink(service: InProcessService, name: str) -> TableDef:
    found = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                               name=name))
    assert found is not None
    return found


class Records:
    """The changelog records a sink received since the last call, read from its parquet batches."""

    def __init__(self, service: InProcessService, spark: SparkSession, table: str) -> None:
        self.service, self.spark, self.table = service, spark, sink(service, table)
        self.seen: set[int] = set()

    def new(self) -> list[Row]:
        batches = [b for b in self.service.engine.store.batches(self.table.uid) if b.id not in self.seen]
        self.seen |= {b.id for b in batches}
        if not batches:
            return []
        columns = [F.col(c.name) for c in self.table.stored_columns] + [F.col(ROWTIME)]
        records: list[Row] = []
        for file in [str(self.service.data_dir / f) for b in batches for f in b.files]:
            frame = self.spark.read.parquet(file)  # a file without $op holds +I records only (storage.py)
            op = F.col(OP) if OP in frame.columns else F.lit(INSERT).cast("tinyint")
            records += [tuple(r) for r in frame.select(op, *columns).collect()]
        return records


def without_time(records: list[Row]) -> list[Row]:
    return sorted((r[:-1] for r in records), key=repr)


def expected_upsert(rows: list[Row]) -> list[Row]:
    """The upsert query's result, computed here from the inserted rows."""
    groups: dict[tuple[str, int], list[Row]] = {}
    for row in rows:
        if row[3] is None or row[3] != 13:
            groups.setdefault((row[0], row[1]), []).append(row)
    result = []
    for (k, g), members in groups.items():
        vs = [r[2] for r in members if r[2] is not None]
        ws = [r[3] for r in members if r[3] is not None]
        total = sum(vs, D(0)).quantize(D("0.01")) if vs else None
        if not (len(members) <= 3 or (total is not None and total > 100)):
            continue
        mean = (total / len(vs)).quantize(D("0.000001"), ROUND_HALF_UP) if vs and total is not None else None
        result.append((k, g, len(members), len(vs), total, min(ws, default=None), max(ws, default=None), mean))
    return result


def started(client: ConfluentClient, service: InProcessService, sql: str, *, incremental: bool) -> str:
    name = unique("ga-agg")
    run(client, name, sql, "RUNNING")
    job = service.engine._jobs[name]
    assert (job.sinks[0].aggregation is not None) is incremental
    return name


def test_an_upsert_aggregate_writes_what_recomputing_writes(local_service: InProcessService,
                                                            client: ConfluentClient, spark: SparkSession) -> None:
    run(client, unique("ga-ddl"), "CREATE TABLE ga_src (k STRING, g INT, v DECIMAL(10, 2), w INT) "
                                  "DISTRIBUTED INTO 2 BUCKETS")
    run(client, unique("ga-ddl"), f"CREATE TABLE ga_inc {UPSERT_SINK}")
    run(client, unique("ga-ddl"), f"CREATE TABLE ga_re {UPSERT_SINK}")
    insert(client, "ga_src", UPSERT_TICKS[0])
    incremental = started(client, local_service, f"INSERT INTO ga_inc {UPSERT_QUERY}", incremental=True)
    started(client, local_service, f"INSERT INTO ga_re SELECT * FROM ({UPSERT_QUERY}) AS q", incremental=False)
    ours, theirs = Records(local_service, spark, "ga_inc"), Records(local_service, spark, "ga_re")
    inserted: list[Row] = []
    emitted: dict[tuple[Any, ...], Any] = {}  # key -> $rowtime of the last +I/+U written for it
    for number, rows in enumerate(UPSERT_TICKS):
        if number:
            insert(client, "ga_src", rows)
        inserted += rows
        quiesce(local_service.url)
        mine = ours.new()
        assert without_time(mine) == without_time(theirs.new()), f"tick {number}"
        for record in mine:  # a -D carries the time of the row it deletes, as recomputing reads it from the sink
            key = record[1:3]
            if record[0] == 3:
                assert record[-1] == emitted.pop(key)
            else:
                emitted[key] = record[-1]
    assert select(client, "SELECT * FROM ga_inc") == wired(expected_upsert(inserted))
    state = local_service.engine.store.run_state(incremental)
    assert state is not None
    folder = (local_service.data_dir / state.aggregates["0"].path).parent  # the statement's accumulators
    assert any(folder.rglob("*.parquet"))
    client.delete_statement(incremental)
    quiesce(local_service.url)
    assert not folder.exists()


def test_a_retract_aggregate_without_its_keys_sends_flinks_updates(
        local_service: InProcessService, client: ConfluentClient, spark: SparkSession) -> None:
    """Per group a run touches, Flink's GroupAggregate sends +I of a new row, or -U of the old row and +U
    of the new one, even when the sink holds no key; recomputing the query ends with the same table."""
    run(client, unique("ga-ddl"), "CREATE TABLE gr_src (k STRING, w INT) DISTRIBUTED INTO 2 BUCKETS")
    for table in ("gr_inc", "gr_re"):
        run(client, unique("ga-ddl"), f"CREATE TABLE {table} (n BIGINT, hi INT) WITH ('changelog.mode' = 'retract')")
    query = "SELECT COUNT(*) AS n, MAX(w) AS hi FROM gr_src GROUP BY k"
    ticks: list[list[Row]] = [
        [("a", 1), (None, 2), ("b", None)],
        [("a", 2), ("b", 1)],  # (1, 1) -> (2, 2) for a and (1, None) -> (2, 1) for b
        [(None, None), ("c", None), ("a", 0)],
        [(f"k{i}", i % 4) for i in range(60)],
    ]
    insert(client, "gr_src", ticks[0])
    started(client, local_service, f"INSERT INTO gr_inc {query}", incremental=True)
    started(client, local_service, f"INSERT INTO gr_re SELECT * FROM ({query}) AS q", incremental=False)
    ours, theirs = Records(local_service, spark, "gr_inc"), Records(local_service, spark, "gr_re")
    inserted: list[Row] = []
    recomputed: Counter[Row] = Counter()
    for number, rows in enumerate(ticks):
        if number:
            insert(client, "gr_src", rows)
        before = group_results(inserted)
        inserted += rows
        after = group_results(inserted)
        quiesce(local_service.url)
        sent: list[Row] = []
        for key, row in after.items():
            if key not in before:
                sent.append((INSERT, *row))
            elif before[key] != row:
                sent += [(UPDATE_BEFORE, *before[key]), (UPDATE_AFTER, *row)]
        assert without_time(ours.new()) == sorted(sent, key=repr), f"tick {number}"
        for op, *row in without_time(theirs.new()):
            recomputed[tuple(row)] += -1 if op in (UPDATE_BEFORE, DELETE) else 1
        assert +recomputed == Counter(after.values()), f"tick {number}"
    assert select(client, "SELECT * FROM gr_inc") == wired(list(group_results(inserted).values()))


def group_results(rows: list[Row]) -> dict[Any, Row]:
    """COUNT(*) and MAX(w) per k, computed here."""
    groups: dict[Any, list[Any]] = {}
    for k, w in rows:
        groups.setdefault(k, []).append(w)
    return {k: (len(ws), max((w for w in ws if w is not None), default=None)) for k, ws in groups.items()}


class Offline:
    """A service's store, logs and jobs without its engine thread, one aggregate statement over an
    append source: the test appends records and drives the runs."""

    NAME = "cr-agg"

    def __init__(self, spark: SparkSession, data_dir: Path) -> None:
        self.spark, self.data_dir = spark, data_dir
        self.store = Store(data_dir / "service.db")
        self.logs = TableLogs(data_dir / "tables", spark, self.store)
        self.jobs = Jobs(spark, self.store, self.logs)
        ddl = Ddl(self.store, self.logs)
        for sql in ("CREATE TABLE cr_src (k STRING, v INT) DISTRIBUTED INTO 2 BUCKETS",
                    "CREATE TABLE cr_agg (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
                    "DISTRIBUTED BY HASH(k) INTO 2 BUCKETS"):
            ddl.run(parse_one_statement(sql, "ddl"), {})
        self.source, self.sink = self.table("cr_src"), self.table("cr_agg")
        self.job = self.jobs.compile(self.NAME, parse_one_statement(
            "INSERT INTO cr_agg SELECT k, COUNT(*), SUM(v) FROM cr_src GROUP BY k", self.NAME), {})
        assert self.job.sinks[0].aggregation is not None
        self.store.commit_run(self.NAME, self.jobs.start(self.job, None), [])

    def table(self, name: str) -> TableDef:
        found = self.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=name))
        assert found is not None
        return found

    def append(self, rows: list[tuple[str, int]], op: int = 0) -> list[str]:
        """Write records straight into the source's log; the batch's files."""
        frame = self.spark.createDataFrame(rows, "k string, v int").select(
            "*", F.current_timestamp().alias(ROWTIME), F.lit(op).cast("tinyint").alias(OP))
        batch = self.logs.write(self.source, frame, producer=None)
        assert batch is not None
        self.store.append_batches([batch])
        return batch.files

    def advance(self, commit: bool = True) -> None:
        state = self.store.run_state(self.NAME)
        assert state is not None
        output = self.jobs.advance(self.job, state)
        if commit:
            self.store.commit_run(self.NAME, output.state, output.batches)

    def held(self) -> dict[str, tuple[int, int]]:
        return {r["k"]: (r["n"], r["total"]) for r in self.jobs.views.state(self.sink).collect()}

    def folders(self) -> set[Path]:
        return {p for p in (self.data_dir / STATE_DIR).glob("*/*") if p.is_dir()}

    def referenced(self) -> set[Path]:
        state = self.store.run_state(self.NAME)
        assert state is not None
        return {self.data_dir / a.path for a in state.aggregates.values()}


@pytest.fixture()
def offline(spark: SparkSession, tmp_path: Path) -> Iterator[Offline]:
    service = Offline(spark, tmp_path)
    yield service
    service.store.close()


def test_a_run_that_never_commits_counts_nothing(offline: Offline) -> None:
    offline.append([("a", 1), ("b", 2)])
    offline.advance()
    offline.append([("a", 10), ("c", 3)])
    committed = offline.referenced()
    offline.advance(commit=False)  # the service stops before this run commits: its batches and state never count
    lost = offline.folders() - committed
    assert lost
    offline.logs.remove_unregistered()  # what a restart does with the batches
    offline.advance()
    offline.append([("b", 5)])
    offline.advance()
    assert not lost & offline.folders()
    assert offline.referenced() <= offline.folders()
    assert offline.held() == {"a": (2, 11), "b": (2, 7), "c": (1, 3)}


def test_a_run_reads_only_the_new_records(offline: Offline) -> None:
    history = offline.append([("a", 1), ("b", 2), ("a", 4)])
    offline.advance()
    for file in history:  # history that is read again fails the run
        (offline.data_dir / file).unlink()
    offline.append([("a", 10), ("c", 3)])
    offline.advance()
    assert offline.held() == {"a": (3, 15), "b": (1, 2), "c": (1, 3)}


def test_records_retracted_from_an_append_source_start_the_accumulators_over(offline: Offline) -> None:
    offline.append([("a", 1), ("b", 2), ("a", 4)])
    offline.advance()
    offline.append([("a", 4)], op=3)  # a -D written into the append table: recomputing cancels the row
    offline.append([("c", 3)])
    offline.advance()
    assert offline.held() == {"a": (1, 1), "b": (1, 2), "c": (1, 3)}
    offline.append([("b", 1)])
    offline.advance()
    assert offline.held() == {"a": (1, 1), "b": (2, 3), "c": (1, 3)}


ELIGIBILITY = [
    ("SELECT k, COUNT(*), SUM(v) FROM el_src GROUP BY k", True),
    ("SELECT k, COUNT(v), MIN(v) FROM (SELECT UPPER(k) AS k, v FROM el_src WHERE v > 0) GROUP BY k", True),
    ("SELECT k, COUNT(DISTINCT v), SUM(v) FROM el_src GROUP BY k", False),  # DISTINCT needs the values seen
    ("SELECT s.k, COUNT(*), SUM(s.v) FROM el_src AS s JOIN el_other AS o ON s.k = o.k GROUP BY s.k", False),
    ("SELECT k, COUNT(*), SUM(v) FROM el_src WHERE k IN (SELECT k FROM el_other) GROUP BY k", False),
    ("SELECT k, COUNT(*), SUM(v) FROM el_upsert GROUP BY k", False),  # its updates retract from the groups
    ("SELECT * FROM (SELECT k, COUNT(*) AS n, SUM(v) AS t FROM el_src GROUP BY k)", False),
    ("SELECT CAST(COUNT(*) AS STRING), COUNT(*), SUM(v) FROM el_src GROUP BY k", False),  # the sink's key is no group
]


@pytest.mark.parametrize(("query", "incremental"), ELIGIBILITY)
def test_which_aggregates_run_incrementally(spark: SparkSession, tmp_path: Path, query: str,
                                            incremental: bool) -> None:
    store = Store(tmp_path / "service.db")
    logs = TableLogs(tmp_path / "tables", spark, store)
    jobs = Jobs(spark, store, logs)
    ddl = Ddl(store, logs)
    for sql in ("CREATE TABLE el_src (k STRING, v INT)", "CREATE TABLE el_other (k STRING)",
                "CREATE TABLE el_upsert (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED)",
                "CREATE TABLE el_agg (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)"):
        ddl.run(parse_one_statement(sql, "ddl"), {})
    job = jobs.compile("el", parse_one_statement(f"INSERT INTO el_agg {query}", "el"), {})
    assert (job.sinks[0].aggregation is not None) is incremental
    store.close()
