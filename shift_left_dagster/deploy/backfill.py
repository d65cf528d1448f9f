"""Bounded backfill statements: a table's DML limited to a time window of its sources.

A window [start, end) becomes, on every source table, the hints
'scan.startup.mode'='timestamp' / 'scan.bounded.mode'='timestamp' with the
window's epoch millis, plus a `$rowtime` filter aligned to the window on the
driving table, so the statement reads exactly that history and COMPLETES.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlglot import exp

from shift_left_dagster.deploy.rewrite import with_source_options
from shift_left_dagster.project.analysis import source_tables
from shift_left_dagster.project.parsing import parse_one_statement, to_flink_sql


def epoch_millis(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def window_options(start: datetime, end: datetime | None) -> dict[str, str]:
    """Hints reading [start, end) of a source; with no end, from start on and unbounded."""
    options = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(epoch_millis(start))}
    if end is not None:
        options["scan.bounded.mode"] = "timestamp"
        options["scan.bounded.timestamp-millis"] = str(epoch_millis(end))
    return options


def _literal(moment: datetime) -> exp.Expression:
    """TO_TIMESTAMP_LTZ(<epoch millis>, 3): exact, and free of session time zones."""
    return exp.Anonymous(
        this="TO_TIMESTAMP_LTZ", expressions=[exp.Literal.number(epoch_millis(moment)), exp.Literal.number(3)]
    )


def windowed_dml(sql: str, start: datetime, end: datetime | None) -> str:
    """The DML reading only [start, end) of its sources: hints on every source, $rowtime filter on the driver."""
    tree = parse_one_statement(sql).tree
    sources = {t.name for t in source_tables(tree)}
    hinted = with_source_options(sql, {name: window_options(start, end) for name in sources})
    tree = parse_one_statement(hinted).tree
    for select in tree.find_all(exp.Select):
        driver = select.args.get("from_")
        table = driver.this if driver is not None else None
        if not isinstance(table, exp.Table) or table.name not in sources:
            continue  # reads a CTE or subquery: that inner SELECT gets the filter
        rowtime = exp.column("$rowtime", table=table.alias_or_name)
        condition = rowtime >= _literal(start)
        if end is not None:
            condition = condition.and_(rowtime < _literal(end))
        select.where(condition, copy=False)
    return to_flink_sql(tree)
