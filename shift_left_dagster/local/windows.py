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
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from shift_left_dagster.local.event_time import MAX_WATERMARK, MIN_WATERMARK
from shift_left_dagster.translation.spark import HIDDEN_ROWTIME, SparkQuery

FIRED_AFTER, FIRED_UNTIL = "sl_fired_after", "sl_fired_until"
EVERY_WINDOW = (MIN_WATERMARK, MAX_WATERMARK)
# The alias translation/spark.py gives the exploded records inside a window TVF's derived table.
_EXPLODED = "__sl_w_out"
_GATE = "__sl_w_gate"


@dataclass
class WindowedQuery(SparkQuery):
    """A query whose window aggregations emit only the windows that fire in the range it is bound with."""


def fired_args(fired: tuple[int, int] | None) -> dict[str, int]:
    """Spark parameters selecting the windows with window_end - 1 ms in (after, until] (default: all)."""
    after, until = fired or EVERY_WINDOW
    return {FIRED_AFTER: after, FIRED_UNTIL: until}


def gate_windows(query: SparkQuery) -> SparkQuery:
    """The query with its window aggregations gated (itself when it has none)."""
    if _EXPLODED not in query.sql:
        return query  # no window TVF: the SQL is used as the translator wrote it
    tree = sqlglot.parse_one(query.sql, read="spark")
    gated = False
    for exploded in list(tree.find_all(exp.Subquery)):
        if exploded.alias != _EXPLODED:
            continue
        derived = exploded.parent_select
        relation = derived.parent if derived is not None else None
        consumer = relation.parent_select if isinstance(relation, exp.Subquery) else None
        window_end = _grouped_window_end(consumer)
        if derived is None or consumer is None or window_end is None:
            continue  # a window TVF without aggregation emits each record at once, as in Flink
        derived.replace(_gated(derived))
        _carry_window_time(tree, consumer, window_end)
        gated = True
    if not gated:
        return query
    sql = tree.sql(dialect="spark", identify=True, comments=False)
    return WindowedQuery(sql=sql, scans=query.scans, notes=query.notes)


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


def _gated(derived: exp.Select) -> exp.Select:
    """SELECT * FROM (derived) WHERE its window fires in (after, until]."""
    fires = _window_time_ms(exp.column("window_end", quoted=True))
    condition = exp.and_(exp.GT(this=fires.copy(), expression=exp.Placeholder(this=FIRED_AFTER)),
                         exp.LTE(this=fires, expression=exp.Placeholder(this=FIRED_UNTIL)))
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
