"""Flink SQL -> Spark SQL without Spark: the mechanisms behind the failure classes of issue 13.

Each test states what Flink does (its documentation) and checks the Spark SQL
text or the error, never a result computed by the translator.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from shift_left_dagster.project.parsing import parse_one_statement
from shift_left_dagster.translation.functions import FUNCTIONS
from shift_left_dagster.translation.spark import Unsupported, translate_expression, translate_query

COLUMNS = {"t": ["k", "v", "payload"], "u": ["k", "w"]}


def spark(sql: str, incremental: bool = False) -> str:
    tree = parse_one_statement(sql).tree
    query = tree.expression if isinstance(tree, exp.Insert) else tree
    return translate_query(query, lambda table: COLUMNS[table.name], incremental=incremental).sql


def projections(spark_sql: str) -> list[str]:
    return [e.alias_or_name for e in sqlglot.parse_one(spark_sql, read="spark").expressions]


# --- 1. SELECT * through any derived table ---------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "SELECT * FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY $rowtime DESC) AS rn FROM t) "
    "WHERE rn = 1",
    "SELECT * FROM (SELECT * FROM (SELECT k, v FROM t) WHERE k > 0)",
    "SELECT * FROM (SELECT k, v FROM t) JOIN (SELECT k AS k2, w FROM u) ON k = k2",
])
def test_star_expands_through_unaliased_derived_tables(sql: str):
    out = spark(sql)
    assert "``" not in out, out  # no empty qualifier
    names = projections(out)
    assert names[:2] == ["k", "v"] and "" not in names, out


def test_unnamed_projections_get_flink_names():
    assert projections(spark("SELECT * FROM (SELECT UPPER(v), k FROM t)")) == ["EXPR$0", "k"]


def test_dedup_idiom_in_a_stateless_translation_keeps_hidden_columns_resolvable():
    out = spark("SELECT * FROM (SELECT k, v FROM t) WHERE k > 0", incremental=True)
    assert "`EXPR$0`.`__sl_op`" in out and "``" not in out


# --- 2. rewrites bottom-up ---------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "inner"), [
    ("SELECT TO_TIMESTAMP(JSON_VALUE(payload, '$.ts')) FROM t", "GET_JSON_OBJECT"),
    ("SELECT ROW(JSON_VALUE(payload, '$.a'), 1) FROM t", "GET_JSON_OBJECT"),
    ("SELECT JSON_VALUE(JSON_QUERY(payload, '$.a'), '$.b') FROM t",
     "GET_JSON_OBJECT(TRY_ELEMENT_AT(TRANSFORM(ARRAY(GET_JSON_OBJECT"),
    ("SELECT CARDINALITY(SPLIT(JSON_VALUE(payload, '$.a'), ',')) FROM t",
     "SIZE(SPLIT(TRY_ELEMENT_AT(TRANSFORM(ARRAY(GET_JSON_OBJECT"),
])
def test_a_call_inside_another_is_translated(sql: str, inner: str):
    out = spark(sql)
    assert inner in out.upper(), out
    for flink_only in ("JSON_VALUE", "JSON_QUERY", "TO_TIMESTAMP(", "ROW(", "CARDINALITY"):
        assert flink_only not in out.upper(), out


def test_the_error_names_the_real_unsupported_function_and_its_line():
    with pytest.raises(Unsupported) as caught:
        spark("SELECT\n  TO_TIMESTAMP(JSON_VALUE(payload, '$.ts')),\n  MY_UDF(JSON_VALUE(payload, '$.a'))\nFROM t")
    assert caught.value.construct == "function MY_UDF" and caught.value.line == 3


# --- 3. query hints ----------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", ["STATE_TTL('t'='1d')", "BROADCAST(u)", "SHUFFLE_HASH(t, u)",
                                  "LOOKUP('table'='u', 'async'='false')"])
def test_query_hints_are_ignored_with_a_note_and_never_reach_spark(hint: str):
    tree = parse_one_statement(f"INSERT INTO x\nSELECT /*+ {hint} */ t.k FROM t JOIN u ON t.k = u.k").tree
    query = translate_query(tree.expression, lambda table: COLUMNS[table.name])
    assert "/*" not in query.sql and hint.split("(")[0] not in query.sql
    assert query.notes and hint.split("(")[0] in query.notes[0] and "line 2" in query.notes[0]


def test_options_hints_are_still_honoured():
    tree = parse_one_statement("SELECT k FROM t /*+ OPTIONS('scan.startup.mode'='latest-offset') */").tree
    query = translate_query(tree, lambda table: COLUMNS[table.name])
    assert query.scans[0].options == {"scan.startup.mode": "latest-offset"} and "/*" not in query.sql


# --- 4. the table of Flink built-in functions -----------------------------------------------------------


def test_every_table_entry_says_exactly_one_thing():
    for name, fn in FUNCTIONS.items():
        said = [fn.native, fn.spark is not None, fn.build is not None, fn.unsupported is not None]
        assert sum(said) <= 1, name


# Table functions and clauses are called in their own syntax (tests/integration/test_errors_and_apis.py).
NOT_SCALAR = {"MATCH_RECOGNIZE", "VECTOR_SEARCH", "OVERLAPS", "LOCALTIME", "CURRENT_TIME",
              "TO_CHANGELOG", "FROM_CHANGELOG"}


@pytest.mark.parametrize("name", sorted(n for n, f in FUNCTIONS.items() if f.unsupported and n not in NOT_SCALAR))
def test_unsupported_functions_fail_naming_themselves(name: str):
    call = f"{name}()" if name in ("CURRENT_DATABASE", "GROUP_ID") else f"{name}(k)"
    with pytest.raises(Unsupported) as caught:
        translate_expression(call)
    assert name in str(caught.value).upper(), caught.value


@pytest.mark.parametrize("sql", ["LOCALTIME", "CURRENT_TIME", "(TIMESTAMP '2026-01-01 00:00:00', INTERVAL '1' HOUR) "
                                 "OVERLAPS (TIMESTAMP '2026-01-01 00:30:00', INTERVAL '1' HOUR)"])
def test_time_type_and_overlaps_fail_naming_the_construct(sql: str):
    with pytest.raises(Unsupported) as caught:
        translate_expression(sql)
    assert sql.split(" ")[0].strip("(") in str(caught.value) or "OVERLAPS" in str(caught.value)


@pytest.mark.parametrize(("flink", "spark_sql"), [
    ("HASH_CODE(k)", "AGGREGATE"),
    ("SPLIT_INDEX(k, ',', 1)", "TRY_ELEMENT_AT"),
    ("SHA256(k)", "SHA2(`k`, 256)"),
    ("REGEXP_EXTRACT(k, 'a(b)')", "REGEXP_EXTRACT(`k`, 'a(b)', 0)"),
    ("TRUNCATE(k, 2)", "FLOOR(`k`, 2)"),
    ("CONCAT_WS('~', k, v)", "CONCAT_WS('~', `k`, `v`)"),
    ("DECODE(k, 'UTF-8')", "DECODE(`k`, 'UTF-8')"),
    ("NOW()", "CURRENT_TIMESTAMP()"),
])
def test_functions_whose_spark_form_differs(flink: str, spark_sql: str):
    assert spark_sql.upper() in translate_expression(flink).upper()


# --- CAST of what is never a string: no parsing branch ---------------------------------------------


@pytest.mark.parametrize(("sql", "parsed"), [
    ("SELECT CAST(v * 2 AS DECIMAL(12, 2)) FROM t", False),
    ("SELECT CAST((v + 1) AS INT), CAST(-v AS BIGINT), CAST(1.5 AS DECIMAL(5, 1)) FROM t", False),
    ("SELECT k, CAST(SUM(v * 2) AS DECIMAL(18, 2)), CAST(COUNT(*) AS INT) FROM t GROUP BY k", False),
    ("SELECT CAST(v AS DECIMAL(12, 2)) FROM t", True),  # a column may be a STRING: Flink's parse of it
    ("SELECT k, CAST(MAX(v) AS INT) FROM t GROUP BY k", True),  # so may its MAX
    ("SELECT CAST('7' AS INT) FROM t", True),
])
def test_a_cast_parses_a_string_only_where_the_operand_can_be_one(sql: str, parsed: bool):
    """Flink parses a STRING cast to a number or DATE its own way (a branch Spark picks by the operand's
    type); arithmetic and number literals are never strings (Spark computes arithmetic on a string as a
    DOUBLE), so their CAST has no such branch for Spark to analyse and optimize."""
    assert ("= 'string'" in spark(sql)) is parsed


@pytest.mark.parametrize(("sql", "narrowed"), [
    ("SELECT CAST(v + 1 AS INT) FROM t", True),
    ("SELECT CAST(v AS TINYINT) FROM t", True),
    ("SELECT CAST(v AS DECIMAL(12, 2)) FROM t", False),
    ("SELECT TRY_CAST(v AS INT) FROM t", False),
])
def test_a_cast_to_an_integer_type_wraps_or_saturates_as_flink(sql: str, narrowed: bool):
    """A number too wide for an integer type is wrapped or saturated as Flink's Java does (Spark's ANSI
    cast fails): a branch by the operand's type (`_narrowed`; oracle case cast_integer_narrowing)."""
    assert ("LIKE 'decimal%'" in spark(sql)) is narrowed
