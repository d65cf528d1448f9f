"""Data tests a team declares next to a table, run as asset checks (as dbt tests and SQLMesh audits are).

A table's folder may hold a `checks/` folder of Flink SQL queries, one per
file, each returning the rows that break a rule (no row: the test passes):

    pipelines/facts/p1/fct_order/checks/no_negative_amount.sql
        -- severity: warn            (optional; error, the default, blocks what depends on the table)
        SELECT * FROM fct_order WHERE amount < 0

The query names project tables as Flink does; it runs with Spark over the
sinks' current rows (the table's deployed version when blue/green). Its
check is named after the file (`no_negative_amount`). It counts the rows
of the table it tests as `compared_rows`: a test over an empty table that
its sources should have filled does not pass (see checks/runner.py).
These files are not part of a table's code: changing one never redeploys it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel
from pyspark.sql import DataFrame
from sqlglot import exp

from shift_left_dagster.checks.models import CheckName, Severity, Verdict
from shift_left_dagster.project.inventory import FlinkTable
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement
from shift_left_dagster.translation.spark import translate_query

FOLDER = "checks"
_SEVERITY = re.compile(r"^\s*--\s*severity\s*:\s*(\w+)\s*$", re.IGNORECASE | re.MULTILINE)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DataTest(BaseModel):
    """One declared test: its check name, file, query and severity (error blocks, warn never does).

    A file that can not be used (`problem`) is still a check, one that fails saying why: a bad test
    file never stops the project from loading."""

    table: str
    name: str
    path: str
    sql: str
    severity: Severity = Severity.ERROR
    problem: str | None = None

    @property
    def blocking(self) -> bool:
        return self.severity == Severity.ERROR


def discover(root: Path, tables: Mapping[str, FlinkTable]) -> dict[str, list[DataTest]]:
    """Each table's declared tests, from `<table folder>/checks/*.sql` (tables without any are left out)."""
    found: dict[str, list[DataTest]] = {}
    base = str(root)
    for table in tables.values():
        if os.path.isdir(os.path.join(base, table.folder, FOLDER)):  # strings: this runs for every table, every load
            tests = [_read(table.name, path) for path in sorted((root / table.folder / FOLDER).glob("*.sql"))]
            if tests:
                found[table.name] = tests
    return found


def _read(table: str, path: Path) -> DataTest:
    sql = path.read_text()
    name = path.stem
    if not _NAME.match(name):
        return DataTest(table=table, name=re.sub(r"\W", "_", name) or "unnamed", path=str(path), sql=sql,
                        problem=f"{path}: a data test's file name is its check name: letters, digits and _ only")
    if name in set(CheckName):
        return DataTest(table=table, name=f"{name}_test", path=str(path), sql=sql,
                        problem=f"{path}: {name} is a built-in check's name; rename the file")
    declared = _SEVERITY.search(sql)
    if declared is None:
        return DataTest(table=table, name=name, path=str(path), sql=sql)
    if declared.group(1).lower() not in set(Severity):
        line = sql[:declared.start()].count("\n") + 1
        return DataTest(table=table, name=name, path=str(path), sql=sql,
                        problem=f"{path}:{line}: severity must be error or warn, not {declared.group(1)!r}")
    return DataTest(table=table, name=name, path=str(path), sql=sql, severity=Severity(declared.group(1).lower()))


def run_data_test(test: DataTest, rows: Callable[[str], DataFrame], sink: str, samples: int) -> Verdict:
    """The rows `test` returns over the current rows of the tables it names (`rows(table)`, the table
    under test read from `sink`): a pass when there are none; `compared_rows` counts the tested table's rows."""
    if test.problem:
        raise ValueError(test.problem)  # the check fails, "could not be evaluated", naming the file
    try:
        query = parse_one_statement(test.sql, test.path).tree
    except FlinkSqlError as error:
        raise ValueError(str(error)) from None
    if not isinstance(query, exp.Query):
        raise ValueError(f"{test.path}: a data test is one SELECT returning the offending rows")

    def read(name: str) -> DataFrame:
        return rows(sink if name == test.table else name)

    translated = translate_query(query, lambda t: read(t.name).columns)
    for scan in translated.scans:
        read(scan.table.name).createOrReplaceTempView(scan.view)
    tested = read(test.table)
    offending = tested.sparkSession.sql(translated.sql)
    sample = [row.asDict(recursive=True) for row in offending.limit(samples).collect()] if samples else []
    failing = offending.count() if sample or not samples else 0  # no sample row: nothing to count
    compared = tested.count()
    metadata = {"compared_rows": compared, "failing_rows": failing, "sample_rows": _jsonable(sample),
                "test_file": test.path, "query": test.sql.strip()}
    if failing:
        return False, f"{failing} offending row(s) returned by {Path(test.path).name} over {compared} rows", metadata
    return True, f"no offending row over {compared} rows of {test.table}", metadata


def _jsonable(rows: list[dict]) -> list[dict]:
    return [{k: v if isinstance(v, (int, float, str, bool, type(None))) else str(v) for k, v in row.items()}
            for row in rows]

