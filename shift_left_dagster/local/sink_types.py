"""An INSERT's query columns against its sink's, by Flink's implicit cast rules (LogicalTypeCasts).

Flink plans an INSERT only when each query column casts implicitly to its sink column; otherwise
`Column types of query result and sink for '...' do not match`. Locally the query's types are
Spark's, so the check is by type family, where Spark and Flink type a query alike: a string
only from a string, a number from any number, a boolean from a boolean, a DATE from a DATE or a
TIMESTAMP, a TIMESTAMP or TIMESTAMP_LTZ from either, bytes from bytes, ARRAY/MAP/ROW from the
same kind with implicitly castable children (ROW by position). Narrowing within the numbers
(BIGINT into INT, DOUBLE into FLOAT: refused by Flink) is not checked: Spark types some
aggregates wider than Flink does (SUM of an INT is BIGINT in Spark, INT in Flink).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from shift_left_dagster.local.types import flink_type_name, spark_type_of

_FAMILIES: dict[type[T.DataType], str] = {
    T.StringType: "string", T.CharType: "string", T.VarcharType: "string", T.BooleanType: "boolean",
    T.ByteType: "number", T.ShortType: "number", T.IntegerType: "number", T.LongType: "number",
    T.DecimalType: "number", T.FloatType: "number", T.DoubleType: "number", T.DateType: "date",
    T.TimestampType: "timestamp", T.TimestampNTZType: "timestamp", T.BinaryType: "bytes",
}


def implicit_cast(source: T.DataType, target: T.DataType) -> bool:
    """Whether Flink casts a query column of type `source` implicitly to a sink column of type `target`."""
    if isinstance(source, T.NullType):
        return True
    if isinstance(target, T.ArrayType):
        return isinstance(source, T.ArrayType) and implicit_cast(source.elementType, target.elementType)
    if isinstance(target, T.MapType):
        return isinstance(source, T.MapType) and implicit_cast(source.keyType, target.keyType) \
            and implicit_cast(source.valueType, target.valueType)
    if isinstance(target, T.StructType):
        return isinstance(source, T.StructType) and len(source.fields) == len(target.fields) and all(
            implicit_cast(s.dataType, t.dataType) for s, t in zip(source.fields, target.fields, strict=True))
    if isinstance(target, T.DateType) and isinstance(source, T.TimestampNTZType):
        return True
    family = _FAMILIES.get(type(target))
    return family is None or _FAMILIES.get(type(source)) == family


def sink_type_mismatch(query: Sequence[T.StructField], target: Sequence[str], sink_name: str,
                       sink_columns: Sequence[tuple[str, str]]) -> str | None:
    """Flink's error for the first query column its sink column can not take, if any; `query` is the
    query's columns by position, `target` the sink columns they go to, `sink_columns` the sink's
    stored (name, Flink type). A different number of columns is the caller's error."""
    if len(query) != len(target):
        return None
    types = {name.lower(): kind for name, kind in sink_columns}
    for position, (field, name) in enumerate(zip(query, target, strict=True)):
        kind = types.get(name.lower())
        if kind is not None and not implicit_cast(field.dataType, spark_type_of(kind)):
            query_schema = ", ".join(f"{f.name}: {flink_type_name(f.dataType)}" for f in query)
            sink_schema = ", ".join(f"{n}: {k}" for n, k in sink_columns)
            return (
                f"Column types of query result and sink for '{sink_name}' do not match.\n"
                f"Cause: Incompatible types for sink column '{name}' at position {position}.\n\n"
                f"Query schema: [{query_schema}]\nSink schema:  [{sink_schema}]")
    return None
