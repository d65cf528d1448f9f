"""Deploy-time SQL transforms: hints on sources, renamed tables; targets untouched."""

from sqlglot import exp

from shift_left_dagster.deploy.rewrite import rename_tables, specific_offsets_options, with_source_options
from shift_left_dagster.project.dialect import OptionsHint
from shift_left_dagster.project.parsing import parse_one_statement

DML = "INSERT INTO z SELECT * FROM x /*+ OPTIONS('a'='b') */ AS xx JOIN y ON xx.k = y.k"


def hints(sql: str) -> dict[str, dict[str, str]]:
    tree = parse_one_statement(sql).tree
    return {h.parent.name: h.options for h in tree.find_all(OptionsHint)}


def test_source_options_merge_with_existing_hints_and_skip_the_target():
    out = with_source_options(DML, {"x": {"c": "d"}, "y": specific_offsets_options({1: 7, 0: 3}), "z": {"no": "no"}})
    assert hints(out) == {
        "x": {"a": "b", "c": "d"},
        "y": {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:3;partition:1,offset:7"},
    }


def test_rename_tables_everywhere():
    out = rename_tables(DML, {"z": "z_v2", "x": "x_v2"})
    tree = parse_one_statement(out).tree
    assert sorted(t.name for t in tree.find_all(exp.Table)) == ["x_v2", "y", "z_v2"]
    assert hints(out) == {"x_v2": {"a": "b"}}
