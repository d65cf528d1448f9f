"""The test suite of a table (shift_left's `tests/test_definitions.yaml`) and what a run reports."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field


class Foundation(BaseModel):
    """An input table of the statement under test and the DDL that creates its `_ut` twin."""

    table_name: str
    ddl_for_test: str  # relative to the table folder, e.g. ./tests/ddl_src_orders.sql


class TestData(BaseModel):
    """One input (rows to insert) or output (a validation query) of a test case."""

    __test__ = False  # not a pytest class
    table_name: str
    # shift_left wrote `sql_file_name` before it had csv inputs
    file_name: str = Field(validation_alias=AliasChoices("file_name", "sql_file_name"))
    file_type: Literal["sql", "csv"] | None = None

    @property
    def kind(self) -> str:
        return self.file_type or ("csv" if self.file_name.lower().endswith(".csv") else "sql")


class TestCase(BaseModel):
    __test__ = False
    name: str
    inputs: list[TestData] = Field(default_factory=list)
    outputs: list[TestData] = Field(default_factory=list)


class TestDefinition(BaseModel):
    """The suite as shift_left writes it: foundations, then the cases."""

    __test__ = False
    foundations: list[Foundation] = Field(default_factory=list)
    test_suite: list[TestCase] = Field(default_factory=list)

    def case(self, wanted: str, table: str) -> TestCase:
        """A case by its name, or by its number (`1` is `test_<table>_1`)."""
        for case in self.test_suite:
            if case.name in (wanted, f"test_{table}_{wanted}"):
                return case
        raise ValueError(f"no test case {wanted!r} for {table}: {', '.join(c.name for c in self.test_suite)}")


class CaseResult(BaseModel):
    """One case: passed or not, and why (the validation's rows, or the statement that failed)."""

    name: str
    passed: bool
    detail: str
    validation_rows: list[list[object]] = Field(default_factory=list)


class UnitTestReport(BaseModel):
    table: str
    cases: list[CaseResult] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)
