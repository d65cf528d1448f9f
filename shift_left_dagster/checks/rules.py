"""The checks as functions over DataFrames and models: each returns (passed, message, metadata).

Every rule over data is one Spark action: counts and bounded samples come
from the same aggregation (`min_by(..., k)` keeps k rows, ordered by a hash
of the key so samples are stable), never from a collect of a table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.local.jobs import same_value
from shift_left_dagster.local.types import UnsupportedType, spark_type_of
from shift_left_dagster.project.analysis import Column as DdlColumn

Verdict = tuple[bool, str, dict[str, Any]]
HEALTHY_PHASES = (Phase.RUNNING, Phase.COMPLETED)


def unique_primary_key(records: DataFrame, key: Sequence[str], samples: int) -> Verdict:
    """Keys held by more than one live record."""
    keys = [_col(k) for k in key]
    duplicated = records.groupBy(*keys).agg(F.count(F.lit(1)).alias("__sl_rows")).where(F.col("__sl_rows") > 1)
    row = duplicated.agg(
        F.count(F.lit(1)).alias("keys"),
        F.coalesce(F.sum("__sl_rows"), F.lit(0)).alias("rows"),
        _samples(F.struct(*keys), F.xxhash64(*keys), samples).alias("samples"),
    ).first()
    count = int(row["keys"])
    metadata = {"duplicate_keys": count, "duplicate_rows": int(row["rows"]), "sample_keys": _json(row["samples"])}
    message = f"{count} primary key value(s) held by more than one row" if count else "every primary key is unique"
    return count == 0, message, metadata


def reconcile(expected: DataFrame, actual: DataFrame, key: Sequence[str], samples: int) -> Verdict:
    """Expected against actual rows: by primary key (a full outer join), else as multisets.

    Columns the sink lacks are left out of the comparison and listed (schema_matches_ddl fails on them).
    """
    absent = [c for c in expected.columns if c not in actual.columns]
    if any(k in absent for k in key):
        return False, f"the sink lacks primary key column(s) {', '.join(k for k in key if k in absent)}", {
            "uncompared_columns": absent}
    compared = [c for c in expected.columns if c not in absent]
    expected, actual = expected.select(*map(_col, compared)), actual.select(*map(_col, compared))
    counts = _by_key(expected, actual, key, samples) if key else _as_multisets(expected, actual, samples)
    if absent:
        counts["uncompared_columns"] = absent
    missing, unexpected, different = counts["missing"], counts["unexpected"], counts["different"]
    passed = missing == unexpected == different == 0
    message = f"missing={missing}, unexpected={unexpected}, different={different}"
    return passed, ("sink matches its DML: " if passed else "sink differs from its DML: ") + message, counts


def _by_key(expected: DataFrame, actual: DataFrame, key: Sequence[str], samples: int) -> dict[str, Any]:
    columns = expected.columns
    types = {f.name: f.dataType for f in expected.schema.fields}
    e = expected.select(*[_col(c).alias(f"e{i}") for i, c in enumerate(columns)], F.lit(True).alias("__sl_e"))
    a = actual.select(*[_col(c).alias(f"a{i}") for i, c in enumerate(columns)], F.lit(True).alias("__sl_a"))
    index = {c: i for i, c in enumerate(columns)}
    on = [F.col(f"e{index[k]}").eqNullSafe(F.col(f"a{index[k]}")) for k in key]
    joined = e.join(a, on=on, how="full_outer")
    in_e, in_a = F.col("__sl_e").isNotNull(), F.col("__sl_a").isNotNull()
    values = [c for c in columns if c not in key]
    differs = {c: in_e & in_a & ~same_value(F.col(f"e{index[c]}"), F.col(f"a{index[c]}"), types[c]) for c in values}
    any_differs = F.lit(False)
    for condition in differs.values():
        any_differs = any_differs | condition
    key_hash = F.xxhash64(*[F.coalesce(F.col(f"e{index[k]}"), F.col(f"a{index[k]}")) for k in key])
    expected_row = F.struct(*[F.col(f"e{i}").alias(c) for i, c in enumerate(columns)])
    actual_row = F.struct(*[F.col(f"a{i}").alias(c) for i, c in enumerate(columns)])
    missing, unexpected = in_e & ~in_a, in_a & ~in_e
    row = joined.agg(
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
    ).first()
    return {
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


def _as_multisets(expected: DataFrame, actual: DataFrame, samples: int) -> dict[str, Any]:
    """EXCEPT ALL both ways in one aggregation: copies of each distinct row on either side."""
    types = {f.name: f.dataType for f in expected.schema.fields}
    comparable = [_comparable(_col(c), types[c]).alias(c) for c in expected.columns]
    both = expected.select(*comparable, F.lit(1).alias("__sl_e"), F.lit(0).alias("__sl_a")).unionByName(
        actual.select(*comparable, F.lit(0).alias("__sl_e"), F.lit(1).alias("__sl_a")))
    grouped = both.groupBy(*[_col(c) for c in expected.columns]).agg(
        F.sum("__sl_e").alias("__sl_e"), F.sum("__sl_a").alias("__sl_a"))
    e, a = F.col("__sl_e"), F.col("__sl_a")
    row_hash = F.xxhash64(*[_col(c) for c in expected.columns])
    row_struct = F.struct(*[_col(c) for c in expected.columns])
    row = grouped.agg(
        F.coalesce(F.sum(e), F.lit(0)).alias("expected_rows"),
        F.coalesce(F.sum(a), F.lit(0)).alias("actual_rows"),
        F.coalesce(F.sum(F.greatest(e - a, F.lit(0))), F.lit(0)).alias("missing"),
        F.coalesce(F.sum(F.greatest(a - e, F.lit(0))), F.lit(0)).alias("unexpected"),
        _samples(row_struct, F.when(e > a, row_hash), samples).alias("sample_missing"),
        _samples(row_struct, F.when(a > e, row_hash), samples).alias("sample_unexpected"),
    ).first()
    return {
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
            retyped[column.name] = f"{column.type} declared ({wanted} in Spark), {field.dataType.simpleString()} in the sink"
    names = {c.name.lower() for c in stored}
    unexpected = [f.name for key, f in fields.items() if key not in names]
    problems = ([f"missing column(s) {', '.join(missing)}"] if missing else []) + (
        [f"retyped column(s) {', '.join(f'{n} ({t})' for n, t in retyped.items())}"] if retyped else []) + (
        [f"undeclared column(s) {', '.join(unexpected)}"] if unexpected else [])
    metadata = {"missing_columns": missing, "retyped_columns": retyped, "undeclared_columns": unexpected}
    return not problems, "; ".join(problems) or f"{len(stored)} columns as declared", metadata


def statement_healthy(statement: Statement | None, lag: dict[str, int] | None, max_lag: int | None) -> Verdict:
    """Phase RUNNING/COMPLETED, and (when a limit is set) no further behind its sources than the limit."""
    if statement is None:
        return False, "no DML statement of this table was found", {}
    total = sum(lag.values()) if lag is not None else None
    metadata: dict[str, Any] = {"statement": statement.name, "phase": statement.phase,
                                "detail": statement.status.detail or "", "lag_records": total,
                                "lag_by_source": lag if lag is not None else "unknown"}
    if statement.phase not in HEALTHY_PHASES:
        detail = f": {statement.status.detail}" if statement.status.detail else ""
        return False, f"statement {statement.name} is {statement.phase}{detail}", metadata
    if max_lag is not None and total is not None and total > max_lag:
        return False, f"statement {statement.name} is {total} records behind its sources (limit {max_lag})", metadata
    behind = f", {total} records behind its sources" if total is not None else ""
    return True, f"statement {statement.name} is {statement.phase}{behind}", metadata


def _col(name: str) -> Column:
    return F.col(f"`{name}`")


def _samples(value: Column, order: Column, k: int) -> Column:
    """Up to k values with the smallest `order` (rows where it is NULL never count), as JSON texts."""
    if not k:
        return F.array().cast("array<string>")
    return F.transform(F.min_by(value, order, k), lambda v: F.to_json(v))


def _comparable(column: Column, kind: T.DataType) -> Column:
    """MAP values group as their JSON text (Spark can not group or compare maps)."""
    return F.to_json(F.struct(column.alias("v"))) if "map<" in kind.simpleString() else column


def _json(values: list[str] | None) -> list[Any]:
    return [json.loads(v) for v in values or []]
