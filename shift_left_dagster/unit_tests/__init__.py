"""Unit tests of one Flink statement with synthetic data, in shift_left's `tests/` layout.

`init_tests` writes a table's `tests/` folder; `run_tests` runs its cases on
isolated `_ut` tables of a Flink service (the local one, or Confluent Cloud)
and returns a report. No Dagster here.
"""

from shift_left_dagster.unit_tests.models import CaseResult, TestCase, TestData, TestDefinition, UnitTestReport
from shift_left_dagster.unit_tests.runner import run_tests, tables_with_tests
from shift_left_dagster.unit_tests.scaffold import init_tests

__all__ = [
    "CaseResult", "TestCase", "TestData", "TestDefinition", "UnitTestReport", "init_tests", "run_tests",
    "tables_with_tests",
]
