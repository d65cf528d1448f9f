"""Where a table's unit tests live and how their files are named (shift_left's layout).

    <table folder>/tests/
        test_definitions.yaml          the suite (optional: else found from the file names)
        ddl_<parent>.sql               CREATE TABLE of the parent's `_ut` twin
        insert_<parent>_<case>.sql     rows of the parent for a case (or .csv: a header, then rows)
        validate_<table>_<case>.sql    a query over `<table>_ut`: 'PASS'/'FAIL', or rows
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from shift_left_dagster.unit_tests.models import Foundation, TestCase, TestData, TestDefinition

DEFINITION_FILE = "test_definitions.yaml"
TESTS_FOLDER = "tests"


def ddl_file(parent: str) -> str:
    return f"./{TESTS_FOLDER}/ddl_{parent}.sql"


def insert_file(parent: str, case: str, kind: str = "sql") -> str:
    return f"./{TESTS_FOLDER}/insert_{parent}_{case}.{kind}"


def validate_file(table: str, case: str) -> str:
    return f"./{TESTS_FOLDER}/validate_{table}_{case}.sql"


def case_name(table: str, case: str) -> str:
    return f"test_{table}_{case}"


def load_definition(table_folder: Path, table: str, parents: list[str]) -> TestDefinition:
    """The suite of test_definitions.yaml, else the one the file names describe."""
    tests = table_folder / TESTS_FOLDER
    path = tests / DEFINITION_FILE
    if path.is_file():
        return TestDefinition.model_validate(yaml.safe_load(path.read_text()) or {})
    if not tests.is_dir():
        raise ValueError(f"{table} has no {TESTS_FOLDER}/ folder: run `shift-left-dagster test init {table}` first")
    return discover(tests, table, parents)


def discover(tests: Path, table: str, parents: list[str]) -> TestDefinition:
    """Cases from validate_<table>_<case>.sql, their inputs from insert_<parent>_<case>.sql|csv."""
    definition = TestDefinition(foundations=[Foundation(table_name=p, ddl_for_test=ddl_file(p)) for p in parents
                                             if (tests / f"ddl_{p}.sql").is_file()])
    pattern = re.compile(rf"^validate_{re.escape(table)}_(.+)\.sql$")
    for path in sorted(tests.glob(f"validate_{table}_*.sql")):
        match = pattern.match(path.name)
        if match is None:
            continue
        case = match.group(1)
        inputs = [TestData(table_name=p, file_name=insert_file(p, case, kind), file_type=kind)  # type: ignore[arg-type]
                  for p in parents for kind in ("sql", "csv") if (tests / f"insert_{p}_{case}.{kind}").is_file()]
        definition.test_suite.append(TestCase(name=case_name(table, case), inputs=inputs,
                                              outputs=[TestData(table_name=table, file_name=validate_file(table, case),
                                                                file_type="sql")]))
    if not definition.test_suite:
        raise ValueError(f"{tests}: no validate_{table}_<case>.sql file")
    return definition


def has_tests(table_folder: Path) -> bool:
    """Whether a table folder holds unit tests (a CI runs `run_tests` for each such table)."""
    tests = table_folder / TESTS_FOLDER
    return (tests / DEFINITION_FILE).is_file() or any(tests.glob("validate_*.sql"))


def save_definition(table_folder: Path, definition: TestDefinition) -> Path:
    path = table_folder / TESTS_FOLDER / DEFINITION_FILE
    path.write_text(yaml.safe_dump(definition.model_dump(mode="json"), sort_keys=False))
    return path
