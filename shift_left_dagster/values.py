"""When two Flink values are equal, as Spark columns: one comparison for the checks and the local engine.

Spark can not compare, group or sort MAP values, compares nested DECIMALs
only when their scales agree, and compares TIMESTAMP with TIMESTAMP_LTZ
through the session zone. So each value is first turned into a *comparable
form* that is equal exactly when the Flink values are equal:

- MAP (and MULTISET held as a map of counts): its entries, sorted (order never counts);
- MULTISET held as an array: its elements, sorted;
- ARRAY: its elements in order; ROW: its fields by position; NULL stays NULL, inside collections too;
- TIMESTAMP / TIMESTAMP_LTZ: microseconds since the epoch (a TIMESTAMP's wall clock read in UTC,
  the zone the local service and Confluent Cloud's default use), cut to the declared precision;
- numbers: widened to a common type (DECIMAL(10,1) 1.5 equals DECIMAL(12,2) 1.50).

Flink types are optional: they give what Spark types do not carry (precision,
MULTISET, LTZ). No Dagster, no service: pyspark and the Flink type parser only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.project.parsing import FLINK

Type = exp.DataType.Type
FlinkType = str | exp.DataType

_MICROS = 6  # Spark keeps microseconds: TIMESTAMP(7..9) compare at 6
_INTEGRAL_DIGITS: dict[type[T.DataType], int] = {T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}
_MULTISETS = (Type.LIST,)  # sqlglot reads Flink's MULTISET<T> as LIST<T>


def flink_type(kind: FlinkType | None) -> exp.DataType | None:
    """A Flink type as a sqlglot DataType (None stays None)."""
    if kind is None or isinstance(kind, exp.DataType):
        return kind
    return exp.DataType.build(kind, dialect=FLINK)


def same_value(left: Column, right: Column, kind: T.DataType, right_kind: T.DataType | None = None,
               flink: FlinkType | None = None) -> Column:
    """Null-safe equality of two values of Spark types `kind` / `right_kind` (default: the same),
    holding the Flink type `flink` when known."""
    declared = flink_type(flink)
    right_kind = right_kind or kind
    common = common_type(comparable_type(kind), comparable_type(right_kind))
    return (comparable(left, kind, declared, common)).eqNullSafe(comparable(right, right_kind, declared, common))


def comparable(column: Column, kind: T.DataType, flink: FlinkType | None = None,
               as_type: T.DataType | None = None) -> Column:
    """The comparable form of a value of Spark type `kind` (cast to `as_type`, a common type of
    comparable forms, when given): Spark can compare it, group by it and sort it."""
    normal = _normalize(column, kind, flink_type(flink))
    wanted = as_type or comparable_type(kind)
    return normal if wanted == comparable_type(kind) else normal.cast(wanted)


def comparable_type(kind: T.DataType) -> T.DataType:
    """The Spark type of the comparable form of `kind`."""
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        return T.LongType()
    if isinstance(kind, T.MapType):
        return T.ArrayType(T.StructType([
            T.StructField("key", comparable_type(kind.keyType)),
            T.StructField("value", comparable_type(kind.valueType))]))
    if isinstance(kind, T.ArrayType):
        return T.ArrayType(comparable_type(kind.elementType))
    if isinstance(kind, T.StructType):
        return T.StructType([T.StructField(f.name, comparable_type(f.dataType)) for f in kind.fields])
    return kind


def common_type(left: T.DataType, right: T.DataType) -> T.DataType:
    """The narrowest type both comparable forms cast to without changing a value (else STRING)."""
    if left == right:
        return left
    if isinstance(left, T.NullType):
        return right
    if isinstance(right, T.NullType):
        return left
    if _exact(left) and _exact(right):
        if isinstance(left, T.DecimalType) or isinstance(right, T.DecimalType):
            return _wider_decimal(_as_decimal(left), _as_decimal(right))
        return T.LongType()
    if isinstance(left, T.NumericType) and isinstance(right, T.NumericType):
        return T.DoubleType()
    if isinstance(left, T.ArrayType) and isinstance(right, T.ArrayType):
        return T.ArrayType(common_type(left.elementType, right.elementType))
    if isinstance(left, T.StructType) and isinstance(right, T.StructType) and len(left) == len(right):
        return T.StructType([T.StructField(a.name, common_type(a.dataType, b.dataType))
                             for a, b in zip(left.fields, right.fields, strict=True)])
    return T.StringType()


def has_unorderable(kind: T.DataType) -> bool:
    """Whether a value of `kind` holds a MAP somewhere (Spark can not group, sort or EXCEPT it)."""
    if isinstance(kind, T.MapType):
        return True
    if isinstance(kind, T.ArrayType):
        return has_unorderable(kind.elementType)
    if isinstance(kind, T.StructType):
        return any(has_unorderable(f.dataType) for f in kind.fields)
    return False


def except_all(left: DataFrame, right: DataFrame, flink_types: Mapping[str, FlinkType] | None = None) -> DataFrame:
    """Rows of `left` not matched one for one by an equal row of `right` (EXCEPT ALL, also over MAP
    columns). Both frames have the same columns; the rows returned are `left`'s own values."""
    columns = left.columns
    kinds = {f.name: f.dataType for f in left.schema.fields}
    if not any(has_unorderable(k) for k in kinds.values()):
        return left.exceptAll(right.select(*[F.col(f"`{c}`") for c in columns]))
    right_kinds = {f.name: f.dataType for f in right.schema.fields}
    keys = [f"__sl_k{i}" for i in range(len(columns))]

    def keyed(frame: DataFrame, types: Mapping[str, T.DataType]) -> DataFrame:
        forms = [comparable(F.col(f"`{c}`"), types[c], (flink_types or {}).get(c),
                            common_type(comparable_type(kinds[c]), comparable_type(right_kinds[c]))).alias(k)
                 for c, k in zip(columns, keys, strict=True)]
        with_forms = frame.select(*[F.col(f"`{c}`") for c in columns], *forms)
        copy = F.row_number().over(Window.partitionBy(*keys).orderBy(*keys))
        return with_forms.withColumn("__sl_copy", copy)

    mine, theirs = keyed(left, kinds), keyed(right, right_kinds)
    theirs = theirs.select(*[F.col(k).alias(f"r{k}") for k in keys], F.col("__sl_copy").alias("r__sl_copy"))
    on = [F.col(k).eqNullSafe(F.col(f"r{k}")) for k in keys] + [F.col("__sl_copy") == F.col("r__sl_copy")]
    return mine.join(theirs, on=on, how="left_anti").select(*[F.col(f"`{c}`") for c in columns])


def _normalize(column: Column, kind: T.DataType, flink: exp.DataType | None) -> Column:
    if isinstance(kind, T.TimestampType):
        return _truncate(F.unix_micros(column), timestamp_precision(flink))
    if isinstance(kind, T.TimestampNTZType):  # the wall clock read in UTC, whatever the session zone
        return _truncate(F.timestamp_diff("MICROSECOND", _epoch_ntz(), column), timestamp_precision(flink))
    if isinstance(kind, T.MapType):
        key_flink, value_flink = _map_parts(flink)
        entries = F.transform(F.map_entries(column), lambda e: F.struct(
            _normalize(e["key"], kind.keyType, key_flink).alias("key"),
            _normalize(e["value"], kind.valueType, value_flink).alias("value")))
        return F.array_sort(entries)
    if isinstance(kind, T.ArrayType):
        element_flink = _child(flink, 0)
        elements = F.transform(column, lambda v: _normalize(v, kind.elementType, element_flink))
        return F.array_sort(elements) if flink is not None and flink.this in _MULTISETS else elements
    if isinstance(kind, T.StructType):
        fields = _row_fields(flink)
        normal = F.struct(*[
            _normalize(column.getField(f.name), f.dataType, fields[i] if i < len(fields) else None).alias(f.name)
            for i, f in enumerate(kind.fields)])
        return F.when(column.isNotNull(), normal)
    return column


def _epoch_ntz() -> Column:
    return F.lit("1970-01-01 00:00:00").cast(T.TimestampNTZType())


def _truncate(micros: Column, precision: int) -> Column:
    """Cut to `precision` fractional digits (towards the past, as Flink casts to a lower precision)."""
    if precision >= _MICROS:
        return micros
    unit = 10 ** (_MICROS - precision)
    return micros - F.pmod(micros, F.lit(unit))


def timestamp_precision(flink: exp.DataType | None) -> int:
    """A timestamp's declared precision (Flink's default for TIMESTAMP and TIMESTAMP_LTZ is 6)."""
    if flink is None or not flink.expressions:
        return _MICROS
    param = flink.expressions[0]
    return int((param.this if isinstance(param, exp.DataTypeParam) else param).name)


def _child(flink: exp.DataType | None, index: int) -> exp.DataType | None:
    if flink is None or len(flink.expressions) <= index:
        return None
    child = flink.expressions[index]
    return child if isinstance(child, exp.DataType) else None


def _map_parts(flink: exp.DataType | None) -> tuple[exp.DataType | None, exp.DataType | None]:
    """Key and value types of a MAP; a MULTISET<T> is held as MAP<T, INT> (element -> count)."""
    if flink is not None and flink.this in _MULTISETS:
        return _child(flink, 0), None
    return _child(flink, 0), _child(flink, 1)


def _row_fields(flink: exp.DataType | None) -> Sequence[exp.DataType | None]:
    if flink is None or flink.this != Type.STRUCT:
        return []
    return [f.args.get("kind") if isinstance(f, exp.ColumnDef) else None for f in flink.expressions]


def _exact(kind: T.DataType) -> bool:
    return isinstance(kind, (T.DecimalType, *_INTEGRAL_DIGITS))


def _as_decimal(kind: T.DataType) -> T.DecimalType:
    if isinstance(kind, T.DecimalType):
        return kind
    return T.DecimalType(_INTEGRAL_DIGITS[type(kind)], 0)


def _wider_decimal(left: T.DecimalType, right: T.DecimalType) -> T.DecimalType:
    scale = max(left.scale, right.scale)
    digits = max(left.precision - left.scale, right.precision - right.scale)
    if digits + scale <= 38:
        return T.DecimalType(digits + scale, scale)
    return T.DecimalType(38, max(0, 38 - digits))
