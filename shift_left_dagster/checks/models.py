"""What the checks are, how each is configured, and what one evaluation says. No Spark, no Dagster.

What each check means (and when it does not pass) is documented in checks/runner.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class CheckName(StrEnum):
    UNIQUE_PRIMARY_KEY = "unique_primary_key"
    RECONCILED = "reconciled"
    SCHEMA_MATCHES_DDL = "schema_matches_ddl"
    STATEMENT_HEALTHY = "statement_healthy"


class SensorCheck(StrEnum):
    """Checks only the health sensor evaluates, from its observations over time (checks/lag.py)."""

    STATEMENT_LAG = "statement_lag"
    STATEMENT_STALLED = "statement_stalled"


Verdict = tuple[bool, str, dict[str, Any]]  # a rule's (passed, message, metadata)

DATA_CHECKS = frozenset({CheckName.UNIQUE_PRIMARY_KEY, CheckName.RECONCILED})  # they read rows

DESCRIPTIONS = {
    CheckName.UNIQUE_PRIMARY_KEY: "No two live rows of the sink share the primary key; reports how many rows "
                                  "were checked, after the statement caught up with its sources.",
    CheckName.RECONCILED: "The sink's rows equal its DML run over its parents' data as of the offsets the "
                          "statement has processed (keyed by primary key, else as multisets), after it caught "
                          "up with its sources; reports how many rows were compared. Comparing no row while "
                          "the sources hold data does not pass.",
    CheckName.SCHEMA_MATCHES_DDL: "The sink's columns and types are those its DDL declares (compares columns, "
                                  "not rows).",
    CheckName.STATEMENT_HEALTHY: "The table's DML statement is RUNNING or COMPLETED; reports how far behind its "
                                 "sources it is (a FAILED or FAILING one: its latest exception).",
    SensorCheck.STATEMENT_LAG: "Evaluated by the health sensor at each tick: red when more records wait than "
                               "health.max_pending_records, or when the pending count grew at each of the last "
                               "health.growing_observations ticks.",
    SensorCheck.STATEMENT_STALLED: "Evaluated by the health sensor at each tick: red when no record came out for "
                                   "health.stalled_minutes while records reached its sources.",
}


class Severity(StrEnum):
    """ERROR: a failure that counts (blocking when the check blocks). WARN: worth a look, never blocks."""

    ERROR = "error"
    WARN = "warn"


class ChecksSettings(BaseModel):
    """Which checks run and which block (defaults: all run; unique key and reconciliation block)."""

    enabled: list[CheckName] = Field(default_factory=lambda: list(CheckName))
    blocking: list[CheckName] = Field(
        default_factory=lambda: [CheckName.UNIQUE_PRIMARY_KEY, CheckName.RECONCILED],
        description="a failure stops what depends on the table")
    sample_rows: int = Field(default=5, ge=0, description="sample keys/rows put in a check's metadata")
    max_lag_records: int | None = Field(
        default=None, description="statement_healthy fails when its sources are further ahead (None: report only)")
    catch_up_seconds: float = Field(
        default=60.0, ge=0,
        description="data checks first wait up to this long for a RUNNING statement to read what its sources "
                    "hold (0: compare at once; a statement still behind then is reported, never passed over nothing)")
    catch_up_poll_seconds: float = Field(default=0.5, gt=0, description="how often the lag is read while waiting")


class CheckOutcome(BaseModel):
    """One check of one table: passed or not, why, and JSON-able figures (counts, samples).

    `blocking` says whether this outcome stops what depends on the table: a WARN never does, so
    a WARN outcome of a blocking check has blocking=False.
    """

    table: str
    check: str  # a CheckName, or a declared data test's name
    passed: bool
    blocking: bool = False
    severity: Severity = Severity.ERROR
    message: str
    metadata: dict[str, Any] = Field(default_factory=dict)
