"""What the analysis of a ddl or dml file finds, as plain models: the analysis cache and the inventory hold
them, so a warm load reads them without loading the SQL parser (project/analysis.py fills them)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class StateForm(StrEnum):
    STATEFUL = "stateful"
    STATELESS = "stateless"


class Column(BaseModel):
    name: str
    type: str
    nullable: bool = True
    computed: bool = False  # `c AS expr` or a METADATA ... VIRTUAL column: not written by INSERT
    metadata_key: str | None = None
    comment: str | None = None  # the DDL's COMMENT 'text': the column's description in Dagster


class DdlInfo(BaseModel):
    """A CREATE TABLE: the table's name and contract."""

    table: str
    columns: list[Column] = Field(default_factory=list)
    primary_key: list[str] = Field(default_factory=list)
    changelog_mode: str = "append"
    distribution: list[str] = Field(default_factory=list)
    buckets: int | None = None
    options: dict[str, str] = Field(default_factory=dict)
    watermark: str | None = None
    tables_read: list[str] = Field(default_factory=list)  # CREATE TABLE ... AS SELECT


class JoinCounts(BaseModel):
    """shift_left's complexity counters."""

    regular: int = 0
    left: int = 0
    right: int = 0
    inner: int = 0
    outer: int = 0

    def count(self, side: str, kind: str) -> None:
        """One more join of this side (LEFT, RIGHT, FULL or "") and kind (OUTER, INNER, CROSS or ""), upper-case."""
        if side == "LEFT":
            self.left += 1
        elif side == "RIGHT":
            self.right += 1
        elif side == "FULL" or kind == "OUTER":
            self.outer += 1
        elif kind == "INNER":
            self.inner += 1
        else:
            self.regular += 1


class DmlInfo(BaseModel):
    """An INSERT (or a statement set): where it writes, what it reads, whether it keeps state."""

    tables_written: list[str]
    tables_read: list[str]
    state_form: StateForm
    state_reasons: list[str] = Field(default_factory=list)
    joins: JoinCounts = Field(default_factory=JoinCounts)
