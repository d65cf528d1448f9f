"""What the translator tags as an event-time operator's input (and the rule by which it drops late
rows), the SESSION TVF syntax, and how an operator's watermark combines its inputs' (event_time.py)."""

from __future__ import annotations

import pytest

from shift_left_dagster.local.event_time import combine
from shift_left_dagster.project.parsing import parse_one_statement, to_flink_sql
from shift_left_dagster.translation.spark import LateRule, translate_query


def tags(sql: str) -> list[tuple[str, str | None, bool]]:
    query = translate_query(parse_one_statement(sql).tree, lambda _table: ["k", "v", "ts"])
    return [(s.table.name, s.event_time, s.versioned) for s in query.scans]


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY $rowtime ASC) AS rn FROM t) WHERE rn = 1",
     [("t", "$rowtime", False)]),
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY $rowtime DESC) AS rn FROM t) WHERE rn = 1",
     [("t", None, False)]),  # keep-last emits at once
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t) WHERE rn <= 3",
     [("t", None, False)]),  # a Top-N, not a deduplication
    ("SELECT k, SUM(v) OVER w FROM t WINDOW w AS (PARTITION BY k ORDER BY ts "
     "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)", [("t", "ts", False)]),
    ("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY $rowtime ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
     [("t", "$rowtime", False)]),
    ("SELECT k, RANK() OVER (PARTITION BY k ORDER BY ts) FROM t", [("t", None, False)]),
    ("SELECT o.k FROM o JOIN r FOR SYSTEM_TIME AS OF o.`$rowtime` AS x ON o.k = x.k",
     [("o", "$rowtime", False), ("r", None, True)]),
    ("SELECT k, v FROM t", [("t", None, False)]),
])
def test_event_time_operator_inputs_are_tagged_with_their_time_column(
        sql: str, expected: list[tuple[str, str | None, bool]]) -> None:
    assert tags(sql) == expected


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t) WHERE rn = 1",
     LateRule("before")),  # keep-first: a row before the watermark
    ("SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts) FROM t", LateRule("after")),  # default frame: unbounded
    ("SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t",
     LateRule("after")),
    ("SELECT k, SUM(v) OVER w FROM t WINDOW w AS (PARTITION BY k, v ORDER BY ts "
     "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)", LateRule("key", ("k", "v"), 3_600_000)),
    # a RANGE frame's key state is cleared by Flink's cleanup timer: modelled where the OVER reads its table
    # alone, directly or through CTEs and derived tables that filter and project it (the view carries the
    # clearings, each SELECT on the way passes them on, the OVER partitions by them); the WHEREs on the way
    # decide which rows move a key's state
    ("WITH c AS (SELECT * FROM t) SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts "
     "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM c", LateRule("key", ("k",), 3_600_000)),
    ("SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) "
     "FROM (SELECT k, v, ts FROM t WHERE v > 0) AS d WHERE k <> 'x'",
     LateRule("key", ("k",), 3_600_000, "(`k` <> 'x') AND (`v` > 0)")),
    ("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t "
     "WHERE v IS NOT NULL", LateRule("key", ("k",), None, "(NOT `v` IS NULL)")),
    # not plain on the way (an aggregation, a renamed key, a subquery in the WHERE): the rule by key names alone
    ("WITH c AS (SELECT k, ts, COUNT(*) AS v FROM t GROUP BY k, ts) SELECT k, SUM(v) OVER (PARTITION BY k "
     "ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM c", LateRule("key", ("k",))),
    ("WITH c AS (SELECT v AS k, ts FROM t) SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts "
     "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM c", LateRule("key", ("k",))),
    ("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT "
     "ROW) FROM t WHERE k IN (SELECT k FROM t)", LateRule("key", ("k",))),
    ("SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
     LateRule("key", ("k",))),
    ("SELECT k, COUNT(*) OVER (PARTITION BY UPPER(k) ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
     LateRule("key")),  # an expression key: all rows one key
    ("SELECT o.k FROM o JOIN r FOR SYSTEM_TIME AS OF o.`$rowtime` AS x ON o.k = x.k", None),  # probe rows wait
])
def test_event_time_operator_inputs_carry_flinks_late_row_rule(sql: str, expected: LateRule | None) -> None:
    query = translate_query(parse_one_statement(sql).tree, lambda _table: ["k", "v", "ts"])
    assert query.scans[0].late == expected
    assert query.scans[0].clearings == (expected is not None and expected.range_ms is not None)


@pytest.mark.parametrize("partition", ["", " PARTITION BY k", " PARTITION BY (k, v)"])
def test_the_session_tvf_parses_with_and_without_partition_keys(partition: str) -> None:
    sql = (f"SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE t{partition}, DESCRIPTOR(ts), "
           "INTERVAL '10' MINUTE)) GROUP BY window_start, window_end")
    written = to_flink_sql(parse_one_statement(sql).tree)
    assert written == to_flink_sql(parse_one_statement(written).tree)
    assert ("PARTITION BY (" in written) is bool(partition)
    assert "window_start" in translate_query(parse_one_statement(sql).tree, lambda _t: ["k", "v", "ts"]).sql


@pytest.mark.parametrize(("previous", "active", "settled", "expected"), [
    (None, [10, 30], [], 10),  # the minimum over inputs that read records
    (None, [10, 30], [10, 30], 30),  # every input idle after the run: the highest of them
    (50, [10, 30], [10, 30], 50),  # never decreasing
    (5, [None, None], [], 5),  # all idle, idleness off: unchanged
    (None, [None], [], None),
])
def test_an_operator_watermark_combines_its_inputs(previous: int | None, active: list[int | None],
                                                   settled: list[int | None], expected: int | None) -> None:
    assert combine(previous, active, settled) == expected
