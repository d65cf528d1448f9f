"""The one value comparison (shift_left_dagster.values), type by type, equal and unequal, with real Spark.

Each case states in plain words whether Flink holds the two values equal;
the cases run as columns of one Spark row (one job for the whole table).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.checks.rules import reconcile
from shift_left_dagster.values import except_all, same_value

pytestmark = pytest.mark.spark


class Case(NamedTuple):
    name: str
    left: str  # Spark SQL expressions
    right: str
    flink: str | None
    equal: bool


def ts(text: str) -> str:
    return f"TIMESTAMP_NTZ'{text}'"


def dec(value: str, precision: int, scale: int) -> str:
    return f"CAST({value} AS DECIMAL({precision}, {scale}))"


CASES = [
    # scalars and NULL
    Case("string equal", "'a'", "'a'", "STRING", True),
    Case("string unequal", "'a'", "'b'", "STRING", False),
    Case("null null", "CAST(NULL AS STRING)", "CAST(NULL AS STRING)", "STRING", True),
    Case("null value", "CAST(NULL AS STRING)", "'a'", "STRING", False),
    Case("double NaN", "double('NaN')", "double('NaN')", "DOUBLE", True),
    Case("double unequal", "CAST(0.1 AS DOUBLE)", "CAST(0.2 AS DOUBLE)", "DOUBLE", False),
    # MAP
    Case("map entry order", "map('a', '1', 'b', '2')", "map('b', '2', 'a', '1')", "MAP<STRING, STRING>", True),
    Case("map value differs", "map('a', '1')", "map('a', '2')", "MAP<STRING, STRING>", False),
    Case("map extra key", "map('a', '1')", "map('a', '1', 'b', '2')", "MAP<STRING, STRING>", False),
    Case("map null value", "map('a', CAST(NULL AS STRING))", "map('a', CAST(NULL AS STRING))",
         "MAP<STRING, STRING>", True),
    Case("map null vs empty value", "map('a', CAST(NULL AS STRING))", "map('a', '')", "MAP<STRING, STRING>", False),
    Case("map null vs empty map", "CAST(NULL AS MAP<STRING, STRING>)", "map()", "MAP<STRING, STRING>", False),
    Case("map of arrays", "map('k', array(1, NULL), 'j', array(2))", "map('j', array(2), 'k', array(1, NULL))",
         "MAP<STRING, ARRAY<INT>>", True),
    Case("map of arrays, element order", "map('k', array(1, NULL))", "map('k', array(NULL, 1))",
         "MAP<STRING, ARRAY<INT>>", False),
    Case("map of maps", "map('k', map('x', 1, 'y', 2))", "map('k', map('y', 2, 'x', 1))",
         "MAP<STRING, MAP<STRING, INT>>", True),
    # ARRAY
    Case("array order counts", "array(1, 2)", "array(2, 1)", "ARRAY<INT>", False),
    Case("array null element", "array(1, NULL)", "array(1, NULL)", "ARRAY<INT>", True),
    Case("array null element vs shorter", "array(1, NULL)", "array(1)", "ARRAY<INT>", False),
    Case("array null vs empty", "CAST(NULL AS ARRAY<INT>)", "array()", "ARRAY<INT>", False),
    Case("array of maps", "array(map('a', '1', 'b', '2'))", "array(map('b', '2', 'a', '1'))",
         "ARRAY<MAP<STRING, STRING>>", True),
    Case("array of maps unequal", "array(map('a', '1'))", "array(map('a', '9'))", "ARRAY<MAP<STRING, STRING>>", False),
    # ROW
    Case("row with map", "named_struct('a', 1, 'b', map('x', '1', 'y', '2'))",
         "named_struct('a', 1, 'b', map('y', '2', 'x', '1'))", "ROW<a INT, b MAP<STRING, STRING>>", True),
    Case("row field differs", "named_struct('a', 1, 'b', 'x')", "named_struct('a', 2, 'b', 'x')",
         "ROW<a INT, b STRING>", False),
    Case("row null vs row of nulls", "CAST(NULL AS STRUCT<a: INT>)", "named_struct('a', CAST(NULL AS INT))",
         "ROW<a INT>", False),
    Case("row of nulls", "named_struct('a', CAST(NULL AS INT))", "named_struct('a', CAST(NULL AS INT))",
         "ROW<a INT>", True),
    Case("row by position", "named_struct('a', 1, 'b', 'x')", "named_struct('p', 1, 'q', 'x')",
         "ROW<a INT, b STRING>", True),
    # MULTISET: held as a map of counts, or as an array of elements
    Case("multiset map order", "map('a', 2, 'b', 1)", "map('b', 1, 'a', 2)", "MULTISET<STRING>", True),
    Case("multiset map count", "map('a', 2)", "map('a', 1)", "MULTISET<STRING>", False),
    Case("multiset array order", "array('a', 'b', 'a')", "array('b', 'a', 'a')", "MULTISET<STRING>", True),
    Case("multiset array copies", "array('a', 'b')", "array('a', 'b', 'b')", "MULTISET<STRING>", False),
    Case("multiset array null", "array('a', NULL)", "array(NULL, 'a')", "MULTISET<STRING>", True),
    Case("array is not a multiset", "array('a', 'b')", "array('b', 'a')", "ARRAY<STRING>", False),
    # DECIMAL scale
    Case("decimal scale", dec("1.5", 10, 1), dec("1.50", 12, 2), "DECIMAL(10, 2)", True),
    Case("decimal unequal", dec("1.5", 10, 1), dec("1.51", 12, 2), "DECIMAL(10, 2)", False),
    Case("decimal vs integer", dec("2.00", 10, 2), "2", "DECIMAL(10, 2)", True),
    Case("decimal scale in array", f"array({dec('1.5', 10, 1)})", f"array({dec('1.50', 10, 2)})",
         "ARRAY<DECIMAL(10, 2)>", True),
    Case("decimal scale in map", f"map('k', {dec('1.5', 10, 1)})", f"map('k', {dec('1.50', 10, 2)})",
         "MAP<STRING, DECIMAL(10, 2)>", True),
    Case("decimal scale in row, unequal", f"named_struct('d', {dec('1.5', 10, 1)})",
         f"named_struct('d', {dec('1.49', 10, 2)})", "ROW<d DECIMAL(10, 2)>", False),
    # TIMESTAMP / TIMESTAMP_LTZ precision
    Case("timestamp(3) below the millisecond", ts("2024-01-01 00:00:00.123456"), ts("2024-01-01 00:00:00.123999"),
         "TIMESTAMP(3)", True),
    Case("timestamp(3) another millisecond", ts("2024-01-01 00:00:00.123"), ts("2024-01-01 00:00:00.124"),
         "TIMESTAMP(3)", False),
    Case("timestamp(6) micros count", ts("2024-01-01 00:00:00.123456"), ts("2024-01-01 00:00:00.123999"),
         "TIMESTAMP(6)", False),
    Case("timestamp(0)", ts("2024-01-01 00:00:01.9"), ts("2024-01-01 00:00:01"), "TIMESTAMP(0)", True),
    Case("timestamp(9) compares at micros", ts("2024-01-01 00:00:00.000001"), ts("2024-01-01 00:00:00.000002"),
         "TIMESTAMP(9)", False),
    Case("timestamp_ltz(3)", "TIMESTAMP'2024-01-01 00:00:00.123456Z'", "TIMESTAMP'2024-01-01 00:00:00.123001Z'",
         "TIMESTAMP_LTZ(3)", True),
    Case("timestamp_ltz(3) unequal", "TIMESTAMP'2024-01-01 00:00:00.123Z'", "TIMESTAMP'2024-01-01 00:00:00.122Z'",
         "TIMESTAMP_LTZ(3)", False),
    Case("timestamp vs timestamp_ltz, same instant in UTC", ts("2024-01-01 10:00:00"),
         "TIMESTAMP'2024-01-01 10:00:00Z'", "TIMESTAMP(3)", True),
    Case("timestamp vs timestamp_ltz, another instant", ts("2024-01-01 10:00:00"),
         "TIMESTAMP'2024-01-01 10:00:00+02:00'", "TIMESTAMP(3)", False),
    Case("timestamps in an array, null inside", f"array({ts('2024-01-01 00:00:00.1234')}, NULL)",
         f"array({ts('2024-01-01 00:00:00.1239')}, NULL)", "ARRAY<TIMESTAMP(3)>", True),
    # nested combinations
    Case("array of rows of map, decimal and timestamp",
         f"array(named_struct('m', map('x', {dec('1.5', 10, 1)}, 'y', NULL), 't', {ts('2024-01-01 00:00:00.1231')}))",
         f"array(named_struct('m', map('y', NULL, 'x', {dec('1.50', 10, 2)}), 't', {ts('2024-01-01 00:00:00.1239')}))",
         "ARRAY<ROW<m MAP<STRING, DECIMAL(10, 2)>, t TIMESTAMP(3)>>", True),
    Case("array of rows of map, one value differs",
         f"array(named_struct('m', map('x', {dec('1.5', 10, 1)}, 'y', NULL), 't', {ts('2024-01-01 00:00:00.123')}))",
         f"array(named_struct('m', map('y', {dec('0', 10, 1)}, 'x', {dec('1.5', 10, 1)}), "
         f"'t', {ts('2024-01-01 00:00:00.123')}))",
         "ARRAY<ROW<m MAP<STRING, DECIMAL(10, 2)>, t TIMESTAMP(3)>>", False),
    Case("map of rows of arrays", "map('k', named_struct('a', array(map('p', 1, 'q', 2))))",
         "map('k', named_struct('a', array(map('q', 2, 'p', 1))))",
         "MAP<STRING, ROW<a ARRAY<MAP<STRING, INT>>>>", True),
]


def verdicts(spark: SparkSession, cases: list[Case], with_flink: bool = True) -> dict[str, bool]:
    frame = spark.sql("SELECT " + ", ".join(f"{c.left} AS l{i}, {c.right} AS r{i}" for i, c in enumerate(cases)))
    kinds = {f.name: f.dataType for f in frame.schema.fields}
    row = frame.select(*[
        same_value(F.col(f"l{i}"), F.col(f"r{i}"), kinds[f"l{i}"], kinds[f"r{i}"],
                   c.flink if with_flink else None).alias(f"v{i}")
        for i, c in enumerate(cases)]).first()
    return {c.name: row[f"v{i}"] for i, c in enumerate(cases)}


def test_each_type_equal_and_unequal(spark: SparkSession) -> None:
    assert verdicts(spark, CASES) == {c.name: c.equal for c in CASES}


def test_every_kind_of_type_has_an_equal_and_an_unequal_case() -> None:
    covered = {(kind, c.equal) for c in CASES for kind in ("MAP", "ARRAY", "ROW", "MULTISET", "DECIMAL",
                                                           "TIMESTAMP", "TIMESTAMP_LTZ") if kind in (c.flink or "")}
    assert {kind for kind, _ in covered} == {"MAP", "ARRAY", "ROW", "MULTISET", "DECIMAL", "TIMESTAMP",
                                             "TIMESTAMP_LTZ"}
    assert all((kind, not equal) in covered for kind, equal in covered)


def test_without_flink_types_values_compare_at_spark_precision(spark: SparkSession) -> None:
    cases = [c for c in CASES
             if c.name in ("map entry order", "decimal scale in map", "timestamp(3) below the millisecond")]
    assert verdicts(spark, cases, with_flink=False) == {
        "map entry order": True, "decimal scale in map": True, "timestamp(3) below the millisecond": False}


def test_timestamp_against_timestamp_ltz_ignores_the_session_zone(spark: SparkSession) -> None:
    case = next(c for c in CASES if c.name == "timestamp vs timestamp_ltz, same instant in UTC")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        assert verdicts(spark, [case]) == {case.name: True}
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_except_all_over_map_columns_keeps_copies_and_values(spark: SparkSession) -> None:
    schema = "id INT, m MAP<STRING, STRING>"
    left = spark.createDataFrame([(1, {"a": "1", "b": "2"}), (1, {"a": "1", "b": "2"}), (2, {"a": None}),
                                  (3, {"a": "x"})], schema)
    right = spark.createDataFrame([(1, {"b": "2", "a": "1"}), (2, {"a": None}), (3, {"a": "y"})], schema)
    rows = sorted((r["id"], sorted(r["m"].items())) for r in except_all(left, right).collect())
    assert rows == [(1, [("a", "1"), ("b", "2")]), (3, [("a", "x")])]


def test_reconcile_compares_map_columns_by_key_and_as_multisets(spark: SparkSession) -> None:
    schema = "id STRING, prefs MAP<STRING, STRING>"
    expected = spark.createDataFrame([("u1", {"lang": "fr", "theme": "dark"}), ("u2", {"lang": None})], schema)
    same = spark.createDataFrame([("u1", {"theme": "dark", "lang": "fr"}), ("u2", {"lang": None})], schema)
    changed = spark.createDataFrame([("u1", {"theme": "dark", "lang": "en"}), ("u2", {"lang": None})], schema)
    for key in (["id"], []):
        passed, _message, counts = reconcile(expected, same, key, 2)
        assert passed and counts["expected_rows"] == counts["actual_rows"] == 2, (key, counts)
        passed, _message, counts = reconcile(expected, changed, key, 2)
        assert not passed
        wrong = (counts["missing"], counts["unexpected"], counts["different"])
        assert wrong == ((0, 0, 1) if key else (1, 1, 0)), (key, counts)


@pytest.mark.service
def test_engine_changelog_of_a_keyless_sink_with_a_map_column(local_service) -> None:  # type: ignore[no-untyped-def]
    """A recomputed job (an aggregate) into a retract sink without a key holding a MAP: its second run
    writes the changelog of the difference (it used EXCEPT ALL, which Spark refuses over maps)."""
    from collections import Counter

    from tests.integration.support import client_for, quiesce, run, select, unique

    client = client_for(local_service.url)
    run(client, unique("cv-ddl"), "CREATE TABLE cv_events (id STRING, kind STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("cv-ddl"), "CREATE TABLE cv_counts (id STRING, counts MAP<STRING, STRING>) "
                                  "DISTRIBUTED INTO 1 BUCKETS WITH ('changelog.mode' = 'retract')")
    first, second = [("a", "x"), ("a", "y"), ("b", "x")], [("b", "y"), ("c", "x")]
    values = lambda rows: ", ".join(f"('{i}', '{k}')" for i, k in rows)  # noqa: E731
    run(client, unique("cv-insert"), f"INSERT INTO cv_events VALUES {values(first)}")
    name = unique("cv-count")
    run(client, name, "INSERT INTO cv_counts SELECT id, MAP['n', CAST(COUNT(*) AS STRING)] FROM cv_events "
                      "GROUP BY id", "RUNNING")
    assert quiesce(local_service.url)["quiet"]
    run(client, unique("cv-insert"), f"INSERT INTO cv_events VALUES {values(second)}")
    assert quiesce(local_service.url)["quiet"]
    assert client.get_statement(name).phase == "RUNNING"
    counts = Counter(i for i, _k in first + second)
    assert select(client, "SELECT id, counts['n'] FROM cv_counts") == sorted(
        ((i, str(n)) for i, n in counts.items()), key=repr)
