"""`test run`: each case of a table's suite on fresh `_ut` twins, then the validation, then cleanup.

Per case: drop leftover twins, create the parents' twins (tests/ddl_*.sql)
and the table's own (its DDL renamed), insert the case's rows, run the
table's DML over the twins bounded to what was inserted (so it COMPLETES
on any Flink service: the sync point), run each validation query, and
remove every statement and twin. Cases never see each other's rows.

A validation passes when its first column says 'PASS' on every row it
returns (shift_left's convention); a query without a PASS/FAIL first
column passes when it returns at least one row; no row never passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import shift_left_dagster.unit_tests.layout as layout
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.deploy.bounded import run_bounded
from shift_left_dagster.deploy.rewrite import with_source_options
from shift_left_dagster.project.analysis import analyze_ddl
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable, build_inventory
from shift_left_dagster.project.parsing import parse_statements
from shift_left_dagster.unit_tests.models import CaseResult, TestCase, TestDefinition, UnitTestReport
from shift_left_dagster.unit_tests.scaffold import parent_ddl
from shift_left_dagster.unit_tests.sql import csv_insert, on_twins, twins

BOUNDED = {"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
VERDICTS = {"PASS", "FAIL"}


class CaseFailed(RuntimeError):
    """A statement of a case failed: the case fails, naming the file."""


def run_tests(table: str, case: str | None = None, *, client: ConfluentClient, pipelines: str | Path | None = None,
              graph: ProjectGraph | None = None, postfix: str = "_ut", timeout: float = 300.0,
              keep: bool = False) -> UnitTestReport:
    """Run every case of `table`'s tests/ folder (or the one named `case`: its name or number)."""
    graph = graph or ProjectGraph(build_inventory(pipelines, use_cache=False, strict=False))
    graph.require(table)
    entry = graph.tables[table]
    if entry.dml_path is None or entry.ddl_path is None:
        raise ValueError(f"{table} needs a DDL and a DML to be unit tested")
    folder = graph.inventory.root / entry.folder
    definition = layout.load_definition(folder, table, entry.tables_read)
    cases = [definition.case(case, table)] if case else definition.test_suite
    report = UnitTestReport(table=table)
    for index, chosen in enumerate(cases, start=1):
        run = _CaseRun(client, graph, entry, folder, definition, postfix, timeout, index)
        try:
            report.cases.append(run.execute(chosen))
        except (CaseFailed, ConfluentError, ValueError) as error:
            report.cases.append(CaseResult(name=chosen.name, passed=False, detail=str(error)))
        finally:
            if not keep:
                run.clean_up()
    return report


def tables_with_tests(pipelines: str | Path | None = None, graph: ProjectGraph | None = None) -> list[str]:
    """Every table of the project with a tests/ folder: what a team's CI runs, e.g.
    `@pytest.mark.parametrize("table", tables_with_tests())` then `assert run_tests(table, client=...).passed`."""
    graph = graph or ProjectGraph(build_inventory(pipelines, use_cache=False, strict=False))
    return [name for name, entry in graph.tables.items() if layout.has_tests(graph.inventory.root / entry.folder)]


def verdict(rows: list[list[object]]) -> tuple[bool, str]:
    """What a validation query's rows say (see the module docstring)."""
    if not rows:
        return False, "the validation returned no row"
    firsts = [str(r[0]).upper() if r else "" for r in rows]
    if all(f in VERDICTS for f in firsts):
        failed = firsts.count("FAIL")
        return (not failed, f"validation: {len(rows) - failed} PASS, {failed} FAIL" if failed
                else f"validation: {len(rows)} PASS")
    return True, f"validation returned {len(rows)} row(s)"


class _CaseRun:
    """The statements and twins of one case, so they can all be removed."""

    def __init__(self, client: ConfluentClient, graph: ProjectGraph, entry: FlinkTable, folder: Path,
                 definition: TestDefinition, postfix: str, timeout: float, index: int) -> None:
        self.client, self.graph, self.entry, self.folder = client, graph, entry, folder
        self.definition, self.timeout = definition, timeout
        parents = sorted({f.table_name for f in definition.foundations} | set(entry.tables_read))
        self.parents = parents
        self.mapping = twins(parents + [entry.name], postfix)
        self.prefix = f"ut-{_slug(entry.name)}-{index}"
        self.statements: list[str] = []
        self.twins = [self.mapping[p] for p in parents] + [self.mapping[entry.name]]

    def execute(self, case: TestCase) -> CaseResult:
        self.clean_up()  # twins left by an interrupted run
        for parent in self.parents:
            self._run("ddl", self._foundation_ddl(parent), parent)
        for sql in on_twins(self._read(self.entry.ddl_path or ""), self.mapping, self.entry.ddl_path or ""):
            self._run("ddl", sql, self.entry.name)
        for number, data in enumerate(case.inputs, start=1):
            for sql in self._inputs(data.table_name, data.file_name, data.kind):
                self._run(f"ins-{number}", sql, data.file_name)
        bounded = {self.mapping[p]: BOUNDED for p in self.parents}
        for sql in on_twins(self._read(self.entry.dml_path or ""), self.mapping, self.entry.dml_path or ""):
            self._run("dml", with_source_options(sql, bounded), self.entry.dml_path or "")
        rows: list[list[object]] = []
        passed, details = True, []
        for number, output in enumerate(case.outputs, start=1):
            for sql in on_twins(self._read(output.file_name), self.mapping, output.file_name):
                name = self._run(f"val-{number}", with_source_options(sql, {self.mapping[self.entry.name]: BOUNDED}),
                                 output.file_name)
                found = [list(r.row) for r in self.client.statement_results(name)]
                ok, detail = verdict(found)
                rows += found
                passed = passed and ok
                details.append(f"{Path(output.file_name).name}: {detail}")
        if not case.outputs:
            passed, details = False, ["the case has no validation file"]
        return CaseResult(name=case.name, passed=passed, detail="; ".join(details), validation_rows=rows)

    def clean_up(self) -> None:
        for name in self.statements:
            self.client.delete_statement(name, timeout=self.timeout)
        self.statements.clear()
        for index, twin in enumerate(self.twins):
            run_bounded(self.client, f"{self.prefix}-drop-{index}", f"DROP TABLE IF EXISTS `{twin}`",
                        timeout=self.timeout)

    def _run(self, what: str, sql: str, source: str) -> str:
        """A statement of the case, kept (its results are read) until clean_up."""
        name = f"{self.prefix}-{what}-{len(self.statements)}"
        self.statements.append(name)
        try:
            run_bounded(self.client, name, sql, timeout=self.timeout, keep=True)
        except ConfluentError as error:
            raise CaseFailed(f"{source}: {error}") from error
        return name

    def _foundation_ddl(self, parent: str) -> str:
        declared = next((f for f in self.definition.foundations if f.table_name == parent), None)
        text = self._read(declared.ddl_for_test) if declared else parent_ddl(self.graph, parent)
        return "; ".join(on_twins(text, self.mapping, parent))

    def _inputs(self, parent: str, file_name: str, kind: str) -> list[str]:
        text = self._read(file_name)
        if kind == "csv":
            ddl = analyze_ddl(parse_statements(self._foundation_ddl(parent), parent)[0])
            return [csv_insert(self.mapping[parent], text, {c.name: c.type for c in ddl.columns})]
        return on_twins(text, self.mapping, file_name)

    def _read(self, relative: str) -> str:
        path = (self.folder / relative) if not Path(relative).is_absolute() else Path(relative)
        if not path.is_file():
            path = self.graph.inventory.root / relative  # project-relative paths (ddl_path, dml_path)
        if not path.is_file():
            raise ValueError(f"{relative}: no such file under {self.folder}")
        return path.read_text()


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:60]
