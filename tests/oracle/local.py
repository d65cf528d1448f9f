"""The local side of the oracle: the same cases through the local service's REST API.

Every case gets a database of its own (`sql.current-database`), so table
names stay as the case writes them. The steps run for all cases at once (the
engine has one thread; submitting together keeps it busy): create the tables,
insert `rows`, deploy the DMLs, quiesce, insert `more_rows`, quiesce. The sink
is then read as the checks read a local sink (LocalData, read-only): its
current rows and the changelog records the statement wrote. A step waits for its
statements with one listing per poll, filtered by the pass's label (a GET per
statement and poll kept the service's threads busy beside the engine's).
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.local.catalog import TableId
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.local.settings import IDENTITY
from tests.integration.support import client_for, quiesce
from tests.oracle.corpus import Case
from tests.oracle.literals import sql_literal, typed

KINDS = {0: "I", 1: "UB", 2: "UA", 3: "D"}
_names = itertools.count()
_passes = itertools.count()
PASS_LABEL = "oracle-pass"  # the label of one run_local's statements (its waits list only those)
POLL_SECONDS, WAIT_SECONDS = 0.3, 300.0


@dataclass
class LocalOutcome:
    """What the local service made of a case: an error (phase setup/deploy/run), or the sink it holds."""

    error: str | None = None
    phase: str | None = None
    columns: list[tuple[str, str]] = field(default_factory=list)
    rows: DataFrame | None = None  # the sink's current rows (stored columns)
    records: DataFrame | None = None  # every record the sink received, with its changelog op
    seconds: float = 0.0


@dataclass
class _Run:
    case: Case
    database: str
    label: str = ""  # the pass's PASS_LABEL value
    pending: list[str] = field(default_factory=list)  # statements to wait for in the current step
    submitted: list[str] = field(default_factory=list)  # every statement of the case, deleted once read
    dml: str | None = None
    outcome: LocalOutcome = field(default_factory=LocalOutcome)


def database_of(case: Case) -> str:
    return f"oracle_{case.name}"


def insert_sql(case: Case, table: str, rows: list[list[object]]) -> str:
    columns = case.table(table).insertable
    values = ", ".join("(" + ", ".join(sql_literal(typed(v, c.type), c.type) for v, c in zip(row, columns, strict=True))
                       + ")" for row in rows)
    names = ", ".join(f"`{c.name}`" for c in columns)
    return f"INSERT INTO `{table}` ({names}) VALUES {values}"


def run_local(cases: list[Case], url: str, data_dir: Path, spark: SparkSession,
              phases: dict[str, float] | None = None) -> dict[str, LocalOutcome]:
    """Every case on the local service at `url` (whose data dir is `data_dir`); `phases` gets the
    seconds each step took (where the time goes)."""
    started = time.monotonic()
    lap = _Lap(phases if phases is not None else {})
    client = client_for(url)
    label = f"p{os.getpid()}-{next(_passes)}"
    runs = [_Run(case=c, database=database_of(c), label=label) for c in cases]
    for run in runs:
        for table in run.case.tables:
            _submit(client, run, "ddl", table.ddl)
    _wait(client, runs, "setup", ("COMPLETED",))
    lap("create tables")
    _insert(client, runs, more=False)
    lap("insert rows")
    for run in _live(runs):
        run.dml = _submit(client, run, "dml", run.case.dml)
    _wait(client, runs, "deploy", ("RUNNING", "COMPLETED"))
    lap("deploy")
    quiesce(url)
    lap("first run")
    _insert(client, runs, more=True)
    lap("insert more_rows")
    quiesce(url)
    lap("second run")
    _failed_at_run(client, runs)
    data = LocalData(data_dir, spark)
    try:
        for run in _live(runs):
            _read(data, run)
    finally:
        data.close()
        for run in runs:  # the tables stay; a service holding every statement of a long run slows down
            for name in run.submitted:
                client.delete_statement(name, wait=False)
    lap("read sinks")
    elapsed = (time.monotonic() - started) / max(len(runs), 1)
    for run in runs:
        run.outcome.seconds = elapsed
    return {run.case.name: run.outcome for run in runs}


class _Lap:
    """Adds the seconds since the last lap to a named step."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases, self.last = phases, time.monotonic()

    def __call__(self, step: str) -> None:
        now = time.monotonic()
        self.phases[step] = self.phases.get(step, 0.0) + now - self.last
        self.last = now


def _live(runs: list[_Run]) -> list[_Run]:
    return [r for r in runs if r.outcome.error is None]


def _submit(client: ConfluentClient, run: _Run, kind: str, sql: str) -> str:
    name = f"oracle-{run.case.name.replace('_', '-')}-{kind}-{next(_names)}"[:72]
    client.create_statement(name, sql, properties={"sql.current-database": run.database},
                            labels={PASS_LABEL: run.label})
    run.pending.append(name)
    run.submitted.append(name)
    return name


def _wait(client: ConfluentClient, runs: list[_Run], phase: str, wanted: tuple[str, ...]) -> None:
    """Wait for every pending statement; the first FAILED one is its case's outcome."""
    pending = {name: run for run in runs for name in run.pending}
    for run in runs:
        run.pending = []
    deadline = time.monotonic() + WAIT_SECONDS
    while pending:
        label = next(iter(pending.values())).label
        for statement in client.list_statements(label_selector={PASS_LABEL: label}):
            run = pending.get(statement.name)
            if run is None or statement.phase not in (*wanted, "FAILED"):
                continue
            if statement.phase == "FAILED" and run.outcome.error is None:
                run.outcome.error, run.outcome.phase = statement.status.detail or "FAILED", phase
            del pending[statement.name]
        if pending and time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} oracle statements not {'/'.join(wanted)} after {WAIT_SECONDS:.0f} s: "
                               f"{', '.join(sorted(pending)[:5])}")
        if pending:
            time.sleep(POLL_SECONDS)


def _insert(client: ConfluentClient, runs: list[_Run], *, more: bool) -> None:
    """A case's rows of one batch in one statement (a STATEMENT SET for several tables): they land in
    one commit, so the query's next run reads them all, as Flink's job reads its input files."""
    for run in _live(runs):
        inserts = [insert_sql(run.case, table, rows)
                   for table, rows in (run.case.more_rows if more else run.case.rows).items() if rows]
        if len(inserts) == 1:
            _submit(client, run, "insert", inserts[0])
        elif inserts:
            _submit(client, run, "insert", "EXECUTE STATEMENT SET BEGIN " + "; ".join(inserts) + "; END")
    _wait(client, runs, "setup", ("COMPLETED",))


def _failed_at_run(client: ConfluentClient, runs: list[_Run]) -> None:
    """A DML that failed on its input once deployed: that is its case's outcome."""
    dmls = {run.dml: run for run in _live(runs) if run.dml is not None}
    if not dmls:
        return
    for statement in client.list_statements(label_selector={PASS_LABEL: runs[0].label}):
        run = dmls.get(statement.name)
        if run is not None and statement.phase == "FAILED":
            run.outcome.error, run.outcome.phase = statement.status.detail or "FAILED", "run"


def _read(data: LocalData, run: _Run) -> None:
    table = data.store.table(TableId(catalog=IDENTITY.environment_id, database=run.database, name=run.case.sink))
    if table is None:
        run.outcome.error, run.outcome.phase = f"sink {run.case.sink} not found", "read"
        return
    run.outcome.columns = [(c.name, c.type) for c in table.stored_columns]
    run.outcome.rows = data.current_rows(table)
    run.outcome.records = data.logs.read(table)
