"""No vacuous verdicts: data checks wait for their statement to catch up, say how many rows they
compared, and never pass over nothing while the sources hold data.

The first tests drive the rules with a scripted reader and clock; the last
ones use a local service whose engine only moves when the test lets it, so
a statement is behind its sources for as long as the test wants.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.checks import CheckName, CheckOutcome, ChecksSettings, LocalSinkReader, run_checks
from shift_left_dagster.checks.catch_up import catch_up
from shift_left_dagster.checks.models import Severity
from shift_left_dagster.checks.rules import nothing_compared
from shift_left_dagster.confluent.models import Statement
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.project.inventory import FlinkTable, build_inventory
from tests.integration.support import client_for, run, unique

pytestmark = pytest.mark.spark


def statement(phase: str = "RUNNING", name: str = "dml") -> Statement:
    return Statement.model_validate({"name": name, "spec": {"statement": "INSERT INTO t SELECT * FROM s"},
                                     "status": {"phase": phase}})


@dataclass
class ScriptedReader:
    """A reader whose lag follows a script (one value per read) over fixed frames."""

    expected_rows: DataFrame | None = None
    actual_rows: DataFrame | None = None
    lags: list[int] = field(default_factory=list)
    held: int | None = 0
    ignore_columns: list[str] = field(default_factory=list)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        yield

    def sized(self, sink: str, statement: Statement | None) -> AbstractContextManager[None]:
        return nullcontext()

    def rows(self, table: str) -> DataFrame:
        assert self.actual_rows is not None
        return self.actual_rows

    def live_records(self, table: str) -> DataFrame:
        return self.rows(table)

    def expected(self, table: FlinkTable, sink: str, statement: Statement) -> DataFrame:
        assert self.expected_rows is not None
        return self.expected_rows

    def lag(self, statement: Statement) -> dict[str, int] | None:
        value = self.lags.pop(0) if len(self.lags) > 1 else self.lags[0]
        return {"src": value}

    def source_records(self, statement: Statement) -> dict[str, int] | None:
        return None if self.held is None else {"src": self.held}

    def close(self) -> None:
        return None


class Clock:
    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_catch_up_waits_until_the_statement_read_everything() -> None:
    clock = Clock()
    waited = catch_up(ScriptedReader(lags=[5, 3, 0]), statement(), 10.0, 0.5, clock, clock.sleep)
    assert (waited.lag_before, waited.lag_after, waited.timed_out) == (5, 0, False)
    assert clock.sleeps == [0.5, 0.5] and waited.waited_seconds == 1.0


def test_catch_up_is_bounded() -> None:
    clock = Clock()
    waited = catch_up(ScriptedReader(lags=[5]), statement(), 2.0, 0.5, clock, clock.sleep)
    assert (waited.lag_before, waited.lag_after, waited.timed_out) == (5, 5, True)
    assert clock.now == 2.0 and "after waiting 2 s" in waited.describe()


def test_catch_up_does_not_wait_for_a_statement_that_will_not_move() -> None:
    clock = Clock()
    for phase in ("STOPPED", "FAILED", "COMPLETED"):
        waited = catch_up(ScriptedReader(lags=[5]), statement(phase), 10.0, 0.5, clock, clock.sleep)
        assert waited.lag_after == 5 and not waited.timed_out
    assert clock.sleeps == []


def test_what_comparing_no_row_means() -> None:
    empty = (True, "sink matches its DML over 0 rows compared", {"compared_rows": 0})
    some = (True, "sink matches its DML over 3 rows compared", {"compared_rows": 3})
    assert nothing_compared(some, 4, 10, "waited") == (some, Severity.ERROR)
    (passed, message, _), severity = nothing_compared(empty, 4, 10, "after waiting 60 s")
    assert (passed, severity) == (False, Severity.ERROR)
    assert "0 rows compared while the statement is 4 records behind its sources (after waiting 60 s)" in message
    (passed, message, _), severity = nothing_compared(empty, 0, 10, "waited 0 s")
    assert (passed, severity) == (False, Severity.WARN) and "hold 10 records, all read" in message
    (passed, message, _), severity = nothing_compared(empty, 0, None, "")
    assert (passed, severity) == (False, Severity.WARN) and "unknown" in message
    (passed, message, _), severity = nothing_compared(empty, 0, 0, "")
    assert passed and "its sources hold no data yet" in message


def table(name: str = "t", key: list[str] | None = None) -> FlinkTable:
    from shift_left_dagster.project.analysis import Column, DdlInfo, DmlInfo, StateForm

    return FlinkTable(name=name, type="fact", product="p", folder=f"pipelines/{name}", code_version="x",
                      ddl=DdlInfo(table=name, columns=[Column(name="id", type="STRING"), Column(name="v", type="INT")],
                                  primary_key=key or []),
                      dml=DmlInfo(tables_written=[name], tables_read=["s"], state_form=StateForm.STATELESS))


def test_a_statement_behind_with_the_wait_disabled_fails_reconciled(spark: SparkSession) -> None:
    empty = spark.createDataFrame([], "id STRING, v INT")
    reader = ScriptedReader(expected_rows=empty, actual_rows=empty, lags=[33], held=33)
    settings = ChecksSettings(catch_up_seconds=0, enabled=[CheckName.RECONCILED, CheckName.UNIQUE_PRIMARY_KEY])
    outcomes = {o.check: o for o in run_checks([table(key=["id"])], reader, {"t": statement()}, settings)}
    for check in (CheckName.RECONCILED, CheckName.UNIQUE_PRIMARY_KEY):
        outcome = outcomes[check]
        assert not outcome.passed and outcome.blocking and outcome.severity == Severity.ERROR
        assert "0 rows compared while the statement is 33 records behind" in outcome.message
        assert "catch-up wait is disabled" in outcome.message
        assert outcome.metadata["compared_rows"] == 0 and outcome.metadata["lag_records"] == 33


def test_a_dml_that_yields_nothing_from_read_data_is_a_warning(spark: SparkSession) -> None:
    empty = spark.createDataFrame([], "id STRING, v INT")
    reader = ScriptedReader(expected_rows=empty, actual_rows=empty, lags=[0], held=7)
    settings = ChecksSettings(enabled=[CheckName.RECONCILED])
    (outcome,) = run_checks([table()], reader, {"t": statement()}, settings)
    assert not outcome.passed and outcome.severity == Severity.WARN and not outcome.blocking
    assert outcome.metadata["source_records"] == 7 and "yields no row" in outcome.message


def test_messages_say_how_many_rows_were_compared(spark: SparkSession) -> None:
    rows = spark.createDataFrame([("a", 1), ("b", 2)], "id STRING, v INT")
    reader = ScriptedReader(expected_rows=rows, actual_rows=rows, lags=[0])
    outcomes = {o.check: o for o in run_checks([table(key=["id"])], reader, {"t": statement()},
                                               ChecksSettings(enabled=[CheckName.RECONCILED,
                                                                       CheckName.UNIQUE_PRIMARY_KEY]))}
    assert outcomes[CheckName.RECONCILED].passed
    assert "2 rows compared (2 expected, 2 actual)" in outcomes[CheckName.RECONCILED].message
    assert outcomes[CheckName.UNIQUE_PRIMARY_KEY].message == "every primary key of 2 live rows is unique"
    assert all(o.metadata["compared_rows"] == 2 for o in outcomes.values())


# --- a real statement behind its sources ----------------------------------------------------------

SOURCE_ROWS = [("a", 1), ("b", -2), ("c", 3), ("d", 0), ("e", 5)]


@dataclass
class Behind:
    service: InProcessService
    tables: dict[str, FlinkTable]
    statements: dict[str, Statement]
    spark: SparkSession
    ticks: threading.Event  # the engine advances statements only while set

    def hold(self) -> None:
        """Stop the engine advancing statements (once its current step, if any, has ended)."""
        self.ticks.clear()
        self.service.engine.quiesce(timeout=60)

    def release(self) -> None:
        self.ticks.set()
        self.service.engine.wake()

    def outcomes(self, **settings: object) -> dict[tuple[str, str], CheckOutcome]:
        reader = LocalSinkReader(LocalData(self.service.data_dir, self.spark))
        try:
            ordered = [self.tables[name] for name in ("cu_doubled", "cu_big")]  # cu_doubled waits first
            found = run_checks(ordered, reader, self.statements, ChecksSettings(**settings))
        finally:
            reader.close()
        return {(o.table, o.check): o for o in found}

    def write_source(self, rows: list[tuple[str, int]]) -> None:
        """Append records to cu_src's log without waking the engine (as a producer would)."""
        engine = self.service.engine
        definition = next(t for t in engine.store.tables() if t.name == "cu_src")
        frame = self.spark.createDataFrame(rows, "id STRING, amount INT")
        batch = engine.logs.write(definition, frame.withColumn(ROWTIME, F.current_timestamp())
                                  .withColumn(OP, F.lit(INSERT).cast("tinyint")), producer=None)
        assert batch is not None
        engine.store.append_batches([batch])


def write_project(root: Path) -> dict[str, FlinkTable]:
    sinks = {
        "cu_doubled": "SELECT id, amount * 2 AS doubled FROM cu_src WHERE amount > 0",
        "cu_big": "SELECT id, amount AS doubled FROM cu_src WHERE amount > 1000",  # yields nothing
    }
    for name, query in sinks.items():
        folder = root / "pipelines" / "facts" / "cu" / name / "sql-scripts"
        folder.mkdir(parents=True)
        (folder / f"ddl.{name}.sql").write_text(
            f"CREATE TABLE IF NOT EXISTS {name} (id STRING, doubled INT, PRIMARY KEY (id) NOT ENFORCED) "
            f"DISTRIBUTED BY HASH(id) INTO 1 BUCKETS WITH ('changelog.mode' = 'upsert');\n")
        (folder / f"dml.{name}.sql").write_text(f"INSERT INTO {name} {query};\n")
    return build_inventory(root / "pipelines", use_cache=False).tables


@pytest.fixture(scope="module")
def behind(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Behind]:
    """cu_doubled and cu_big RUNNING over an empty cu_src; the engine advances them only when let."""
    root = tmp_path_factory.mktemp("catch-up")
    tables = write_project(root)
    with InProcessService(root / "service", spark_factory=lambda: spark, tick_seconds=3600) as service:
        client = client_for(service.url)
        client.settings.poll.initial = client.settings.poll.step = 0.05
        run(client, unique("cu-ddl"), "CREATE TABLE cu_src (id STRING, amount INT) DISTRIBUTED INTO 1 BUCKETS")
        statements = {}
        for name, entry in tables.items():
            run(client, unique("cu-ddl"), entry.ddl_sql or "")
            statements[name] = run(client, unique(f"cu-{name.replace('_', '-')}"), entry.dml_sql or "", "RUNNING")
        ticks, step = threading.Event(), service.engine._step
        ticks.set()
        service.engine._step = lambda: step() if ticks.is_set() else False  # type: ignore[method-assign]
        yield Behind(service, tables, statements, spark, ticks)


@pytest.mark.service
def test_with_the_wait_disabled_a_statement_behind_is_not_passed_over_nothing(behind: Behind) -> None:
    behind.hold()
    behind.write_source(SOURCE_ROWS)
    outcomes = behind.outcomes(catch_up_seconds=0)
    reconciled = outcomes[("cu_doubled", "reconciled")]
    assert not reconciled.passed and reconciled.blocking
    assert reconciled.metadata["compared_rows"] == 0 and reconciled.metadata["lag_records"] == len(SOURCE_ROWS)
    assert f"0 rows compared while the statement is {len(SOURCE_ROWS)} records behind" in reconciled.message
    assert not outcomes[("cu_doubled", "unique_primary_key")].passed
    healthy = outcomes[("cu_doubled", "statement_healthy")]
    assert healthy.passed and healthy.metadata["lag_records"] == len(SOURCE_ROWS)


@pytest.mark.service
def test_the_data_checks_wait_for_the_statement_then_compare_rows(behind: Behind) -> None:
    tick = threading.Timer(1.0, behind.release)  # the engine's next tick, in a second
    tick.start()
    try:
        outcomes = behind.outcomes(catch_up_seconds=60, catch_up_poll_seconds=0.2)
    finally:
        tick.cancel()
    positive = [(i, a * 2) for i, a in SOURCE_ROWS if a > 0]
    reconciled = outcomes[("cu_doubled", "reconciled")]
    assert reconciled.passed, reconciled.message
    assert reconciled.metadata["compared_rows"] == reconciled.metadata["expected_rows"] == len(positive) == 3
    assert reconciled.metadata["lag_records_before_wait"] == len(SOURCE_ROWS)
    assert reconciled.metadata["lag_records"] == 0 and reconciled.metadata["waited_seconds"] > 0
    assert f"over {len(positive)} rows compared" in reconciled.message
    unique_key = outcomes[("cu_doubled", "unique_primary_key")]
    assert unique_key.passed and unique_key.metadata["compared_rows"] == 3
    # cu_big read every record and its DML keeps none of them: not a pass, a warning that does not block
    big = outcomes[("cu_big", "reconciled")]
    assert not big.passed and big.severity == Severity.WARN and not big.blocking
    assert big.metadata["source_records"] == len(SOURCE_ROWS) and "yields no row" in big.message
