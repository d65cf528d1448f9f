"""Where the translator orders by arrival (Top-N ties, keep-last deduplication, ARRAY_AGG elements), how it
holds an outer interval join's unmatched rows until the watermark passes their interval
(translation/interval_join.py), and how a window aggregation is gated (windows.py): the Spark SQL the
engine runs, checked by shape; the results against Apache Flink are the oracle's (tests/oracle)."""

from __future__ import annotations

import pytest

from shift_left_dagster.local.windows import ARRIVAL_WATERMARK, WindowedQuery, gate_windows
from shift_left_dagster.project.parsing import parse_one_statement
from shift_left_dagster.translation.interval_join import ARRIVAL_MARK, ARRIVAL_RUN, INTERVAL_UNTIL
from shift_left_dagster.translation.spark import ARRIVAL, SparkQuery, translate_query


def translated(sql: str) -> SparkQuery:
    return translate_query(parse_one_statement(sql).tree, lambda _table: ["k", "v", "ts"])


@pytest.mark.parametrize(("sql", "arrival", "last_by"), [
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn = 1",
     True, "v"),  # the engine negates the position only when v is the time attribute
    ("SELECT k FROM (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) AS rn FROM t) WHERE rn <= 3",
     True, None),
    ("SELECT k, ARRAY_AGG(v) FROM t GROUP BY k", True, None),
    ("SELECT k, COUNT(*) FROM t GROUP BY k", False, None),
    ("SELECT a.k, ARRAY_AGG(b.v) FROM t AS a JOIN u AS b ON a.k = b.k GROUP BY a.k", False, None),  # no one table
])
def test_arrival_order_is_read_where_flink_follows_it(sql: str, arrival: bool, last_by: str | None) -> None:
    query = translated(sql)
    assert [(s.arrival, s.arrival_last_by) for s in query.scans][0] == (arrival, last_by)
    assert (ARRIVAL in query.sql) is arrival


def test_left_interval_join_keeps_an_unmatched_row_only_once_expired() -> None:
    query = translated("SELECT a.k, b.v FROM t AS a LEFT JOIN u AS b ON a.k = b.k "
                       "AND b.ts BETWEEN a.ts - INTERVAL '5' MINUTE AND a.ts + INTERVAL '10' MINUTE")
    assert [s.interval_time for s in query.scans] == ["ts", "ts"]
    assert f"+ 600001 <= :{INTERVAL_UNTIL}" in query.sql  # a.ts + upper bound + 1 ms
    assert "NOT `b`.`ts` IS NULL" in query.sql


def test_right_interval_join_keeps_an_unmatched_right_row_only_once_expired() -> None:
    query = translated("SELECT a.k, b.v FROM t AS a RIGHT JOIN u AS b ON a.k = b.k "
                       "AND b.ts BETWEEN a.ts - INTERVAL '5' MINUTE AND a.ts + INTERVAL '10' MINUTE")
    assert [s.interval_time for s in query.scans] == ["ts", "ts"]
    assert f"+ 300001 <= :{INTERVAL_UNTIL}" in query.sql  # b.ts + the most a.ts can exceed it + 1 ms
    assert "NOT `a`.`ts` IS NULL" in query.sql
    assert f"600001 <= :{INTERVAL_UNTIL}" not in query.sql  # an unmatched left row is never emitted


def test_full_interval_join_holds_both_sides() -> None:
    query = translated("SELECT a.k, b.v FROM t AS a FULL JOIN u AS b ON a.k = b.k "
                       "AND b.ts >= a.ts AND b.ts < a.ts + INTERVAL '2' HOUR")
    assert f"+ 7200000 <= :{INTERVAL_UNTIL}" in query.sql  # a.ts + 2 h - 1 ms + 1 ms
    assert f"+ 1 <= :{INTERVAL_UNTIL}" in query.sql  # b.ts + 0 + 1 ms
    assert "NOT `a`.`ts` IS NULL" in query.sql and "NOT `b`.`ts` IS NULL" in query.sql


def test_an_outer_interval_join_pairs_no_row_with_one_that_expired_before_its_run() -> None:
    query = translated("SELECT a.k, b.v FROM t AS a LEFT JOIN u AS b ON a.k = b.k "
                       "AND b.ts BETWEEN a.ts - INTERVAL '5' MINUTE AND a.ts + INTERVAL '10' MINUTE")
    on = query.sql.split(" ON ", 1)[1]
    # a left row read in an earlier run than b's: kept only while a.ts + 10 min + 1 ms is above b's run's watermark
    assert (f"`a`.`{ARRIVAL_RUN}` >= `b`.`{ARRIVAL_RUN}` OR UNIX_MILLIS(CAST(`a`.`ts` AS TIMESTAMP)) + 600001 > "
            f"`b`.`{ARRIVAL_MARK}`") in on
    assert (f"`b`.`{ARRIVAL_RUN}` >= `a`.`{ARRIVAL_RUN}` OR UNIX_MILLIS(CAST(`b`.`ts` AS TIMESTAMP)) + 300001 > "
            f"`a`.`{ARRIVAL_MARK}`") in on


@pytest.mark.parametrize("sql", [
    "SELECT a.k, b.v FROM t AS a JOIN u AS b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR",
    "SELECT a.k, b.v FROM t AS a LEFT JOIN u AS b ON a.k = b.k",
    "SELECT a.k, b.v FROM t AS a LEFT JOIN u AS b ON a.k = b.k AND b.ts <= a.ts + INTERVAL '1' HOUR",  # one bound
])
def test_inner_and_regular_joins_hold_nothing(sql: str) -> None:
    query = translated(sql)
    assert INTERVAL_UNTIL not in query.sql and ARRIVAL_RUN not in query.sql
    assert not any(s.interval_time for s in query.scans)


def test_a_window_over_a_table_is_gated_by_each_records_arrival_watermark() -> None:
    query = gate_windows(translated("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
                                    "INTERVAL '10' MINUTE)) GROUP BY window_start, window_end"))
    assert isinstance(query, WindowedQuery)
    assert query.arrival_views == [query.scans[0].view]
    assert f"> `{ARRIVAL_WATERMARK}`" in query.sql


def test_an_inner_window_of_a_cascade_is_recomputed_for_every_window_fired_so_far() -> None:
    query = gate_windows(translated(
        "WITH b AS (SELECT window_time AS wt, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
        "INTERVAL '5' MINUTE)) GROUP BY window_start, window_end, window_time) "
        "SELECT window_start, SUM(n) FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(wt), INTERVAL '15' MINUTE)) "
        "GROUP BY window_start, window_end"))
    assert query.sql.count(":sl_fired_until") == 2
    assert query.sql.count(":sl_fired_after") == 1  # only the outer window is gated from below
