"""`SELECT *` has one meaning for column lineage and for the translator (project/stars.py): each case's
expected columns are written by hand from Flink's rule (the sources' visible columns, FROM then the
joins in order; $rowtime never; a window TVF adds window_start, window_end, window_time)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from shift_left_dagster.project.lineage import compute_lineage
from shift_left_dagster.project.parsing import parse_one_statement
from shift_left_dagster.project.stars import SYSTEM, expand_stars
from shift_left_dagster.translation.spark import translate_query

COLUMNS = {"t": ["k", "v", "ts"], "u": ["k2", "w"]}
CASES = [
    ("SELECT * FROM t", ["k", "v", "ts"]),
    ("SELECT b.*, a.v FROM t AS a JOIN u AS b ON a.k = b.k2", ["k2", "w", "v"]),
    ("SELECT * FROM u, t", ["k2", "w", "k", "v", "ts"]),
    ("WITH c AS (SELECT * FROM u) SELECT * FROM c", ["k2", "w"]),
    ("WITH c AS (SELECT k, v FROM t), d AS (SELECT * FROM c) SELECT * FROM d", ["k", "v"]),
    ("SELECT * FROM (SELECT k, v FROM t) AS x JOIN u ON x.k = u.k2", ["k", "v", "k2", "w"]),
    ("SELECT * FROM (SELECT k FROM t UNION ALL SELECT k2 FROM u) AS s", ["k"]),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
     ["k", "v", "ts", "window_start", "window_end", "window_time"]),
]


def translated(sql: str) -> list[str]:
    query = translate_query(parse_one_statement(sql).tree, lambda table: COLUMNS[table.name]).sql
    return [e.alias_or_name for e in sqlglot.parse_one(query, read="spark").expressions]


def traced(sql: str) -> list[str]:
    result = compute_lineage("out", f"INSERT INTO out {sql}", None, COLUMNS)
    return [*result.columns, *result.unknown]


@pytest.mark.parametrize(("sql", "expected"), CASES)
def test_the_translator_and_lineage_expand_a_star_alike(sql: str, expected: list[str]):
    assert translated(sql) == expected
    assert traced(sql) == expected


def test_a_star_over_a_table_of_unknown_columns_is_left_as_written():
    tree = sqlglot.parse_one("SELECT *, u.* FROM t JOIN u ON t.k = u.k2")
    expand_stars(tree, lambda table: COLUMNS["u"] if table.name == "u" else None)
    assert [e.sql() for e in tree.expressions] == ["*", '"u"."k2"', '"u"."w"']


def test_a_system_projection_is_selectable_but_never_part_of_a_star():
    tree = sqlglot.parse_one("SELECT * FROM (SELECT k, ts AS rt FROM t) AS x")
    inner = tree.find(exp.Subquery).this
    inner.expressions[1].meta[SYSTEM] = True
    expand_stars(tree, lambda table: COLUMNS[table.name])
    assert [e.sql() for e in tree.expressions] == ['"x"."k"']


@pytest.mark.parametrize("sql", ["SELECT * FROM (VALUES (1, 'a')) AS v", "SELECT * FROM (VALUES (1, 'a'))"])
def test_a_star_over_values_without_a_column_list_has_flinks_names(sql: str):
    assert translated(sql) == ["EXPR$0", "EXPR$1"]  # Calcite names unnamed VALUES columns EXPR$0, EXPR$1, ...
