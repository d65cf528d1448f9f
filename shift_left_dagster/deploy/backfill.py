"""Bounded backfill statements: a table's DML limited to a time window of its sources.

A window [start, end) becomes, on every source table, the hints
'scan.startup.mode'='timestamp' / 'scan.bounded.mode'='timestamp' with the
window's epoch millis, plus a `$rowtime` filter aligned to the window on the
driving table, so the statement reads exactly that history and COMPLETES.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlglot import exp

from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.plan import DeploymentPlan, Planner, PlanOptions, finish
from shift_left_dagster.deploy.rewrite import with_source_options
from shift_left_dagster.deploy.steps import RECREATING, Action, PlanKind
from shift_left_dagster.project.analysis import StateForm, source_tables
from shift_left_dagster.project.dialect import TableArgument
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable
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


LATENESS = timedelta(days=1)  # how far out of event-time order a record may sit in a topic


def windowed_dml(sql: str, start: datetime, end: datetime | None, lateness: timedelta = LATENESS) -> str:
    """The DML reading only [start, end) of its sources' event time.

    Records are selected by event time, never by offset order: the scan starts
    `lateness` before the window and ends `lateness` after it (so records written
    out of order are still read), and every driving table gets an exact
    `$rowtime` filter; a window-TVF driver keeps exactly the windows inside
    [start, end) (its windows align with partitions).
    """
    tree = parse_one_statement(sql).tree
    sources = {t.name for t in source_tables(tree)}
    scan_end = end + lateness if end is not None else None
    hinted = with_source_options(sql, {name: window_options(start - lateness, scan_end) for name in sources})
    tree = parse_one_statement(hinted).tree
    for select in tree.find_all(exp.Select):
        driver = select.args.get("from_")
        table = driver.this if driver is not None else None
        if not isinstance(table, exp.Table):
            continue  # reads a subquery: that inner SELECT gets the filter
        conditions: list[exp.Expression] = []
        if table.name in sources:
            rowtime = exp.column("$rowtime", table=table.alias_or_name)
            conditions.append(rowtime >= _literal(start))
            if end is not None:
                conditions.append(rowtime < _literal(end))
        elif any(isinstance(arg.this, exp.Table) and arg.this.name in sources for arg in table.find_all(TableArgument)):
            conditions.append(exp.column("window_start") >= _literal(start))
            if end is not None:
                conditions.append(exp.column("window_end") <= _literal(end))
        if conditions:
            select.where(exp.and_(*conditions), copy=False)
    return to_flink_sql(tree)


class BackfillRefused(ValueError):
    """A window that cannot be rebuilt without a wrong or duplicated result; the message says why."""


def backfill_refusal(table: FlinkTable) -> str | None:
    """Why a bounded window rebuild of this table would be wrong, or None when it is safe.

    Safe: a stateless table with a primary key (its upserts rewrite the same keys:
    running twice = once), or a window-TVF aggregation (its windows align with the
    partition). An append table would get the window twice; any other stateful
    table would overwrite state built over the full history with the window's part.
    """
    if table.dml is None:
        return f"{table.name} has no DML to backfill"
    if table.dml.state_form == StateForm.STATELESS:
        if not table.primary_key:
            return (f"{table.name} is an append table (no primary key): rewriting a window would duplicate it; "
                    "rebuild it from the range start instead (a range that reaches the open partition)")
        return None
    if any(reason.startswith("window TVF") for reason in table.dml.state_reasons) and all(
        reason.startswith("window TVF") or "aggregat" in reason for reason in table.dml.state_reasons
    ):
        return None
    return (f"{table.name} is stateful ({', '.join(table.dml.state_reasons)}): a window of its input cannot "
            "rebuild its state; rebuild it from the range start instead (a range that reaches the open partition)")


def partial_history_loss(graph: ProjectGraph, plan: DeploymentPlan, first_start: datetime) -> list[str]:
    """What a plan starting after the partitions' first start would drop, table by table."""
    start_at = plan.options.start_at
    if start_at is None or start_at <= first_start:
        return []
    lost = []
    for step in plan.steps:
        if step.table and step.action in RECREATING:
            consumers = ", ".join(graph.descendants(step.table)) or "no consumers yet"
            lost.append(f"{step.table}: history before {start_at:%Y-%m-%d %H:%M} "
                        f"(partitions start {first_start:%Y-%m-%d %H:%M}; read by {consumers})")
    return lost


def plan_backfill(graph: ProjectGraph, tables: list[str], start: datetime, end: datetime,
                  live: LiveState, options: PlanOptions) -> DeploymentPlan:
    """BACKFILL steps rebuilding [start, end) of each table, in graph order: refused where unsafe, and
    where a table is not deployed (a window of a table that does not run would be all it holds)."""
    ordered = graph.sorted_subset(tables)
    refusals = [r for r in (backfill_refusal(graph.tables[t]) for t in ordered) if r]
    planner = Planner(graph, live, options)
    refusals += [f"{t} is not deployed on {options.environment} ({planner.state(t).value}): deploy it first "
                 f"(shift-left-dagster deploy {t}, or materialise a range that reaches the open partition)"
                 for t in ordered if not planner.state(t).deployed]
    if refusals:
        raise BackfillRefused("; ".join(refusals))
    window = f"rebuild [{start:%Y-%m-%d %H:%M}, {end:%Y-%m-%d %H:%M}) by event time"
    steps = [planner.table_step(name, Action.BACKFILL, window, start_at=start, end_at=end) for name in ordered]
    return finish(planner, PlanKind.BACKFILL, ordered, steps)
