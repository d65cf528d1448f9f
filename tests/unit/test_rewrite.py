"""Deploy-time SQL transforms: hints on sources, renamed tables; targets untouched."""

from sqlglot import exp

from shift_left_dagster.deploy.rewrite import rename_tables, specific_offsets_options, with_source_options
from shift_left_dagster.project.dialect import OptionsHint
from shift_left_dagster.project.parsing import parse_one_statement, to_flink_sql

DML = "INSERT INTO z SELECT * FROM x /*+ OPTIONS('a'='b') */ AS xx JOIN y ON xx.k = y.k"


def hints(sql: str) -> dict[str, dict[str, str]]:
    tree = parse_one_statement(sql).tree
    return {h.parent.name: h.options for h in tree.find_all(OptionsHint)}


def test_source_options_merge_with_existing_hints_and_skip_the_target():
    out = with_source_options(DML, {"x": {"c": "d"}, "y": specific_offsets_options({1: 7, 0: 3}), "z": {"no": "no"}})
    assert hints(out) == {
        "x": {"a": "b", "c": "d"},
        "y": {"scan.startup.mode": "specific-offsets",
              "scan.startup.specific-offsets": "partition:0,offset:3;partition:1,offset:7"},
    }


def test_rename_tables_everywhere():
    out = rename_tables(DML, {"z": "z_v2", "x": "x_v2"})
    tree = parse_one_statement(out).tree
    assert sorted(t.name for t in tree.find_all(exp.Table)) == ["x_v2", "y", "z_v2"]
    assert hints(out) == {"x_v2": {"a": "b"}}


def test_windowed_dml_bounds_every_source_and_filters_the_driver_on_rowtime():
    from datetime import datetime

    from shift_left_dagster.deploy.backfill import windowed_dml

    sql = ("INSERT INTO f WITH j AS (SELECT o.k, p.v FROM o JOIN p ON o.k = p.k) "
           "SELECT k, SUM(v) FROM j GROUP BY k")
    out = windowed_dml(sql, datetime(2026, 1, 2), datetime(2026, 1, 4))
    start, end = "1767312000000", "1767484800000"  # the exact event-time filter
    # the scan reaches a day (the default lateness) either side, so out-of-order records are read
    window = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1767225600000",
              "scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "1767571200000"}
    assert hints(out) == {"o": window, "p": window}  # the CTE name j gets no hint
    tree = parse_one_statement(out).tree
    (cte_select,) = [c.this for c in tree.find_all(exp.CTE)]
    where = to_flink_sql(cte_select.args["where"])
    assert f"o.`$rowtime` >= TO_TIMESTAMP_LTZ({start}, 3)" in where
    assert f"o.`$rowtime` < TO_TIMESTAMP_LTZ({end}, 3)" in where
