"""Window aggregations emit each window once, when the watermark passes its end.

Flink's window aggregation (GROUP BY window_start, window_end over a TUMBLE, HOP, CUMULATE or
SESSION TVF) emits no intermediate result, only the final one at the end of each window, so its
output is append-only (docs.confluent.io, "Window Aggregation Queries": "it emits a row only once, at
the end of each window"). A window fires when the watermark reaches window_end - 1 ms, and its
result row carries window_time = window_end - 1 ms as its time.

The translator (translation/spark.py, `_expand_window_tvfs`) turns a window TVF into a derived
table of the records exploded into their windows. A window aggregation over it is gated here:
the derived table keeps only the windows that fire in the run, window_end - 1 ms in
(:sl_fired_after, :sl_fired_until] (Spark named parameters, bound on each run), and the
aggregation's rows carry window_end - 1 ms in the hidden time column. A fired window is never
computed again: a record arriving after its window fired changes nothing, as Flink drops it as
late (a HOP or CUMULATE record still counts in the windows of it not fired yet, as in Flink's
slicing window operator).

Within one run the watermark advances record by record as in Flink: a TUMBLE, HOP or CUMULATE read
straight from a table gets each record's arrival watermark (ARRIVAL_WATERMARK, late_rows.py: what the
records before it moved the watermark to) and a record counts only in the windows not fired at its
arrival, window_end - 1 ms above that watermark. So a row older than one already read in the same
run is as late as in Flink (over one source; a table of several partitions read one partition after
another, late_rows.py; over several sources the column holds the lowest watermark and only the run's
watermark gates).

A window aggregation that feeds another window TVF (cascaded windows) is not gated from below: each
run recomputes all its windows fired so far (window_end - 1 ms <= :sl_fired_until), so the outer
windows fired in a later run still see the inner buckets fired in earlier runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from shift_left_dagster.local.event_time import MAX_WATERMARK, MIN_WATERMARK
from shift_left_dagster.translation.spark import HIDDEN_ROWTIME, SparkQuery

FIRED_AFTER, FIRED_UNTIL = "sl_fired_after", "sl_fired_until"
EVERY_WINDOW = (MIN_WATERMARK, MAX_WATERMARK)
# The alias translation/spark.py gives the exploded records inside a window TVF's derived table.
_EXPLODED = "__sl_w_out"
_INPUT = "__sl_w_in"
_GATE = "__sl_w_gate"
ARRIVAL_WATERMARK = "__sl_arrival_watermark"  # epoch ms: the watermark when the record arrived


@dataclass
class WindowedQuery(SparkQuery):
    """A query whose window aggregations emit only the windows that fire in the range it is bound with;
    the views in `arrival_views` must carry ARRIVAL_WATERMARK (late_rows.arrival_watermarks)."""

    arrival_views: list[str] = field(default_factory=list)


def fired_args(fired: tuple[int, int] | None) -> dict[str, int]:
    """Spark parameters selecting the windows with window_end - 1 ms in (after, until] (default: all)."""
    after, until = fired or EVERY_WINDOW
    return {FIRED_AFTER: after, FIRED_UNTIL: until}


def gate_windows(query: SparkQuery, by_arrival: bool = True) -> SparkQuery:
    """The query with its window aggregations gated (itself when it has none). `by_arrival` False: the
    inputs carry no arrival order (landed files), so no record is judged late against the ones before it."""
    if _EXPLODED not in query.sql:
        return query  # no window TVF: the SQL is used as the translator wrote it
    tree = sqlglot.parse_one(query.sql, read="spark")
    views = {scan.view for scan in query.scans}
    exploded_all = [e for e in tree.find_all(exp.Subquery) if e.alias == _EXPLODED]
    gated, arrival_views = False, []
    for exploded in exploded_all:
        derived = exploded.parent_select
        relation = derived.parent if derived is not None else None
        consumer = relation.parent_select if isinstance(relation, exp.Subquery) else None
        window_end = _grouped_window_end(consumer)
        if derived is None or consumer is None or window_end is None:
            continue  # a window TVF without aggregation emits each record at once, as in Flink
        view = _arrival_input(exploded, derived, views) if by_arrival else None
        if view is not None:
            arrival_views.append(view)
        derived.replace(_gated(derived, arrival=view is not None,
                               cascaded=_feeds_window(tree, consumer, exploded, exploded_all)))
        _carry_window_time(tree, consumer, window_end)
        gated = True
    if not gated:
        return query
    sql = tree.sql(dialect="spark", identify=True, comments=False)
    return WindowedQuery(sql=sql, scans=query.scans, notes=query.notes, arrival_views=arrival_views)


def _arrival_input(exploded: exp.Subquery, derived: exp.Select, views: set[str]) -> str | None:
    """The view a TUMBLE, HOP or CUMULATE reads straight from a table; its records' arrival watermark
    is carried through the exploded and derived selects (SESSION windows and derived inputs: None)."""
    inner = exploded.this
    from_ = inner.args.get("from_") if isinstance(inner, exp.Select) else None
    source = from_.this if from_ is not None else None
    if not isinstance(inner, exp.Select) or not isinstance(source, exp.Table) or source.name not in views \
            or source.alias != _INPUT:
        return None
    inner.append("expressions", exp.column(ARRIVAL_WATERMARK, table=_INPUT, quoted=True))
    derived.append("expressions", exp.column(ARRIVAL_WATERMARK, quoted=True))
    return source.name


def _feeds_window(tree: exp.Expr, consumer: exp.Select, exploded: exp.Subquery,
                  exploded_all: list[exp.Subquery]) -> bool:
    """Whether a window aggregation's rows are the input of another window TVF: it sits inside that
    TVF's exploded records, or in a CTE one of them reads."""
    if any(other is not exploded and consumer.find_ancestor(exp.Subquery) is not None and
           _within(consumer, other) for other in exploded_all):
        return True
    cte = consumer.find_ancestor(exp.CTE)
    if cte is None:
        return False
    read = {t.name for other in exploded_all for t in other.find_all(exp.Table) if t.alias == _INPUT}
    return cte.alias_or_name in read


def _within(node: exp.Expr, ancestor: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def _grouped_window_end(select: exp.Select | None) -> exp.Column | None:
    """The window_end column a window aggregation groups by (it groups by window_start too)."""
    group = select.args.get("group") if select is not None else None
    if group is None:
        return None
    columns = {e.name.lower(): e for e in group.expressions if isinstance(e, exp.Column)}
    if "window_start" in columns and "window_end" in columns:
        return columns["window_end"]
    return None


def _window_time_ms(window_end: exp.Expr) -> exp.Expr:
    return sqlglot.parse_one(f"unix_millis(CAST({window_end.sql(dialect='spark', identify=True)} AS TIMESTAMP)) - 1",
                             read="spark")


def _gated(derived: exp.Select, *, arrival: bool, cascaded: bool) -> exp.Select:
    """SELECT * FROM (derived) WHERE its window fires in (after, until] ((-inf, until] when `cascaded`),
    after the record's arrival watermark when it carries one."""
    fires = _window_time_ms(exp.column("window_end", quoted=True))
    condition: exp.Expr = exp.LTE(this=fires.copy(), expression=exp.Placeholder(this=FIRED_UNTIL))
    if not cascaded:
        condition = exp.and_(exp.GT(this=fires.copy(), expression=exp.Placeholder(this=FIRED_AFTER)), condition)
    if arrival:
        condition = exp.and_(condition, exp.GT(this=fires, expression=exp.column(ARRIVAL_WATERMARK, quoted=True)))
    return exp.select(exp.Star()).from_(exp.Subquery(this=derived.copy(), alias=exp.TableAlias(
        this=exp.to_identifier(_GATE)))).where(condition)


def _carry_window_time(tree: exp.Expr, consumer: exp.Select, window_end: exp.Column) -> None:
    """window_end - 1 ms as the hidden time column of the aggregation's rows, carried up to the
    query's result through FROM subqueries; left out when the path is anything else (a join, a set
    operation, a CTE, DISTINCT): then the rows get the time they are written, as other stateful rows."""
    chain: list[tuple[exp.Select, str]] = []
    node: exp.Expr = consumer
    while node is not tree:
        holder = node.parent
        if not isinstance(holder, exp.Subquery) or not isinstance(holder.parent, exp.From):
            return
        outer = holder.parent.parent
        if not isinstance(outer, exp.Select) or outer.args.get("distinct") is not None:
            return
        chain.append((outer, holder.alias_or_name))
        node = outer
    time = exp.Anonymous(this="timestamp_millis", expressions=[_window_time_ms(window_end)])
    consumer.append("expressions", exp.alias_(time, HIDDEN_ROWTIME, quoted=True))
    for outer, alias in chain:
        outer.append("expressions", exp.alias_(exp.column(HIDDEN_ROWTIME, table=alias, quoted=True), HIDDEN_ROWTIME,
                                               quoted=True))
