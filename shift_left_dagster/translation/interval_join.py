"""An outer interval join holds an unmatched row until the watermark proves no match can come.

Flink plans `a LEFT|RIGHT|FULL JOIN b ON ... AND b.t BETWEEN a.t - x AND a.t + y` over two time
attributes as an interval join (TimeIntervalJoin): append-only, a row is joined with each row of the
other input in its interval as they meet, and emitted padded with NULLs only once it expires, when the
operator's watermark passes the last time a match could have: a left row at a.t + y (leftTime <=
watermark - y - 1), a right row at b.t + x. A regular join would emit the padded row at once and
delete it when the match arrives: a D into an append-only sink.

Locally the join is recomputed each run; here its SELECT gets, for each outer side, the condition that
keeps a padded row only once it expired: `b.t IS NOT NULL OR a.t + y + 1 ms <= :sl_interval_until`
for the left rows, `a.t IS NOT NULL OR b.t + x + 1 ms <= :sl_interval_until` for the right ones (a
matched row has both times: the bounds never hold for NULL). The engine binds the parameter to the
query's watermark after the run when both columns are the tables' time attributes
(Scan.interval_time), else to the highest watermark (a regular join, as Flink plans it then).

Flink forgets a row once it expired (an outer side's emitted padded): a row of the other input read
later joins nothing of it. Locally each input row carries the run that read it and the query's watermark
before that run (ARRIVAL_RUN, ARRIVAL_MARK: local/interval_reads.py), and the ON keeps a pair only when
the row read in the earlier run had not expired by the watermark before the later one's run (`a.t + y +
1 ms > b's mark` for a left row, `b.t + x + 1 ms > a's mark` for a right one), the very rule its padded
row is emitted by: a padded row emitted is final, as Flink's, even when a match comes after its source
was idle.

Flink emits an expired row at its key's cleanup timer (time + y + minCleanUpInterval + 1, the timer of
the key's first cached row) or when a later row of the other input and the same key arrives, whichever
comes first; locally it is emitted in the first run whose watermark passes the expiry: the same rows
once the watermark is past both (before that, Flink's own output depends on how the reads of its two
inputs interleave).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from shift_left_dagster.translation.intervals import interval_ms

INTERVAL_UNTIL = "sl_interval_until"
INTERVAL_TIME = "interval_time"  # table.meta key: the column an interval join bounds the table by
# Columns of an outer interval join's input views: the run that read the row, the watermark before that run.
ARRIVAL_RUN, ARRIVAL_MARK = "__sl_arrival_run", "__sl_arrival_mark"


@dataclass(frozen=True)
class _Term:
    table: str  # the column's qualifier
    column: exp.Column
    offset_ms: int


def hold_unmatched_rows(tree: exp.Expr, ctes: dict[str, exp.Expr]) -> None:
    """Every outer JOIN between two base tables whose ON bounds the two time columns against each other
    (an interval join in Flink): its SELECT keeps padded rows only once they expired."""
    for join in list(tree.find_all(exp.Join)):
        select = join.parent
        side = (join.side or "").upper()
        if side not in _HELD or not isinstance(select, exp.Select) or join.args.get("on") is None:
            continue
        right = join.this
        left_tables = _left_tables(select, join)
        if not _base(right, ctes) or not left_tables:
            continue
        lefts = {t.alias_or_name: t for t in left_tables}
        later = _upper_bound(join.args["on"], lefts, right.alias_or_name, right_later=True)  # b.t <= a.t + y
        earlier = _upper_bound(join.args["on"], lefts, right.alias_or_name, right_later=False)  # a.t <= b.t + x
        if later is None or earlier is None:
            continue  # not both bounds: Flink plans a regular join
        left_term, right_term, _ = later
        left_table = next(t for t in left_tables if t.alias_or_name == left_term.table)
        left_table.meta[INTERVAL_TIME], right.meta[INTERVAL_TIME] = left_term.column.name, right_term.column.name
        join.set("on", exp.and_(join.args["on"], _unexpired(first=later[0], then=later[1], upper_ms=later[2]),
                                _unexpired(first=earlier[0], then=earlier[1], upper_ms=earlier[2])))
        if side in ("LEFT", "FULL"):
            select.where(_held(kept=left_term, matched_by=right_term, upper_ms=later[2]), copy=False)
        if side in ("RIGHT", "FULL"):
            select.where(_held(kept=earlier[0], matched_by=earlier[1], upper_ms=earlier[2]), copy=False)


_HELD = ("LEFT", "RIGHT", "FULL")


def _held(*, kept: _Term, matched_by: _Term, upper_ms: int) -> exp.Expr:
    """`matched_by IS NOT NULL OR kept + upper + 1 ms <= :sl_interval_until`: a row of `kept`'s side
    padded with NULLs only once the watermark passed the last time a match could come."""
    kept_sql = exp.column(kept.column.name, table=kept.table, quoted=True).sql(dialect="spark")
    expired = sqlglot.parse_one(f"unix_millis(CAST({kept_sql} AS TIMESTAMP)) + {upper_ms + 1} "
                                f"<= :{INTERVAL_UNTIL}", read="spark")
    for node in expired.walk():
        node.meta["spark"] = True
    matched = exp.Not(this=exp.Is(this=exp.column(matched_by.column.name, table=matched_by.table, quoted=True),
                                  expression=exp.Null()))
    return exp.Paren(this=exp.or_(matched, expired))


def _unexpired(*, first: _Term, then: _Term, upper_ms: int) -> exp.Expr:
    """`first` read in a run after `then`'s, or not yet expired when `then`'s run began: the pair's
    rows met in Flink's state (first + upper + 1 ms > the watermark before `then`'s run)."""
    first_sql = exp.column(first.column.name, table=first.table, quoted=True).sql(dialect="spark")
    first_run = exp.column(ARRIVAL_RUN, table=first.table, quoted=True).sql(dialect="spark")
    then_run = exp.column(ARRIVAL_RUN, table=then.table, quoted=True).sql(dialect="spark")
    then_mark = exp.column(ARRIVAL_MARK, table=then.table, quoted=True).sql(dialect="spark")
    gate = sqlglot.parse_one(f"({first_run} >= {then_run} OR unix_millis(CAST({first_sql} AS TIMESTAMP)) + "
                             f"{upper_ms + 1} > {then_mark})", read="spark")
    for node in gate.walk():
        node.meta["spark"] = True
    return gate


def _base(node: exp.Expr, ctes: dict[str, exp.Expr]) -> bool:
    return isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and \
        node.args.get("version") is None and not (not node.args.get("db") and node.name in ctes)


def _left_tables(select: exp.Select, join: exp.Join) -> list[exp.Table]:
    """The relations before the join (FROM, earlier joins) that are plain tables."""
    from_ = select.args.get("from_")
    relations = [from_.this] if from_ is not None else []
    for earlier in select.args.get("joins") or []:
        if earlier is join:
            break
        relations.append(earlier.this)
    return [r for r in relations if isinstance(r, exp.Table) and isinstance(r.this, exp.Identifier)]


def _upper_bound(on: exp.Expr, lefts: dict[str, exp.Table], right: str, *,
                 right_later: bool) -> tuple[_Term, _Term, int] | None:
    """From the ON's conjuncts, the highest right - left in ms as (left time term, right time term, ms)
    when `right_later`, else the highest left - right as (right time term, left time term, ms)."""
    later = {right} if right_later else set(lefts)
    earlier = set(lefts) if right_later else {right}
    found: list[tuple[_Term, _Term, int]] = []
    for conjunct in _conjuncts(on):
        comparisons: list[tuple[exp.Expr, str, exp.Expr]] = []
        if isinstance(conjunct, exp.Between):
            comparisons += [(conjunct.this, ">=", conjunct.args["low"]), (conjunct.this, "<=", conjunct.args["high"])]
        elif isinstance(conjunct, (exp.LTE, exp.LT, exp.GTE, exp.GT)):
            ops = {exp.LTE: "<=", exp.LT: "<", exp.GTE: ">=", exp.GT: ">"}
            comparisons.append((conjunct.this, ops[type(conjunct)], conjunct.expression))
        for a, op, b in comparisons:
            bound = _later_minus_earlier(_term(a), op, _term(b), later, earlier)
            if bound is not None:
                found.append(bound)
    return max(found, key=lambda f: f[2]) if found else None


def _later_minus_earlier(a: _Term | None, op: str, b: _Term | None, later: set[str],
                         earlier: set[str]) -> tuple[_Term, _Term, int] | None:
    """`a op b` as an upper bound of (a `later` table's time) - (an `earlier` one's): (earlier term,
    later term, ms), when it is one."""
    if a is None or b is None:
        return None
    if a.table in later and b.table in earlier and op in ("<=", "<"):  # L + oa <= E + ob
        return b, a, b.offset_ms - a.offset_ms - (1 if op == "<" else 0)
    if a.table in earlier and b.table in later and op in (">=", ">"):  # E + oa >= L + ob
        return a, b, a.offset_ms - b.offset_ms - (1 if op == ">" else 0)
    return None


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def _term(node: exp.Expr) -> _Term | None:
    """A qualified column, or one plus or minus a constant INTERVAL."""
    node = node.this if isinstance(node, exp.Paren) else node
    if isinstance(node, exp.Column) and node.table:
        return _Term(node.table, node, 0)
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.this, exp.Column) and node.this.table:
        amount = interval_ms(node.expression)
        if amount is not None:
            return _Term(node.this.table, node.this, amount if isinstance(node, exp.Add) else -amount)
    return None
