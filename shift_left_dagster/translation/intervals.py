"""Interval literals Flink refuses: a leading field wider than its precision.

Flink's validator (Calcite's interval qualifier) gives an interval's leading field a precision of 2
digits unless the literal declares one (`INTERVAL '600' SECOND(3)`, `INTERVAL '100:59' MINUTE(3) TO
SECOND`), and refuses `INTERVAL '600' SECOND` when the statement is created: "Interval field value 600
exceeds precision of SECOND(2) field". Spark reads any width, so the local service checks it here.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from shift_left_dagster.project.parsing import FLINK, FlinkSqlError, Statement

DEFAULT_PRECISION = 2  # Calcite's default leading field precision, for every unit
_UNIT_MS = {"MILLISECOND": Decimal(1), "SECOND": Decimal(1000), "MINUTE": Decimal(60_000),
            "HOUR": Decimal(3_600_000), "DAY": Decimal(86_400_000)}
_LEADING = re.compile(r"^\s*([+-]?)\s*(\d+)")


def refuse_wide_intervals(statement: Statement, source: str) -> None:
    """Raise Flink's validation error for the first interval literal whose leading field is wider than its
    precision."""
    for interval in statement.tree.find_all(exp.Interval):
        text, unit = interval.this, interval.args.get("unit")
        if not isinstance(text, exp.Literal) or not text.is_string or unit is None:
            continue
        leading = unit.this if isinstance(unit, exp.IntervalSpan) else unit
        name, precision = _field(leading)
        match = _LEADING.match(text.name)
        if name is None or match is None:
            continue
        value = int(match.group(1) + match.group(2))
        if abs(value) >= 10 ** precision:
            wide = f"{name}({len(str(abs(value)))})"
            if isinstance(unit, exp.IntervalSpan):
                wide += f" TO {unit.expression.sql(dialect=FLINK)}"
            raise FlinkSqlError(source, text.meta.get("line") or 1,
                                f"SQL validation failed. Interval field value {value:,} exceeds precision of "
                                f"{name}({precision}) field: write INTERVAL '{text.name}' {wide} or a larger unit")


def interval_unit(interval: exp.Interval) -> str | None:
    """A one-field interval's unit (`SECOND` for INTERVAL '5' SECOND and for INTERVAL '600' SECOND(3))."""
    unit = interval.args.get("unit")
    return None if isinstance(unit, exp.IntervalSpan) else _field(unit)[0]


def interval_ms(node: exp.Expr | None) -> int | None:
    """A non-negative one-field interval literal in milliseconds (`INTERVAL '0.5' SECOND`, `'600' SECOND(3)`);
    None for anything else: what watermark delays and interval-join bounds read."""
    if not isinstance(node, exp.Interval) or node.this is None:
        return None
    unit = interval_unit(node)
    scale = _UNIT_MS.get(unit.rstrip("S")) if unit is not None else None
    try:
        amount = Decimal(node.this.name.strip())
    except InvalidOperation:
        return None
    return int(amount * scale) if scale is not None and amount >= 0 else None


def _field(node: exp.Expr | None) -> tuple[str | None, int]:
    """A unit's name and leading precision: `SECOND` is a Var (precision 2), `SECOND(3)` a function node."""
    if isinstance(node, exp.Var):
        return node.name.upper(), DEFAULT_PRECISION
    if isinstance(node, exp.Func) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return node.key.upper(), int(node.this.name)
    return None, DEFAULT_PRECISION
