"""Evaluate the checks of deployed tables: which apply, against which statement, on which reader.

The reads of one table's checks share one reader snapshot, so a statement's
progress and the sink rows it wrote are seen at the same point even while
the service keeps running. A check that can not be evaluated fails, saying why.

What each check means, and when it passes:

- Before the data checks (unique_primary_key, reconciled) of a table read
  anything, its statement may catch up: while it is RUNNING and behind its
  sources, they wait up to `ChecksSettings.catch_up_seconds` (0: not at all)
  for it to read what they hold. Their metadata carries the lag before the
  wait (`lag_records_before_wait`), the wait (`waited_seconds`) and the lag
  when the data was read (`lag_records`). An unknown lag (files sinks) is
  not waited on.
- Every data check says how many rows it looked at, in its message and in
  `compared_rows`. Comparing no row passes only when the statement's
  sources hold no data either ("its sources hold no data yet"). While the
  statement is still behind, it fails (ERROR): nothing was verified. When
  the statement has read everything and its DML yields no row (or whether
  the sources hold data is unknown) it does not pass either, as a WARN that
  never blocks (blocking=False on that outcome).
- unique_primary_key: no key held by more than one live record of the sink
  (an upsert table: the latest record per key and partition). Compared
  rows: the live records.
- reconciled: the sink's rows equal the DML run over its parents as of the
  offsets the statement has processed, by primary key (full outer join),
  else as multisets; values compare as Flink compares them
  (shift_left_dagster.values, with the DDL's types). Compared rows: keys on
  either side (by key), copies of distinct rows (multisets).
- schema_matches_ddl: the sink's columns and Spark types are those the DDL
  declares; compares columns (`compared_columns`), never waits, never reads rows.
- statement_healthy: the DML statement is RUNNING or COMPLETED, and no
  further behind than `max_lag_records` when set; reports the lag as read
  after the data checks' wait.
- data tests (checks/data_tests.py): the team's query returns no row;
  compared rows: the tested table's rows. A data check like the two above
  (it waits, and comparing nothing is judged the same way); it blocks when
  its declared severity is error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime

from pyspark.errors import PySparkException

import shift_left_dagster.checks.rules as rules
from shift_left_dagster.checks.catch_up import CatchUp, catch_up, total
from shift_left_dagster.checks.data_tests import DataTest, run_data_test
from shift_left_dagster.checks.models import DATA_CHECKS, CheckName, CheckOutcome, ChecksSettings, Severity
from shift_left_dagster.checks.readers import SinkReader
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError, NotFound
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.deploy.live import CODE_VERSION_LABEL, TABLE_LABEL
from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.deploy.rewrite import reads_from
from shift_left_dagster.deploy.stretches import split
from shift_left_dagster.project.inventory import FlinkTable

_EPOCH = datetime.fromtimestamp(0, UTC)


def applicable(table: FlinkTable) -> list[CheckName]:
    """Checks that mean something for a table: a key to be unique, a DML to reconcile, a DDL to match."""
    means = {CheckName.UNIQUE_PRIMARY_KEY: bool(table.primary_key), CheckName.RECONCILED: table.dml is not None,
             CheckName.SCHEMA_MATCHES_DDL: table.ddl is not None, CheckName.STATEMENT_HEALTHY: table.dml is not None}
    return [check for check in CheckName if means[check]]


def find_dml_statements(client: ConfluentClient, tables: Sequence[FlinkTable], env: str,
                        physical: Mapping[str, str] | None = None) -> dict[str, Statement | None]:
    """Each table's DML statement: the one the plan names for the table's deployed name (`physical`:
    a blue/green version), else the newest labelled with the table (one listing, only if needed)."""
    found: dict[str, Statement | None] = {}
    labelled: dict[str, list[Statement]] | None = None
    for table in tables:
        if not table.dml:
            continue
        name = statement_name(env, table.product, "dml", (physical or {}).get(table.name, table.name))
        try:
            statement: Statement | None = client.get_statement(name)
        except NotFound:
            statement = None
        if statement is None or statement.phase == Phase.DELETING:
            if labelled is None:
                labelled = {}
                for live in client.list_statements():
                    if live.phase != Phase.DELETING:
                        labelled.setdefault((live.metadata.labels or {}).get(TABLE_LABEL, ""), []).append(live)
            candidates = labelled.get(table.name, [])
            statement = max(candidates, key=lambda s: s.metadata.created_at or _EPOCH) if candidates else None
        found[table.name] = statement
    return found


def run_checks(
    tables: Sequence[FlinkTable],
    reader: SinkReader,
    statements: Mapping[str, Statement | None],
    settings: ChecksSettings,
    only: Collection[tuple[str, str]] | None = None,
    physical: Mapping[str, str] | None = None,
    data_tests: Mapping[str, Sequence[DataTest]] | None = None,
) -> list[CheckOutcome]:
    """Outcomes of every enabled check and declared data test of every table (restricted to `only`,
    (table, check name) pairs, when given), in order.

    `physical` maps a table to the name it is deployed as, when not its own (a blue/green version).
    """
    outcomes: list[CheckOutcome] = []
    for table in tables:
        checks: list[CheckName | DataTest] = [c for c in applicable(table) if c in settings.enabled]
        checks += (data_tests or {}).get(table.name, [])
        wanted = [c for c in checks if only is None or (table.name, _name(c)) in only]
        if not wanted:
            continue
        sink = (physical or {}).get(table.name, table.name)
        statement = statements.get(table.name)
        reads = any(isinstance(c, DataTest) or c in DATA_CHECKS for c in wanted)
        waited = catch_up(reader, statement, settings.catch_up_seconds, settings.catch_up_poll_seconds) \
            if reads else None
        with reader.snapshot(), reader.sized(sink, statement):
            for check in wanted:
                outcomes.append(evaluate(check, table, sink, reader, statement, settings, waited))
    return outcomes


def evaluate(check: CheckName | DataTest, table: FlinkTable, sink: str, reader: SinkReader,
             statement: Statement | None, settings: ChecksSettings, waited: CatchUp | None = None) -> CheckOutcome:
    """One check of one table (`waited`: how its statement caught up before, for the data checks)."""
    severity = Severity.ERROR
    try:
        (passed, message, metadata), severity = _verdict(check, table, sink, reader, statement, settings, waited)
    except (ValueError, PySparkException, ConfluentError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        passed, message, metadata = False, f"could not be evaluated: {first_line}", {"error": type(error).__name__}
    if sink != table.name:
        metadata["sink_table"] = sink
    declared = check.blocking if isinstance(check, DataTest) else check in settings.blocking
    return CheckOutcome(table=table.name, check=_name(check), passed=passed,
                        blocking=declared and severity == Severity.ERROR, severity=severity,
                        message=message, metadata=metadata)


def _name(check: CheckName | DataTest) -> str:
    return check.name if isinstance(check, DataTest) else check.value


def _verdict(check: CheckName | DataTest, table: FlinkTable, sink: str, reader: SinkReader,
             statement: Statement | None, settings: ChecksSettings,
             waited: CatchUp | None) -> tuple[rules.Verdict, Severity]:
    samples = settings.sample_rows
    if isinstance(check, DataTest):
        return _judged(run_data_test(check, reader.rows, sink, samples), reader, statement, waited)
    if check == CheckName.SCHEMA_MATCHES_DDL:
        assert table.ddl is not None
        return rules.schema_matches(table.ddl.columns, reader.rows(sink).schema, reader.ignore_columns), Severity.ERROR
    if check == CheckName.STATEMENT_HEALTHY:
        return rules.statement_healthy(statement, reader.lag(statement) if statement else None,
                                       settings.max_lag_records), Severity.ERROR
    if check == CheckName.RECONCILED and statement is None:
        return (False, "no DML statement of this table was found: nothing to reconcile against", {}), Severity.ERROR
    if check == CheckName.UNIQUE_PRIMARY_KEY:
        verdict = rules.unique_primary_key(reader.live_records(sink), table.primary_key, samples)
    elif statement is not None:
        earlier, _ = split(statement.spec.statement or "")
        if earlier and not reader.separates_stretches:
            return (False, f"not evaluated: the sink holds rows of {len(earlier)} earlier code version(s) (in-place "
                           "replacements) and this reader can not tell them apart by offset", {
                               "code_stretches": len(earlier) + 1}), Severity.WARN
        start = reads_from(statement.spec.statement or "")
        if start is not None and not reader.has_record_times:
            return (False, f"not evaluated: the statement reads its sources from {start:%Y-%m-%d %H:%M:%S} (a "
                           "reprocessed version) and this reader has no record times to tell those records apart",
                    {"reads_from": start.isoformat()}), Severity.WARN
        declared = {c.name: c.type for c in table.ddl.columns} if table.ddl else None
        verdict = rules.reconcile(reader.expected(table, sink, statement), reader.rows(sink), table.primary_key,
                                  samples, declared)
        if earlier:
            versions = [s.code_version or "unknown" for s in earlier] + [_code_version(statement)]
            verdict = (verdict[0], f"{verdict[1]}; {len(versions)} code versions, each stretch recomputed with the "
                                   "SQL that wrote it", {**verdict[2], "code_stretches": versions})
    return _judged(verdict, reader, statement, waited)


def _code_version(statement: Statement) -> str:
    return (statement.metadata.labels or {}).get(CODE_VERSION_LABEL, "unknown") if statement.metadata else "unknown"


def _judged(verdict: rules.Verdict, reader: SinkReader, statement: Statement | None,
            waited: CatchUp | None) -> tuple[rules.Verdict, Severity]:
    """A data check's verdict with the statement's lag, and what comparing no row means (see above)."""
    if statement is None:  # no statement writes it: nothing to catch up with, no sources to speak of
        return verdict, Severity.ERROR
    waited = waited or CatchUp(wait_limit=0.0)
    lag = total(reader.lag(statement))
    verdict[2].update(waited.metadata(), lag_records=lag)
    held = total(reader.source_records(statement)) if not verdict[2].get("compared_rows", 1) else None
    if held is not None:
        verdict[2]["source_records"] = held
    return rules.nothing_compared(verdict, lag, held, waited.describe())
