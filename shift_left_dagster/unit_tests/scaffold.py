"""`test init`: write a table's tests/ folder from its DML's inputs (files a team then edits).

One `ddl_<parent>.sql` per table the DML reads (its DDL on the `_ut` twin),
per case one `insert_<parent>_<case>.sql` with sample rows, one
`validate_<table>_<case>.sql` returning 'PASS' or 'FAIL', and
test_definitions.yaml. Sample values depend on the column name and row, so
columns of the same name join across parents. Existing files are kept.
"""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp

import shift_left_dagster.unit_tests.layout as layout
from shift_left_dagster.project.analysis import Column, analyze_ddl
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from shift_left_dagster.project.parsing import FLINK, parse_statements
from shift_left_dagster.unit_tests.models import Foundation, TestCase, TestData, TestDefinition
from shift_left_dagster.unit_tests.sql import on_twins, twins

SAMPLE_ROWS = 3
Type = exp.DataType.Type
_TEXT = {Type.TEXT, Type.VARCHAR, Type.CHAR, Type.NCHAR, Type.NVARCHAR}
_INTEGERS = {Type.TINYINT, Type.SMALLINT, Type.INT, Type.BIGINT}


def init_tests(table: str, pipelines: str | Path | None = None, *, cases: int = 2, postfix: str = "_ut",
               overwrite: bool = False, graph: ProjectGraph | None = None) -> list[Path]:
    """Write `table`'s tests/ folder; the files written (existing ones are kept unless `overwrite`)."""
    graph = graph or ProjectGraph(build_inventory(pipelines, use_cache=False, strict=False))
    graph.require(table)
    entry = graph.tables[table]
    if entry.dml is None:
        raise ValueError(f"{table} has no DML: there is no statement to unit test")
    folder = graph.inventory.root / entry.folder
    (folder / layout.TESTS_FOLDER).mkdir(parents=True, exist_ok=True)
    parents = entry.tables_read
    mapping = twins(parents + [table], postfix)
    written: list[Path] = []

    def write(relative: str, text: str) -> None:
        path = folder / relative
        if overwrite or not path.exists():
            path.write_text(text)
            written.append(path)

    columns: dict[str, list[Column]] = {}
    for parent in parents:
        ddl = parent_ddl(graph, parent)
        columns[parent] = [c for c in analyze_ddl(parse_statements(ddl, parent)[0]).columns if not c.computed]
        write(layout.ddl_file(parent), ";\n".join(on_twins(ddl, mapping, parent)) + ";\n")
    definition = TestDefinition(foundations=[Foundation(table_name=p, ddl_for_test=layout.ddl_file(p))
                                             for p in parents])
    stored = [c.name for c in entry.ddl.columns if not c.computed] if entry.ddl else []
    for number in range(1, cases + 1):
        case = str(number)
        for parent in parents:
            write(layout.insert_file(parent, case), insert_sql(f"{parent}{postfix}", columns[parent]))
        write(layout.validate_file(table, case), validate_sql(table, f"{table}{postfix}", case, stored))
        definition.test_suite.append(TestCase(
            name=layout.case_name(table, case),
            inputs=[TestData(table_name=p, file_name=layout.insert_file(p, case), file_type="sql") for p in parents],
            outputs=[TestData(table_name=table, file_name=layout.validate_file(table, case), file_type="sql")]))
    path = folder / layout.TESTS_FOLDER / layout.DEFINITION_FILE
    if overwrite or not path.exists():
        written.append(layout.save_definition(folder, definition))
    return written


def parent_ddl(graph: ProjectGraph, parent: str) -> str:
    """The CREATE TABLE of a table the DML reads: the project's, else the seed file's (raw topics)."""
    entry = graph.tables.get(parent)
    if entry is not None and entry.ddl_path:
        return (graph.inventory.root / entry.ddl_path).read_text()
    seed = graph.inventory.root / "seeds" / f"{parent}.sql"
    if seed.is_file():
        creates = [s.sql for s in parse_statements(seed.read_text(), str(seed)) if isinstance(s.tree, exp.Create)]
        if creates:
            return creates[0]
    raise ValueError(f"no DDL found for {parent} (neither a project table nor seeds/{parent}.sql): "
                     f"write tests/ddl_{parent}.sql by hand")


def insert_sql(twin: str, columns: list[Column]) -> str:
    names = ", ".join(f"`{c.name}`" for c in columns)
    rows = ",\n".join("(" + ", ".join(sample(c.name, c.type, row) for c in columns) + ")"
                      for row in range(1, SAMPLE_ROWS + 1))
    return f"INSERT INTO {twin}\n({names})\nVALUES\n{rows};\n"


def validate_sql(table: str, twin: str, case: str, columns: list[str]) -> str:
    listed = ", ".join(columns) or "*"
    return (f"-- validate_{table}_{case}: one row, 'PASS' when {twin} holds what case {case} expects.\n"
            f"-- Edit the condition (columns: {listed}).\n"
            f"SELECT CASE WHEN COUNT(*) > 0 THEN 'PASS' ELSE 'FAIL' END AS test_result\nFROM {twin};\n")


def sample(column: str, flink_type: str, row: int) -> str:
    """A literal of `flink_type` for `row` (the same for the same column name in every table)."""
    return _literal(column, exp.DataType.build(flink_type, dialect=FLINK), row)


def _literal(column: str, kind: exp.DataType, row: int) -> str:
    this = kind.this
    if this in _TEXT:
        return f"'{column}_{row}'"
    if this in _INTEGERS:
        return str(row)
    if this in (Type.FLOAT, Type.DOUBLE):
        return f"{row}.5"
    if this == Type.DECIMAL:
        return f"CAST({row * 10}.5 AS {kind.sql(dialect=FLINK)})"
    if this == Type.BOOLEAN:
        return "TRUE" if row % 2 else "FALSE"
    if this == Type.DATE:
        return f"DATE '2026-01-0{row}'"
    if this in (Type.TIMESTAMP, Type.TIMESTAMPNTZ, Type.DATETIME):
        return f"TIMESTAMP '2026-01-0{row} 00:00:00'"
    if this in (Type.TIMESTAMPLTZ, Type.TIMESTAMPTZ):
        return f"CAST(TIMESTAMP '2026-01-0{row} 00:00:00' AS {kind.sql(dialect=FLINK)})"
    params = [p for p in kind.expressions if isinstance(p, exp.DataType)]
    if this == Type.ARRAY and params:
        return f"ARRAY[{_literal(column, params[0], row)}]"
    if this == Type.MAP and len(params) == 2:
        return f"MAP[{_literal(column, params[0], row)}, {_literal(column, params[1], row)}]"
    if this == Type.STRUCT:
        fields = [f for f in kind.expressions if isinstance(f, exp.ColumnDef) and f.args.get("kind") is not None]
        return "ROW(" + ", ".join(_literal(f.name, f.args["kind"], row) for f in fields) + ")"
    return f"CAST(NULL AS {kind.sql(dialect=FLINK)})"
