"""Interval literals: the local service refuses the leading fields Flink refuses, in Flink's words.

Each verdict below is Apache Flink 2.3's (`SELECT INTERVAL ...` validated by PyFlink's planner);
tests/oracle/corpus/interval_leading_precision.yaml and interval_declared_precision.yaml check the
same against Flink itself.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from shift_left_dagster.project.parsing import FLINK, FlinkSqlError, parse_statements
from shift_left_dagster.translation.interval_join import hold_unmatched_rows
from shift_left_dagster.translation.intervals import interval_ms, refuse_wide_intervals

FLINK_ACCEPTS = ["'600' SECOND(3)", "'-99' SECOND", "'99.999' SECOND", "'13' MONTH", "'1 23' DAY TO HOUR",
                 "'25:00' HOUR TO MINUTE", "'100:59' MINUTE(3) TO SECOND", "'1 2:3:4.5' DAY TO SECOND", "'10' MINUTE"]
FLINK_REFUSES = {
    "'600' SECOND": "Interval field value 600 exceeds precision of SECOND(2) field",
    "'1000' SECOND(3)": "Interval field value 1,000 exceeds precision of SECOND(3) field",
    "'-600' SECOND": "Interval field value -600 exceeds precision of SECOND(2) field",
    "'+600' SECOND": "Interval field value 600 exceeds precision of SECOND(2) field",
    "'0600' SECOND": "Interval field value 600 exceeds precision of SECOND(2) field",
    "'100.5' SECOND": "Interval field value 100 exceeds precision of SECOND(2) field",
    "'120' YEAR": "Interval field value 120 exceeds precision of YEAR(2) field",
    "'100' MONTH": "Interval field value 100 exceeds precision of MONTH(2) field",
    "'1000' DAY": "Interval field value 1,000 exceeds precision of DAY(2) field",
    "'100:59' MINUTE TO SECOND": "Interval field value 100 exceeds precision of MINUTE(2) field",
    "'100:00' HOUR TO MINUTE": "Interval field value 100 exceeds precision of HOUR(2) field",
}


def _check(sql: str) -> None:
    for statement in parse_statements(sql, "q.sql"):
        refuse_wide_intervals(statement, "q.sql")


@pytest.mark.parametrize("literal", FLINK_ACCEPTS)
def test_what_flink_accepts_is_accepted(literal: str) -> None:
    _check(f"SELECT a + INTERVAL {literal} FROM t")


@pytest.mark.parametrize("literal", sorted(FLINK_REFUSES))
def test_what_flink_refuses_is_refused_in_its_words(literal: str) -> None:
    with pytest.raises(FlinkSqlError, match=FLINK_REFUSES[literal].replace("(", r"\(").replace(")", r"\)")):
        _check(f"SELECT a + INTERVAL {literal} FROM t")


def test_a_watermark_delay_names_its_line_and_the_literal_to_write() -> None:
    ddl = "CREATE TABLE c (\n  ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts - INTERVAL '600' SECOND\n)"
    with pytest.raises(FlinkSqlError, match=r"^q\.sql:3: .* write INTERVAL '600' SECOND\(3\) or a larger unit$"):
        _check(ddl)


@pytest.mark.parametrize("bound", ["INTERVAL '10' MINUTE", "INTERVAL '600' SECOND(3)", "INTERVAL '0.5' SECOND"])
def test_an_interval_join_reads_its_bound_whatever_the_literal(bound: str) -> None:
    """One reader of interval literals (intervals.interval_ms) for joins and watermarks: a declared leading
    precision or a fraction still makes the outer join an interval join."""
    tree = sqlglot.parse_one(f"SELECT l.k FROM l LEFT JOIN r ON l.k = r.k AND r.ts BETWEEN l.ts AND l.ts + {bound}",
                             read=FLINK)
    hold_unmatched_rows(tree, {})
    assert "sl_interval_until" in tree.sql(dialect="spark")
    assert interval_ms(tree.find(exp.Interval)) == {"INTERVAL '10' MINUTE": 600_000,
                                                    "INTERVAL '600' SECOND(3)": 600_000,
                                                    "INTERVAL '0.5' SECOND": 500}[bound]
