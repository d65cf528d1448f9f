"""What the checks are, how each is configured, and what one evaluation says. No Spark, no Dagster."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class CheckName(StrEnum):
    UNIQUE_PRIMARY_KEY = "unique_primary_key"
    RECONCILED = "reconciled"
    SCHEMA_MATCHES_DDL = "schema_matches_ddl"
    STATEMENT_HEALTHY = "statement_healthy"


DESCRIPTIONS = {
    CheckName.UNIQUE_PRIMARY_KEY: "No two live rows of the sink share the primary key.",
    CheckName.RECONCILED: "The sink's rows equal its DML run over its parents' data as of the offsets the "
                          "statement has processed (keyed by primary key, else as multisets).",
    CheckName.SCHEMA_MATCHES_DDL: "The sink's columns and types are those its DDL declares.",
    CheckName.STATEMENT_HEALTHY: "The table's DML statement is RUNNING or COMPLETED; reports how far behind its "
                                 "sources it is.",
}


class ChecksSettings(BaseModel):
    """Which checks run and which block (defaults: all run; unique key and reconciliation block)."""

    enabled: list[CheckName] = Field(default_factory=lambda: list(CheckName))
    blocking: list[CheckName] = Field(
        default_factory=lambda: [CheckName.UNIQUE_PRIMARY_KEY, CheckName.RECONCILED],
        description="a failure stops what depends on the table")
    sample_rows: int = Field(default=5, ge=0, description="sample keys/rows put in a check's metadata")
    max_lag_records: int | None = Field(
        default=None, description="statement_healthy fails when its sources are further ahead (None: report only)")


class CheckOutcome(BaseModel):
    """One check of one table: passed or not, why, and JSON-able figures (counts, samples)."""

    table: str
    check: CheckName
    passed: bool
    blocking: bool = False
    message: str
    metadata: dict[str, Any] = Field(default_factory=dict)
