"""A LEFT interval join holds an unmatched left row until the watermark proves no match can come.

Flink plans `a LEFT JOIN b ON ... AND b.t BETWEEN a.t - x AND a.t + y` over two time attributes as
an interval join (TimeIntervalJoin): append-only, a left row is joined with each right row of its
interval as they meet, and emitted padded with NULLs only once it expires, when the operator's
watermark passes a.t + y (leftTime <= watermark - y - 1). A regular join would emit the padded row at
once and delete it when the match arrives: a D into an append-only sink.

Locally the join is recomputed each run; here its SELECT gets the condition that keeps a padded row
only once it expired: `b.t IS NOT NULL OR a.t + y + 1 ms <= :sl_interval_until` (a matched row has a
non-NULL b.t: the bounds never hold for NULL). The engine binds the parameter to the query's
watermark after the run when both columns are the tables' time attributes (Scan.interval_time),
else to the highest watermark (a regular join, as Flink plans it then).

Flink emits an expired row at its key's cleanup timer (time + y + minCleanUpInterval + 1, the timer of
the key's first cached row) or when a later row of the other input and the same key arrives, whichever
comes first; locally it is emitted in the first run whose watermark passes the expiry: the same rows
once the watermark is past both (before that, Flink's own output depends on how the reads of its two
inputs interleave). Only LEFT joins are held: a RIGHT or FULL interval join still emits its padded
rows at once and deletes them when the match comes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

INTERVAL_UNTIL = "sl_interval_until"
INTERVAL_TIME = "interval_time"  # table.meta key: the column an interval join bounds the table by
_MS = {"SECOND": 1_000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}


@dataclass(frozen=True)
class _Term:
    table: str  # the column's qualifier
    column: exp.Column
    offset_ms: int


def hold_unmatched_rows(tree: exp.Expr, ctes: dict[str, exp.Expr]) -> None:
    """Every LEFT JOIN between two base tables whose ON bounds the right time column from above by the
    left one (an interval join in Flink): its SELECT keeps padded rows only once they expired."""
    for join in list(tree.find_all(exp.Join)):
        select = join.parent
        if (join.side or "").upper() != "LEFT" or not isinstance(select, exp.Select) or join.args.get("on") is None:
            continue
        right = join.this
        left_tables = _left_tables(select, join)
        if not _base(right, ctes) or not left_tables:
            continue
        bound = _upper_bound(join.args["on"], {t.alias_or_name: t for t in left_tables}, right.alias_or_name)
        if bound is None:
            continue
        left_term, right_term, upper_ms = bound
        left_table = next(t for t in left_tables if t.alias_or_name == left_term.table)
        left_table.meta[INTERVAL_TIME], right.meta[INTERVAL_TIME] = left_term.column.name, right_term.column.name
        left_sql = exp.column(left_term.column.name, table=left_term.table, quoted=True).sql(dialect="spark")
        expired = sqlglot.parse_one(f"unix_millis(CAST({left_sql} AS TIMESTAMP)) + {upper_ms + 1} "
                                    f"<= :{INTERVAL_UNTIL}", read="spark")
        for node in expired.walk():
            node.meta["spark"] = True
        matched = exp.Not(this=exp.Is(this=exp.column(right_term.column.name, table=right_term.table, quoted=True),
                                      expression=exp.Null()))
        select.where(exp.Paren(this=exp.or_(matched, expired)), copy=False)


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


def _upper_bound(on: exp.Expr, lefts: dict[str, exp.Table], right: str) -> tuple[_Term, _Term, int] | None:
    """(left time term, right time term, highest right - left in ms) from the ON's conjuncts."""
    found: list[tuple[_Term, _Term, int]] = []
    for conjunct in _conjuncts(on):
        comparisons: list[tuple[exp.Expr, str, exp.Expr]] = []
        if isinstance(conjunct, exp.Between):
            comparisons += [(conjunct.this, ">=", conjunct.args["low"]), (conjunct.this, "<=", conjunct.args["high"])]
        elif isinstance(conjunct, (exp.LTE, exp.LT, exp.GTE, exp.GT)):
            ops = {exp.LTE: "<=", exp.LT: "<", exp.GTE: ">=", exp.GT: ">"}
            comparisons.append((conjunct.this, ops[type(conjunct)], conjunct.expression))
        for a, op, b in comparisons:
            bound = _right_minus_left(_term(a), op, _term(b), lefts, right)
            if bound is not None:
                found.append(bound)
    return max(found, key=lambda f: f[2]) if found else None


def _right_minus_left(a: _Term | None, op: str, b: _Term | None, lefts: dict[str, exp.Table],
                      right: str) -> tuple[_Term, _Term, int] | None:
    """`a op b` as an upper bound of right - left, when it is one."""
    if a is None or b is None:
        return None
    if a.table == right and b.table in lefts and op in ("<=", "<"):  # R + oa <= L + ob
        return b, a, b.offset_ms - a.offset_ms - (1 if op == "<" else 0)
    if a.table in lefts and b.table == right and op in (">=", ">"):  # L + oa >= R + ob
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
        amount = _interval_ms(node.expression)
        if amount is not None:
            return _Term(node.this.table, node.this, amount if isinstance(node, exp.Add) else -amount)
    return None


def _interval_ms(node: exp.Expr) -> int | None:
    if not isinstance(node, exp.Interval) or node.this is None or node.unit is None:
        return None
    unit = node.unit.name.upper().rstrip("S")
    text = node.this.name.strip()
    return int(text) * _MS[unit] if unit in _MS and text.isdigit() else None
