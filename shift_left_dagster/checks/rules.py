"""The checks as functions over DataFrames and models: each returns (passed, message, metadata).

Every rule over data is one Spark action: counts and bounded samples come
from the same aggregation (`min_by(..., k)` keeps k rows, ordered by a hash
of the key so samples are stable), never from a collect of a table. Data
rules put the rows they looked at in metadata (`compared_rows`) and say it;
`nothing_compared` decides what comparing no row means.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from shift_left_dagster.checks.models import Severity, Verdict
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.local.types import UnsupportedType, spark_type_of
from shift_left_dagster.project.analysis import Column as DdlColumn
from shift_left_dagster.values import FlinkType, common_type, comparable, comparable_type, same_value

HEALTHY_PHASES = (Phase.RUNNING, Phase.COMPLETED)


def unique_primary_key(records: DataFrame, key: Sequence[str], samples: int) -> Verdict:
    """Keys held by more than one live record, and how many live records were checked."""
    keys = [_col(k) for k in key]
    grouped = records.groupBy(*keys).agg(F.count(F.lit(1)).alias("__sl_rows"))
    duplicated = F.col("__sl_rows") > 1
    row = _one(grouped.agg(
        F.coalesce(F.sum("__sl_rows"), F.lit(0)).alias("checked"),
        F.count_if(duplicated).alias("keys"),
        F.coalesce(F.sum(F.when(duplicated, F.col("__sl_rows"))), F.lit(0)).alias("rows"),
        _samples(F.struct(*keys), F.when(duplicated, F.xxhash64(*keys)), samples).alias("samples"),
    ))
    count, checked = int(row["keys"]), int(row["checked"])
    metadata = {"compared_rows": checked, "duplicate_keys": count, "duplicate_rows": int(row["rows"]),
                "sample_keys": _json(row["samples"])}
    message = (f"{count} primary key value(s) held by more than one of {checked} live rows" if count
               else f"every primary key of {checked} live rows is unique")
    return count == 0, message, metadata


def reconcile(expected: DataFrame, actual: DataFrame, key: Sequence[str], samples: int,
              flink_types: Mapping[str, FlinkType] | None = None) -> Verdict:
    """Expected against actual rows: by primary key (a full outer join), else as multisets.

    Values compare as Flink compares them (shift_left_dagster.values), with the
    columns' declared Flink types when given (`flink_types`, by column name).
    Columns the sink lacks are left out of the comparison and listed (schema_matches_ddl fails on them).
    """
    absent = [c for c in expected.columns if c not in actual.columns]
    if any(k in absent for k in key):
        return False, f"the sink lacks primary key column(s) {', '.join(k for k in key if k in absent)}", {
            "uncompared_columns": absent}
    compared = [c for c in expected.columns if c not in absent]
    expected, actual = expected.select(*map(_col, compared)), actual.select(*map(_col, compared))
    sides = _Sides(expected, actual, {k.lower(): v for k, v in (flink_types or {}).items()})
    counts = _by_key(sides, key, samples) if key else _as_multisets(sides, samples)
    if absent:
        counts["uncompared_columns"] = absent
    missing, unexpected, different = counts["missing"], counts["unexpected"], counts["different"]
    passed = missing == unexpected == different == 0
    figures = (f"{counts['compared_rows']} rows compared ({counts['expected_rows']} expected, "
               f"{counts['actual_rows']} actual)")
    message = f"missing={missing}, unexpected={unexpected}, different={different}"
    verdict = "sink matches its DML" if passed else "sink differs from its DML"
    return passed, f"{verdict} over {figures}: {message}", counts


def nothing_compared(verdict: Verdict, lag: int | None, held: int | None, waited: str) -> tuple[Verdict, Severity]:
    """A data check that passed comparing no row: a pass only when the sources hold nothing either.

    `lag`: records the statement has not read (after the catch-up wait, `waited` in words);
    `held`: records its sources hold (None: unknown).
    """
    passed, message, metadata = verdict
    if not passed or metadata.get("compared_rows", 0):
        return verdict, Severity.ERROR
    if lag:
        return (False, f"nothing verified: 0 rows compared while the statement is {lag} records behind its "
                       f"sources ({waited})", metadata), Severity.ERROR
    if held is None:
        return (False, "nothing verified: 0 rows compared, and whether its sources hold data is unknown",
                metadata), Severity.WARN
    if held:
        return (False, f"nothing verified: 0 rows compared although its sources hold {held} records, all read: "
                       f"its DML yields no row from them", metadata), Severity.WARN
    return (True, f"{message} (its sources hold no data yet)", metadata), Severity.ERROR


class _Sides:
    """Expected and actual rows over the same columns, and how each column's values compare."""

    def __init__(self, expected: DataFrame, actual: DataFrame, flink_types: Mapping[str, FlinkType]) -> None:
        self.expected, self.actual, self.columns = expected, actual, expected.columns
        self.expected_types = {f.name: f.dataType for f in expected.schema.fields}
        self.actual_types = {f.name: f.dataType for f in actual.schema.fields}
        self.flink = {c: flink_types.get(c.lower()) for c in self.columns}

    def same(self, column: str, left: Column, right: Column) -> Column:
        return same_value(left, right, self.expected_types[column], self.actual_types[column], self.flink[column])

    def comparable(self, column: str, value: Column, *, actual: bool) -> Column:
        """The column's comparable form, typed alike on both sides."""
        kinds = self.actual_types if actual else self.expected_types
        common = common_type(comparable_type(self.expected_types[column]), comparable_type(self.actual_types[column]))
        return comparable(value, kinds[column], self.flink[column], common)


def _by_key(sides: _Sides, key: Sequence[str], samples: int) -> dict[str, Any]:
    columns = sides.columns
    e = sides.expected.select(*[_col(c).alias(f"e{i}") for i, c in enumerate(columns)], F.lit(True).alias("__sl_e"))
    a = sides.actual.select(*[_col(c).alias(f"a{i}") for i, c in enumerate(columns)], F.lit(True).alias("__sl_a"))
    index = {c: i for i, c in enumerate(columns)}
    on = [sides.same(k, F.col(f"e{index[k]}"), F.col(f"a{index[k]}")) for k in key]
    joined = e.join(a, on=on, how="full_outer")
    in_e, in_a = F.col("__sl_e").isNotNull(), F.col("__sl_a").isNotNull()
    values = [c for c in columns if c not in key]
    differs = {c: in_e & in_a & ~sides.same(c, F.col(f"e{index[c]}"), F.col(f"a{index[c]}")) for c in values}
    any_differs = F.lit(False)
    for condition in differs.values():
        any_differs = any_differs | condition
    key_hash = F.xxhash64(*[F.coalesce(sides.comparable(k, F.col(f"e{index[k]}"), actual=False),
                                       sides.comparable(k, F.col(f"a{index[k]}"), actual=True)) for k in key])
    expected_row = F.struct(*[F.col(f"e{i}").alias(c) for i, c in enumerate(columns)])
    actual_row = F.struct(*[F.col(f"a{i}").alias(c) for i, c in enumerate(columns)])
    missing, unexpected = in_e & ~in_a, in_a & ~in_e
    row = _one(joined.agg(
        F.count(F.lit(1)).alias("compared_rows"),
        F.count_if(in_e).alias("expected_rows"),
        F.count_if(in_a).alias("actual_rows"),
        F.count_if(missing).alias("missing"),
        F.count_if(unexpected).alias("unexpected"),
        F.count_if(any_differs).alias("different"),
        *[F.count_if(condition).alias(f"d{index[c]}") for c, condition in differs.items()],
        _samples(expected_row, F.when(missing, key_hash), samples).alias("sample_missing"),
        _samples(actual_row, F.when(unexpected, key_hash), samples).alias("sample_unexpected"),
        _samples(F.struct(expected_row.alias("expected"), actual_row.alias("actual")),
                 F.when(any_differs, key_hash), samples).alias("sample_different"),
    ))
    return {
        "compared_rows": int(row["compared_rows"]),  # keys on either side
        "expected_rows": int(row["expected_rows"]),
        "actual_rows": int(row["actual_rows"]),
        "missing": int(row["missing"]),
        "unexpected": int(row["unexpected"]),
        "different": int(row["different"]),
        "different_columns": {c: int(row[f"d{index[c]}"]) for c in values if row[f"d{index[c]}"]},
        "sample_missing": _json(row["sample_missing"]),
        "sample_unexpected": _json(row["sample_unexpected"]),
        "sample_different": _json(row["sample_different"]),
    }


def _as_multisets(sides: _Sides, samples: int) -> dict[str, Any]:
    """EXCEPT ALL both ways in one aggregation: copies of each distinct row on either side.

    Rows group by their columns' comparable forms; samples show one copy's own values, as JSON.
    """
    columns = sides.columns
    forms = [f"__sl_v{i}" for i in range(len(columns))]

    def side(frame: DataFrame, actual: bool) -> DataFrame:
        shown = F.to_json(F.struct(*[_col(c) for c in columns])).alias("__sl_row")
        compared = [sides.comparable(c, _col(c), actual=actual).alias(f)
                    for c, f in zip(columns, forms, strict=True)]
        return frame.select(*compared, shown,
                            F.lit(0 if actual else 1).alias("__sl_e"), F.lit(1 if actual else 0).alias("__sl_a"))

    both = side(sides.expected, False).unionByName(side(sides.actual, True))
    grouped = both.groupBy(*forms).agg(F.sum("__sl_e").alias("__sl_e"), F.sum("__sl_a").alias("__sl_a"),
                                       F.min("__sl_row").alias("__sl_row"))
    e, a = F.col("__sl_e"), F.col("__sl_a")
    row_hash = F.xxhash64(*[F.col(f) for f in forms])
    row = _one(grouped.agg(
        F.coalesce(F.sum(F.greatest(e, a)), F.lit(0)).alias("compared_rows"),
        F.coalesce(F.sum(e), F.lit(0)).alias("expected_rows"),
        F.coalesce(F.sum(a), F.lit(0)).alias("actual_rows"),
        F.coalesce(F.sum(F.greatest(e - a, F.lit(0))), F.lit(0)).alias("missing"),
        F.coalesce(F.sum(F.greatest(a - e, F.lit(0))), F.lit(0)).alias("unexpected"),
        _samples(F.col("__sl_row"), F.when(e > a, row_hash), samples, as_json=False).alias("sample_missing"),
        _samples(F.col("__sl_row"), F.when(a > e, row_hash), samples, as_json=False).alias("sample_unexpected"),
    ))
    return {
        "compared_rows": int(row["compared_rows"]),  # copies of each distinct row, the larger side's
        "expected_rows": int(row["expected_rows"]),
        "actual_rows": int(row["actual_rows"]),
        "missing": int(row["missing"]),
        "unexpected": int(row["unexpected"]),
        "different": 0,  # without a key a changed row is one missing and one unexpected
        "sample_missing": _json(row["sample_missing"]),
        "sample_unexpected": _json(row["sample_unexpected"]),
    }


def schema_matches(declared: Sequence[DdlColumn], schema: T.StructType, ignore: Sequence[str] = ()) -> Verdict:
    """The DDL's stored columns (not computed, not VIRTUAL) against the sink's, by name and Spark type."""
    skipped = {name.lower() for name in ignore}
    fields = {f.name.lower(): f for f in schema.fields if f.name.lower() not in skipped}
    stored = [c for c in declared if not c.computed]
    missing = [c.name for c in stored if c.name.lower() not in fields]
    retyped: dict[str, str] = {}
    for column in stored:
        field = fields.get(column.name.lower())
        if field is None:
            continue
        try:
            wanted = spark_type_of(column.type).simpleString()
        except UnsupportedType as error:
            retyped[column.name] = f"{column.type} declared: {error}"
            continue
        if field.dataType.simpleString() != wanted:
            retyped[column.name] = (f"{column.type} declared ({wanted} in Spark), "
                                    f"{field.dataType.simpleString()} in the sink")
    names = {c.name.lower() for c in stored}
    unexpected = [f.name for key, f in fields.items() if key not in names]
    problems = ([f"missing column(s) {', '.join(missing)}"] if missing else []) + (
        [f"retyped column(s) {', '.join(f'{n} ({t})' for n, t in retyped.items())}"] if retyped else []) + (
        [f"undeclared column(s) {', '.join(unexpected)}"] if unexpected else [])
    metadata = {"compared_columns": len(stored), "missing_columns": missing, "retyped_columns": retyped,
                "undeclared_columns": unexpected}
    return not problems, "; ".join(problems) or f"{len(stored)} columns as declared", metadata


def statement_healthy(statement: Statement | None, lag: dict[str, int] | None, max_lag: int | None) -> Verdict:
    """Phase RUNNING/COMPLETED, and (when a limit is set) no further behind its sources than the limit."""
    if statement is None:
        return False, "no DML statement of this table was found", {}
    total = sum(lag.values()) if lag is not None else None
    said = statement.status.detail or f"{statement.phase or 'no phase'}: no detail from the service"
    metadata: dict[str, Any] = {"statement": statement.name, "phase": statement.phase, "detail": said,
                                "lag_records": total,
                                "lag_by_source": lag if lag is not None else "unknown"}
    if statement.phase not in HEALTHY_PHASES:
        detail = f": {statement.status.detail}" if statement.status.detail else ""
        return False, f"statement {statement.name} is {statement.phase}{detail}", metadata
    if max_lag is not None and total is not None and total > max_lag:
        return False, f"statement {statement.name} is {total} records behind its sources (limit {max_lag})", metadata
    behind = f", {total} records behind its sources" if total is not None else ""
    return True, f"statement {statement.name} is {statement.phase}{behind}", metadata


def _one(frame: DataFrame) -> Row:
    """The one row of a global aggregation (one with no grouping always has exactly one)."""
    row = frame.first()
    if row is None:
        raise RuntimeError("a global aggregation returned no row")
    return row


def _col(name: str) -> Column:
    return F.col(f"`{name}`")


def _samples(value: Column, order: Column, k: int, as_json: bool = True) -> Column:
    """Up to k values with the smallest `order` (rows where it is NULL never count), as JSON texts
    (`value` is one already when not `as_json`)."""
    if not k:
        return F.array().cast("array<string>")
    picked = F.min_by(value, order, k)
    return F.transform(picked, lambda v: F.to_json(v)) if as_json else picked


def _json(values: list[str] | None) -> list[Any]:
    return [json.loads(v) for v in values or []]
