"""Evaluate the checks of deployed tables: which apply, against which statement, on which reader.

The reads of one table's checks share one reader snapshot, so a statement's
progress and the sink rows it wrote are seen at the same point even while
the service keeps running. A check that can not be evaluated fails, saying why.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime

from pyspark.errors import PySparkException

from shift_left_dagster.checks import rules
from shift_left_dagster.checks.models import CheckName, CheckOutcome, ChecksSettings
from shift_left_dagster.checks.readers import SinkReader
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError, NotFound
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.deploy.plan import TABLE_LABEL
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
    only: Collection[tuple[str, CheckName]] | None = None,
    physical: Mapping[str, str] | None = None,
) -> list[CheckOutcome]:
    """Outcomes of every enabled check of every table (restricted to `only` when given), in order.

    `physical` maps a table to the name it is deployed as, when not its own (a blue/green version).
    """
    outcomes: list[CheckOutcome] = []
    for table in tables:
        wanted = [c for c in applicable(table) if c in settings.enabled and (only is None or (table.name, c) in only)]
        if not wanted:
            continue
        sink = (physical or {}).get(table.name, table.name)
        with reader.snapshot():
            for check in wanted:
                outcomes.append(evaluate(check, table, sink, reader, statements.get(table.name), settings))
    return outcomes


def evaluate(check: CheckName, table: FlinkTable, sink: str, reader: SinkReader, statement: Statement | None,
             settings: ChecksSettings) -> CheckOutcome:
    try:
        passed, message, metadata = _verdict(check, table, sink, reader, statement, settings)
    except (ValueError, PySparkException, ConfluentError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        passed, message, metadata = False, f"could not be evaluated: {first_line}", {"error": type(error).__name__}
    if sink != table.name:
        metadata["sink_table"] = sink
    return CheckOutcome(table=table.name, check=check, passed=passed, blocking=check in settings.blocking,
                        message=message, metadata=metadata)


def _verdict(check: CheckName, table: FlinkTable, sink: str, reader: SinkReader, statement: Statement | None,
             settings: ChecksSettings) -> rules.Verdict:
    samples = settings.sample_rows
    if check == CheckName.UNIQUE_PRIMARY_KEY:
        return rules.unique_primary_key(reader.live_records(sink), table.primary_key, samples)
    if check == CheckName.SCHEMA_MATCHES_DDL:
        assert table.ddl is not None
        return rules.schema_matches(table.ddl.columns, reader.rows(sink).schema, reader.ignore_columns)
    if check == CheckName.STATEMENT_HEALTHY:
        return rules.statement_healthy(statement, reader.lag(statement) if statement else None,
                                       settings.max_lag_records)
    if statement is None:
        return False, "no DML statement of this table was found: nothing to reconcile against", {}
    return rules.reconcile(reader.expected(table, sink, statement), reader.rows(sink), table.primary_key, samples)
