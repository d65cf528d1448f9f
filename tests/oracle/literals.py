"""One corpus value, three spellings: a Python value of its Flink type, the SQL literal the local
service's INSERT gets, the JSON the Flink file source reads; and back from Flink's text.

Both engines are fed from the same typed value, so a difference in the results
is the engines', never the feeding's.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlglot import exp

from shift_left_dagster.project.parsing import FLINK
from shift_left_dagster.values import flink_type

Type = exp.DataType.Type
_STRINGS = {Type.TEXT, Type.VARCHAR, Type.CHAR, Type.NCHAR, Type.NVARCHAR}
_INTEGERS = {Type.TINYINT, Type.SMALLINT, Type.INT, Type.BIGINT}
_FLOATS = {Type.FLOAT, Type.DOUBLE}
_LTZ = {Type.TIMESTAMPLTZ, Type.TIMESTAMPTZ}
_NTZ = {Type.TIMESTAMP, Type.TIMESTAMPNTZ, Type.DATETIME}


class UnsupportedValue(ValueError):
    """A type the oracle can not feed both engines the same way."""


def typed(value: Any, kind: str | exp.DataType) -> Any:
    """A YAML value as the Python value of Flink type `kind` (LTZ timestamps are UTC-aware)."""
    dtype = flink_type(kind)
    assert dtype is not None
    if value is None:
        return None
    this = dtype.this
    if this in _STRINGS:
        return str(value)
    if this in _INTEGERS:
        return int(value)
    if this == Type.DECIMAL:
        return Decimal(str(value))
    if this in _FLOATS:
        return float(value)
    if this == Type.BOOLEAN:
        return bool(value)
    if this == Type.DATE:
        return value if isinstance(value, date) else date.fromisoformat(str(value))
    if this in _NTZ | _LTZ:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", ""))
        return moment.replace(tzinfo=UTC) if this in _LTZ else moment.replace(tzinfo=None)
    if this == Type.ARRAY:
        return [typed(v, _child(dtype, 0)) for v in value]
    if this == Type.LIST:  # MULTISET: element -> count
        return dict(Counter(typed(v, _child(dtype, 0)) for v in value)) if isinstance(value, list) else \
            {typed(k, _child(dtype, 0)): int(n) for k, n in value.items()}
    if this == Type.MAP:
        return {typed(k, _child(dtype, 0)): typed(v, _child(dtype, 1)) for k, v in value.items()}
    if this == Type.STRUCT:
        fields = _fields(dtype)
        items = [value.get(name) for name, _ in fields] if isinstance(value, dict) else list(value)
        return tuple(typed(v, t) for v, (_, t) in zip(items, fields, strict=True))
    raise UnsupportedValue(f"type {kind} as a corpus value")


def sql_literal(value: Any, kind: str | exp.DataType) -> str:
    """Flink SQL for a typed value (what `INSERT INTO t VALUES` on the local service gets)."""
    dtype = flink_type(kind)
    assert dtype is not None
    this = dtype.this
    if value is None:
        return "NULL"
    if this in _STRINGS:
        return "'" + str(value).replace("'", "''") + "'"
    if this == Type.BOOLEAN:
        return "TRUE" if value else "FALSE"
    if this in _INTEGERS or this == Type.DECIMAL:
        return str(value)
    if this in _FLOATS:
        return f"CAST({value!r} AS {this.value})"
    if this == Type.DATE:
        return f"DATE '{value.isoformat()}'"
    if this in _NTZ | _LTZ:
        return f"TIMESTAMP '{_wall_clock(value)}'"
    if this == Type.ARRAY:
        if not value:
            return _empty_array(_child(dtype, 0))
        return "ARRAY[" + ", ".join(sql_literal(v, _child(dtype, 0)) for v in value) + "]"
    if this == Type.LIST:
        items = [sql_literal(k, _child(dtype, 0)) for k, n in value.items() for _ in range(n)]
        return "MULTISET[" + ", ".join(items) + "]"
    if this == Type.MAP:
        if not value:
            return f"MAP_FROM_ARRAYS({_empty_array(_child(dtype, 0))}, {_empty_array(_child(dtype, 1))})"
        return "MAP[" + ", ".join(f"{sql_literal(k, _child(dtype, 0))}, {sql_literal(v, _child(dtype, 1))}"
                                  for k, v in value.items()) + "]"
    if this == Type.STRUCT:
        return "ROW(" + ", ".join(sql_literal(v, t) for v, (_, t) in zip(value, _fields(dtype), strict=True)) + ")"
    raise UnsupportedValue(f"type {kind} as a SQL literal")


def _empty_array(element: exp.DataType) -> str:
    """An empty array both engines accept: Flink refuses `ARRAY[]` (and `MAP[]`): "Require at least 1
    argument". One NULL element taken away from itself leaves the empty array of the element type."""
    one = f"ARRAY[CAST(NULL AS {element.sql(dialect=FLINK)})]"
    return f"ARRAY_EXCEPT({one}, {one})"


def json_value(value: Any, kind: str | exp.DataType) -> Any:
    """A typed value as Flink's json format reads it (timestamp-format.standard SQL)."""
    dtype = flink_type(kind)
    assert dtype is not None
    this = dtype.this
    if value is None:
        return None
    if this == Type.DECIMAL:
        return _RawNumber(str(value))
    if this == Type.DATE:
        return value.isoformat()
    if this in _NTZ:
        return _wall_clock(value)
    if this in _LTZ:
        return _wall_clock(value) + "Z"
    if this == Type.ARRAY:
        return [json_value(v, _child(dtype, 0)) for v in value]
    if this in (Type.LIST, Type.MAP):
        if this == Type.MAP and _child(dtype, 0).this not in _STRINGS:
            raise UnsupportedValue("a MAP whose keys are not strings as JSON input")
        return {str(k): json_value(v, _child(dtype, 1) if this == Type.MAP else "INT") for k, v in value.items()}
    if this == Type.STRUCT:
        return {name: json_value(v, t) for v, (name, t) in zip(value, _fields(dtype), strict=True)}
    return value


def json_line(record: dict[str, Any]) -> str:
    """One JSON object per line; DECIMALs written with their exact digits."""
    return _Encoder(separators=(",", ":")).encode(record)


def from_flink(text: str | None, kind: str | exp.DataType) -> Any:
    """A sink column's value from the text the runner collected (CAST AS STRING, or JSON_STRING when nested)."""
    dtype = flink_type(kind)
    assert dtype is not None
    if text is None:
        return None
    if dtype.this in (Type.ARRAY, Type.LIST, Type.MAP, Type.STRUCT):
        return _from_json(json.loads(text, parse_float=Decimal), dtype)
    if dtype.this == Type.BOOLEAN:
        return text.upper() == "TRUE"
    return typed(text, dtype)


def _from_json(value: Any, dtype: exp.DataType) -> Any:
    if value is None:
        return None
    this = dtype.this
    if this == Type.ARRAY:
        return [_from_json(v, _child(dtype, 0)) for v in value]
    if this == Type.LIST:
        return {_from_json(k, _child(dtype, 0)): int(n) for k, n in value.items()}
    if this == Type.MAP:
        return {_from_json(k, _child(dtype, 0)): _from_json(v, _child(dtype, 1)) for k, v in value.items()}
    if this == Type.STRUCT:
        fields = _fields(dtype)
        items = [value.get(name) for name, _ in fields] if isinstance(value, dict) else value
        return tuple(_from_json(v, t) for v, (_, t) in zip(items, fields, strict=True))
    return typed(value, dtype)


def _wall_clock(moment: datetime) -> str:
    precision = "milliseconds" if moment.microsecond % 1000 == 0 else "microseconds"
    return moment.replace(tzinfo=None).isoformat(sep=" ", timespec=precision)


def _child(dtype: exp.DataType, index: int) -> exp.DataType:
    child = dtype.expressions[index]
    assert isinstance(child, exp.DataType)
    return child


def _fields(dtype: exp.DataType) -> list[tuple[str, exp.DataType]]:
    fields = []
    for node in dtype.expressions:
        if not isinstance(node, exp.ColumnDef) or not isinstance(node.args.get("kind"), exp.DataType):
            raise UnsupportedValue(f"ROW field {node} without a type")
        fields.append((node.name, node.args["kind"]))
    return fields


class _RawNumber(str):
    """A number's exact text, written unquoted."""


class _Encoder(json.JSONEncoder):
    def encode(self, o: Any) -> str:
        return self._write(o)

    def _write(self, value: Any) -> str:
        if isinstance(value, _RawNumber):
            return str(value)
        if isinstance(value, dict):
            return "{" + ",".join(f"{json.dumps(str(k))}:{self._write(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ",".join(self._write(v) for v in value) + "]"
        return json.dumps(value)
