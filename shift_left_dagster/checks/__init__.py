"""Asset checks of Flink tables, computed with PySpark on the sink data itself (no Dagster here)."""

from shift_left_dagster.checks.models import CheckName, CheckOutcome, ChecksSettings
from shift_left_dagster.checks.readers import FilesSinkReader, LocalSinkReader, SinkConfig, SinkReader, open_reader
from shift_left_dagster.checks.runner import applicable, find_dml_statements, run_checks

__all__ = [
    "CheckName",
    "CheckOutcome",
    "ChecksSettings",
    "FilesSinkReader",
    "LocalSinkReader",
    "SinkConfig",
    "SinkReader",
    "applicable",
    "find_dml_statements",
    "open_reader",
    "run_checks",
]
