"""Which INSERT ... VALUES the engine types in Python (literal_rows.py) and which it leaves to Spark:
expected values are written out here, in plain Python."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from shift_left_dagster.local.catalog import TableDef, TableId, table_from_create
from shift_left_dagster.local.literal_rows import literal_rows
from shift_left_dagster.project.parsing import parse_statements

DDL = ("CREATE TABLE t (name STRING, n INT, big BIGINT, amount DECIMAL(10, 2), ok BOOLEAN, seen_at TIMESTAMP(3), "
       "event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO {buckets} BUCKETS")


def table(buckets: int = 1) -> TableDef:
    statement = parse_statements(DDL.format(buckets=buckets), "t.sql")[0]
    return table_from_create(statement, "uid-t", TableId(catalog="c", database="d", name="t"), [])


def rows_of(values: str, columns: str = "", target: TableDef | None = None):  # type: ignore[no-untyped-def]
    insert = parse_statements(f"INSERT INTO t {columns} VALUES {values}", "i.sql")[0].tree
    sink = target or table()
    names = [c.strip() for c in columns.strip("()").split(",")] if columns else [c.name for c in sink.stored_columns]
    return literal_rows(insert.expression, sink, names)


def test_plain_literals_are_typed_by_the_sink_schema() -> None:
    found = rows_of("('it''s', -7, 3000000000, 12.5, TRUE, TIMESTAMP '2026-01-01 00:05:00.125', "
                    "TIMESTAMP '2026-01-02 10:00:00'), (NULL, 0, NULL, 3, FALSE, NULL, NULL)")
    assert found is not None
    assert found.rows == [
        ("it's", -7, 3000000000, Decimal("12.50"), True, datetime(2026, 1, 1, 0, 5, 0, 125000),
         datetime(2026, 1, 2, 10, tzinfo=UTC)),
        (None, 0, None, Decimal("3.00"), False, None, None),
    ]
    assert found.times == [datetime(2026, 1, 2, 10, tzinfo=UTC), None]  # None: the time it is written
    now = datetime(2026, 11, 26, 18, 0, tzinfo=UTC)
    batch = found.batch(now)
    assert batch.column_names == ["name", "n", "big", "amount", "ok", "seen_at", "event_ts", "$rowtime"]
    assert batch.column("$rowtime").to_pylist() == [datetime(2026, 1, 2, 10, tzinfo=UTC), now]


def test_a_decimal_of_more_digits_than_pythons_default_context() -> None:
    wide = table_from_create(parse_statements("CREATE TABLE t (d DECIMAL(38, 18)) DISTRIBUTED INTO 1 BUCKETS",
                                              "t.sql")[0], "uid-w", TableId(catalog="c", database="d", name="t"), [])
    found = rows_of("(123456789012345678.5)", target=wide)
    assert found is not None and found.rows == [(Decimal("123456789012345678.500000000000000000"),)]


def test_unnamed_columns_are_null() -> None:
    found = rows_of("('a', 1)", "(name, n)")
    assert found is not None and found.rows == [("a", 1, None, None, None, None, None)] and found.times == [None]


@pytest.mark.parametrize("values", [
    "(UPPER('a'), 1, 1, 1, TRUE, NULL, NULL)",  # an expression
    "('a', 2147483648, 1, 1, TRUE, NULL, NULL)",  # beyond INT: Spark's cast decides
    "('a', 1, 1, 12.345, TRUE, NULL, NULL)",  # more digits than the DECIMAL's scale: Spark rounds
    "('a', 1, 1, 123456789.5, TRUE, NULL, NULL)",  # more than the DECIMAL holds
    "('a', 1.5, 1, 1, TRUE, NULL, NULL)",  # a decimal into INT
    "(1, 1, 1, 1, TRUE, NULL, NULL)",  # a number into STRING: Flink refuses it, in Spark's path
    "('a\\b', 1, 1, 1, TRUE, NULL, NULL)",  # a backslash: Spark's own escapes
    "('a', 1, 1, 1, 'true', NULL, NULL)",  # a string into BOOLEAN
    "('a', 1, 1, 1, TRUE, TIMESTAMP '2026-01-01 00:05:00.1234', NULL)",  # more digits than TIMESTAMP(3)
    "('a', 1, 1, 1, TRUE, TIMESTAMP '2026-02-30 00:00:00', NULL)",  # not a date
    "('a', 1, 1, 1, TRUE, '2026-01-01 00:00:00', NULL)",  # a string into TIMESTAMP
    "('a', 1, 1, 1, TRUE, NULL)",  # fewer values than columns: Flink's error, in Spark's path
])
def test_anything_else_is_left_to_spark(values: str) -> None:
    assert rows_of(values) is None


NESTED = ("CREATE TABLE t (tags ARRAY<STRING>, counts ARRAY<INT>, prefs MAP<STRING, STRING>, "
          "device ROW<os STRING, version STRING>) DISTRIBUTED INTO 1 BUCKETS")


def nested_table() -> TableDef:
    return table_from_create(parse_statements(NESTED, "t.sql")[0], "uid-n", TableId(catalog="c", database="d",
                                                                                     name="t"), [])


def test_arrays_maps_and_rows_of_literals() -> None:
    found = rows_of("(ARRAY['a', NULL], ARRAY[1, -2], MAP['language', 'en', 'theme', 'dark'], ROW('web', '2026.1')),"
                    " (NULL, NULL, NULL, NULL)", target=nested_table())
    assert found is not None
    assert found.rows == [(["a", None], [1, -2], [("language", "en"), ("theme", "dark")],
                           {"os": "web", "version": "2026.1"}), (None, None, None, None)]
    batch = found.batch(datetime(2026, 11, 26, tzinfo=UTC))
    assert batch.column("prefs").to_pylist()[0] == [("language", "en"), ("theme", "dark")]
    assert batch.column("device").to_pylist()[0] == {"os": "web", "version": "2026.1"}


@pytest.mark.parametrize("values", [
    "(ARRAY[], NULL, NULL, NULL)",  # empty: Spark types it
    "(ARRAY[UPPER('a')], NULL, NULL, NULL)",  # an expression inside
    "(NULL, ARRAY['1'], NULL, NULL)",  # a string into ARRAY<INT>
    "(NULL, NULL, MAP['k', 'a', 'k', 'b'], NULL)",  # a duplicate key: Spark refuses it
    "(NULL, NULL, MAP[NULL, 'a'], NULL)",  # a NULL key
    "(NULL, NULL, MAP['k'], NULL)",  # a key without value
    "(NULL, NULL, NULL, ROW('web'))",  # fewer fields than the ROW's
])
def test_nested_values_spark_computes(values: str) -> None:
    assert rows_of(values, target=nested_table()) is None


def test_a_table_of_several_partitions_is_left_to_spark() -> None:
    assert rows_of("('a', 1, 1, 1, TRUE, NULL, NULL)", target=table(buckets=2)) is None
