"""An INSERT ... VALUES of plain literals, typed in Python: its batch written without Spark.

A seed's INSERT ... VALUES holds literals only, yet Spark analysing its inline table, shaping it into
the sink's columns and reading it back cost each one about 50-100 ms, most of a seed statement's
time. Here the rows are typed by the sink's schema as Spark's casts type them, for literals whose
value a cast leaves as it is: a string into STRING, an integer into INT, BIGINT or a DECIMAL it fits,
a decimal into a DECIMAL holding it exactly, TRUE/FALSE into BOOLEAN, TIMESTAMP '...' into a
TIMESTAMP or TIMESTAMP_LTZ of at least its digits, NULL into any of them, and ARRAY[...], MAP[...] and
ROW(...) of such literals (timestamps aside) into an ARRAY, MAP or ROW column. Anything else (an
expression, another type, a literal a cast would change, a sink of several partitions) is
Spark's: `literal_rows` answers None and the statement runs as any other query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from sqlglot import exp

from shift_left_dagster.local.catalog import ROWTIME, TableDef
from shift_left_dagster.local.types import parse_type, spark_type_of
from shift_left_dagster.values import timestamp_precision

_INTEGER = re.compile(r"\d+")
_DECIMAL = re.compile(r"\d+(\.\d+)?")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.(\d{1,6}))?")
_RANGES: dict[type[T.DataType], int] = {T.IntegerType: 2**31, T.LongType: 2**63}
_TIMES = (T.TimestampType, T.TimestampNTZType)
_MAX_SCALE = 18  # Spark widens an inline table's integers (BIGINT: DECIMAL(20, 0)) and decimals within 38 digits
_DECIMALS = Context(prec=38)  # a DECIMAL's digits (Python's default context holds 28)


class _NotPlain(Exception):
    """A value Spark computes (not a plain literal of its column's kind)."""


@dataclass(frozen=True)
class LiteralRows:
    """The stored columns' values of an INSERT ... VALUES, row by row, and each row's record time
    when the sink's rowtime column gives one (None: the time it is written)."""

    schema: T.StructType  # stored columns, then $rowtime
    rows: list[tuple[Any, ...]]
    times: list[datetime | None]

    def batch(self, now: datetime) -> pa.Table:
        """The batch's records as Arrow (stored columns, $rowtime; all +I, so no `$op`), written `now`."""
        columns = [list(column) for column in zip(*self.rows, strict=True)] if self.rows else \
            [[] for _ in self.schema.fields[:-1]]
        columns.append([now if t is None else t for t in self.times])
        arrow = to_arrow_schema(self.schema, timezone="UTC")
        return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, arrow, strict=True)], schema=arrow)


def literal_rows(values: exp.Expression, table: TableDef, target: Sequence[str]) -> LiteralRows | None:
    """The rows of `values` (an INSERT's VALUES into `table`'s `target` columns), or None when Spark
    must compute them (see the module's docstring)."""
    if not isinstance(values, exp.Values) or values.args.get("alias") or table.partitions != 1:
        return None
    stored = table.stored_columns
    position = {name.lower(): i for i, name in enumerate(target)}
    if len(position) != len(target) or any(c.lower() not in {s.name.lower() for s in stored} for c in target):
        return None
    kinds = [spark_type_of(c.type) for c in stored]
    digits = [timestamp_precision(parse_type(c.type)) if isinstance(k, _TIMES) else None
              for c, k in zip(stored, kinds, strict=True)]
    rowtime = next((i for i, c in enumerate(stored) if c.name == table.rowtime_column
                    and c.name.lower() in position), None)
    rows: list[tuple[Any, ...]] = []
    try:
        for row in values.expressions:
            if not isinstance(row, exp.Tuple) or len(row.expressions) != len(target):
                raise _NotPlain
            rows.append(tuple(_value(row.expressions[position[c.name.lower()]] if c.name.lower() in position
                                     else exp.Null(), kind, precision)  # (a column not named: NULL)
                              for c, kind, precision in zip(stored, kinds, digits, strict=True)))
    except _NotPlain:
        return None
    times = [None if rowtime is None or r[rowtime] is None else _utc(r[rowtime]) for r in rows]
    schema = T.StructType([*[T.StructField(c.name, k) for c, k in zip(stored, kinds, strict=True)],
                           T.StructField(ROWTIME, T.TimestampType())])
    return LiteralRows(schema=schema, rows=rows, times=times)


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _value(node: exp.Expression, kind: T.DataType, precision: int | None) -> Any:
    """The value Spark's cast gives a plain literal in a column of Spark type `kind` (a timestamp's
    declared `precision`: None inside an ARRAY, MAP or ROW, where no timestamp is typed here)."""
    if not isinstance(kind, (T.StringType, T.BooleanType, T.DecimalType, T.ArrayType, T.MapType, T.StructType,
                             *_TIMES, *_RANGES)):
        raise _NotPlain
    if isinstance(node, exp.Null):
        return None
    if isinstance(kind, T.StringType) and isinstance(node, exp.Literal) and node.is_string and "\\" not in node.this:
        return node.this
    if isinstance(kind, T.BooleanType) and isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(kind, _TIMES) and precision is not None:
        return _timestamp(node, precision, utc=isinstance(kind, T.TimestampType))
    if isinstance(kind, (T.ArrayType, T.MapType, T.StructType)):
        return _nested(node, kind)
    negative = isinstance(node, exp.Neg)
    number = node.this if negative else node
    if not isinstance(number, exp.Literal) or number.is_string:
        raise _NotPlain
    text = ("-" if negative else "") + number.this
    bound = _RANGES.get(type(kind))
    if bound is not None and _INTEGER.fullmatch(number.this) and -bound <= int(text) < bound:
        return int(text)
    if isinstance(kind, T.DecimalType) and _DECIMAL.fullmatch(number.this) and kind.scale <= _MAX_SCALE:
        whole, _, fraction = number.this.partition(".")
        if len(fraction) <= kind.scale and len(whole.lstrip("0")) <= kind.precision - kind.scale and len(whole) <= 18:
            return Decimal(text).quantize(Decimal(1).scaleb(-kind.scale), context=_DECIMALS)
    raise _NotPlain


def _nested(node: exp.Expression, kind: T.ArrayType | T.MapType | T.StructType) -> Any:
    """ARRAY[...] as a list, MAP[k, v, ...] as (key, value) pairs (keys distinct and not NULL, as Spark
    requires), ROW(...) as a dict by the sink's field names (by position); none of them empty."""
    items = node.expressions
    if not items:
        raise _NotPlain
    if isinstance(kind, T.ArrayType) and isinstance(node, exp.Array):
        return [_value(item, kind.elementType, None) for item in items]
    if isinstance(kind, T.MapType) and isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column) \
            and not node.this.this.quoted and node.this.name.upper() == "MAP" and len(items) % 2 == 0:
        pairs = [(_value(k, kind.keyType, None), _value(v, kind.valueType, None)) for k, v in zip(
            items[::2], items[1::2], strict=True)]
        keys = [k for k, _ in pairs]
        if None in keys or len(set(keys)) != len(keys):
            raise _NotPlain
        return pairs
    if isinstance(kind, T.StructType) and isinstance(node, exp.Anonymous) and node.name.upper() == "ROW" \
            and len(items) == len(kind.fields):
        return {f.name: _value(item, f.dataType, None) for f, item in zip(kind.fields, items, strict=True)}
    raise _NotPlain


def _timestamp(node: exp.Expression, precision: int, *, utc: bool) -> datetime:
    """TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.f]' (read in UTC, the session's time zone) into a timestamp column
    declaring at least its fraction's digits."""
    if not (isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.TIMESTAMP and not node.to.expressions
            and isinstance(node.this, exp.Literal) and node.this.is_string):
        raise _NotPlain
    matched = _TIMESTAMP.fullmatch(node.this.this)
    if matched is None or len(matched.group(2) or "") > precision:
        raise _NotPlain
    try:
        value = datetime.fromisoformat(node.this.this)
    except ValueError:
        raise _NotPlain from None
    return value.replace(tzinfo=UTC) if utc else value
