"""Flink SQL types <-> Spark types, and values as the results endpoint encodes them.

Flink TIMESTAMP (no zone) is Spark TIMESTAMP_NTZ; Flink TIMESTAMP_LTZ is
Spark TIMESTAMP. The session zone is UTC, so the two agree on wall clocks.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.project.parsing import FLINK

Type = exp.DataType.Type

_SCALARS: dict[exp.DType, T.DataType] = {
    Type.TEXT: T.StringType(),
    Type.VARCHAR: T.StringType(),
    Type.CHAR: T.StringType(),
    Type.NCHAR: T.StringType(),
    Type.NVARCHAR: T.StringType(),
    Type.BOOLEAN: T.BooleanType(),
    Type.TINYINT: T.ByteType(),
    Type.SMALLINT: T.ShortType(),
    Type.INT: T.IntegerType(),
    Type.BIGINT: T.LongType(),
    Type.FLOAT: T.FloatType(),
    Type.DOUBLE: T.DoubleType(),
    Type.DATE: T.DateType(),
    Type.TIMESTAMP: T.TimestampNTZType(),
    Type.TIMESTAMPNTZ: T.TimestampNTZType(),
    Type.DATETIME: T.TimestampNTZType(),
    Type.TIMESTAMPLTZ: T.TimestampType(),
    Type.TIMESTAMPTZ: T.TimestampType(),
    Type.VARBINARY: T.BinaryType(),
    Type.BINARY: T.BinaryType(),
}


class UnsupportedType(ValueError):
    """A Flink type the Spark engine can not hold (TIME, MULTISET, INTERVAL, ...)."""


def parse_type(flink_type: str) -> exp.DataType:
    return exp.DataType.build(flink_type, dialect=FLINK)


def spark_type(data_type: exp.DataType) -> T.DataType:
    """The Spark type that stores a Flink type."""
    kind = data_type.this
    if kind in _SCALARS:
        return _SCALARS[kind]
    params = data_type.expressions
    if kind == Type.DECIMAL:
        numbers = [int(p.this.name) if isinstance(p, exp.DataTypeParam) else int(p.name) for p in params]
        precision, scale = (numbers + [10, 0][len(numbers):])[:2]  # Flink's DECIMAL = DECIMAL(10, 0)
        return T.DecimalType(precision, scale)
    if kind == Type.ARRAY and len(params) == 1:
        return T.ArrayType(spark_type(params[0]))
    if kind == Type.MAP and len(params) == 2:
        return T.MapType(spark_type(params[0]), spark_type(params[1]))
    if kind == Type.LIST and len(params) == 1:  # MULTISET<T>: Flink holds it as a map element -> count
        return T.MapType(spark_type(params[0]), T.IntegerType())
    if kind == Type.STRUCT:
        fields = []
        for field in params:
            if not isinstance(field, exp.ColumnDef) or field.args.get("kind") is None:
                raise UnsupportedType(f"ROW field {field.sql(dialect=FLINK)} has no type")
            fields.append(T.StructField(field.name, spark_type(field.args["kind"])))
        return T.StructType(fields)
    raise UnsupportedType(f"type {data_type.sql(dialect=FLINK)} is not supported by the local service")


@lru_cache(maxsize=4096)
def spark_type_of(flink_type: str) -> T.DataType:
    """The Spark type of a Flink type's text (kept per text: every statement's compile, views and shaping
    ask for their columns' types again; a column's type text is one of few)."""
    return spark_type(parse_type(flink_type))


def flink_type_name(data_type: T.DataType) -> str:
    """Flink SQL text for a Spark type (columns of CREATE TABLE AS, result schemas)."""
    if isinstance(data_type, T.StringType):
        return "STRING"
    if isinstance(data_type, T.DecimalType):
        return f"DECIMAL({data_type.precision}, {data_type.scale})"
    if isinstance(data_type, T.TimestampType):
        return "TIMESTAMP_LTZ(3)"
    if isinstance(data_type, T.TimestampNTZType):
        return "TIMESTAMP(3)"
    if isinstance(data_type, T.ArrayType):
        return f"ARRAY<{flink_type_name(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"MAP<{flink_type_name(data_type.keyType)}, {flink_type_name(data_type.valueType)}>"
    if isinstance(data_type, T.StructType):
        return "ROW<" + ", ".join(f"`{f.name}` {flink_type_name(f.dataType)}" for f in data_type.fields) + ">"
    names = {
        T.BooleanType: "BOOLEAN", T.ByteType: "TINYINT", T.ShortType: "SMALLINT", T.IntegerType: "INT",
        T.LongType: "BIGINT", T.FloatType: "FLOAT", T.DoubleType: "DOUBLE", T.DateType: "DATE",
        T.BinaryType: "BYTES", T.NullType: "STRING",
    }
    return names.get(type(data_type), "STRING")


_ROOTS = {
    T.StringType: "VARCHAR", T.BooleanType: "BOOLEAN", T.ByteType: "TINYINT", T.ShortType: "SMALLINT",
    T.IntegerType: "INTEGER", T.LongType: "BIGINT", T.FloatType: "FLOAT", T.DoubleType: "DOUBLE",
    T.DateType: "DATE", T.BinaryType: "VARBINARY", T.DecimalType: "DECIMAL",
    T.TimestampType: "TIMESTAMP_WITH_LOCAL_TIME_ZONE", T.TimestampNTZType: "TIMESTAMP_WITHOUT_TIME_ZONE",
    T.ArrayType: "ARRAY", T.MapType: "MAP", T.StructType: "ROW", T.NullType: "NULL",
}


def result_type(data_type: T.DataType, nullable: bool = True) -> dict[str, Any]:
    """The `DataType` JSON of a result schema column (status.traits.schema)."""
    body: dict[str, Any] = {"type": _ROOTS.get(type(data_type), "VARCHAR"), "nullable": nullable}
    if isinstance(data_type, T.StringType):
        body["length"] = 2147483647
    elif isinstance(data_type, T.DecimalType):
        body.update(precision=data_type.precision, scale=data_type.scale)
    elif isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        body["precision"] = 3
    elif isinstance(data_type, T.ArrayType):
        body["element_type"] = result_type(data_type.elementType, data_type.containsNull)
    elif isinstance(data_type, T.MapType):
        body["key_type"] = result_type(data_type.keyType, False)
        body["value_type"] = result_type(data_type.valueType, data_type.valueContainsNull)
    elif isinstance(data_type, T.StructType):
        body["fields"] = [
            {"name": f.name, "field_type": result_type(f.dataType, f.nullable)} for f in data_type.fields
        ]
    return body


TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS"  # Flink's default precision, 3


def wire_column(name: str, data_type: T.DataType) -> Column:
    """A column as the text the results endpoint sends: formatted by Spark, in the session zone (UTC).

    Collecting timestamps as Python datetimes would use the Python process's
    zone; formatting them in Spark does not.
    """
    column = F.col(f"`{name}`")
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return F.date_format(column, TIMESTAMP_FORMAT)
    if isinstance(data_type, T.BooleanType):
        return F.upper(column.cast("string"))
    if isinstance(data_type, (T.ArrayType, T.MapType, T.StructType)):
        return F.to_json(F.struct(column.alias("v")), {"timestampFormat": TIMESTAMP_FORMAT})
    if isinstance(data_type, T.BinaryType):
        return F.hex(column)
    return column.cast("string")


def decode_wire(text: str | None, data_type: T.DataType) -> Any:
    """The JSON value of one wired column: scalars stay strings, ARRAY/ROW are arrays, MAP is [[k, v], ...]."""
    if text is None or not isinstance(data_type, (T.ArrayType, T.MapType, T.StructType)):
        return text
    return _nested(json.loads(text).get("v"), data_type)


def _nested(value: Any, data_type: T.DataType) -> Any:
    if value is None:
        return None
    if isinstance(data_type, T.ArrayType):
        return [_nested(v, data_type.elementType) for v in value]
    if isinstance(data_type, T.MapType):
        return [[_nested(k, data_type.keyType), _nested(v, data_type.valueType)] for k, v in value.items()]
    if isinstance(data_type, T.StructType):
        return [_nested(value.get(f.name), f.dataType) for f in data_type.fields]
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value)
