"""Blue/green: from table changes to the versions to deploy beside the running ones.

A breaking change gets a new version of the table (`<table>_v2`, ...) and of
every descendant that reads it, each reading the new versions of its changed
parents; the running ("green") version is never touched until promotion. The
versioned SQL is derived at deploy time by renaming tables in the AST; the git
files are not rewritten.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from shift_left_dagster.deploy.changes import Category, TableChange
from shift_left_dagster.deploy.rewrite import rename_tables
from shift_left_dagster.project.graph import ProjectGraph

VERSION_SUFFIX = re.compile(r"^(?P<base>.+)_v(?P<n>\d+)$")


def versioned_name(table: str, version: int) -> str:
    """Version 1 is the table's own name; later versions are `<table>_v<N>`."""
    return table if version <= 1 else f"{table}_v{version}"


class VersionedTable(BaseModel):
    table: str  # the logical name, as in git
    version: int
    physical: str  # the name this version is deployed as
    reason: str


class InPlaceChange(BaseModel):
    table: str
    physical: str
    reason: str


class BlueGreenPlan(BaseModel):
    """What a commit range asks for: new versions beside the running ones, and in-place replacements."""

    changes: list[TableChange]
    versions: list[VersionedTable] = Field(default_factory=list)  # in topological order
    in_place: list[InPlaceChange] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)

    @property
    def selection(self) -> list[str]:
        """Logical tables a run must deploy (what a sensor selects)."""
        return sorted({v.table for v in self.versions} | {c.table for c in self.in_place} | set(self.added))

    def renames(self) -> dict[str, str]:
        return {v.table: v.physical for v in self.versions}


def plan_blue_green(
    graph: ProjectGraph, changes: list[TableChange], current: dict[str, int] | None = None
) -> BlueGreenPlan:
    """Versions for breaking changes and their descendants; in-place for compatible stateless ones.

    `current` maps a table to the version running now (absent: 1).
    """
    current = current or {}
    plan = BlueGreenPlan(changes=changes)
    breaking = {c.table for c in changes if c.category == Category.BREAKING and c.table in graph.tables}
    impacted: dict[str, str] = {}
    for table in graph.sorted_subset(breaking):
        impacted.setdefault(table, "breaking change: " + "; ".join(
            next(c for c in changes if c.table == table).reasons))
        for descendant in graph.descendants(table):
            impacted.setdefault(descendant, f"reads a new version of {table}")
    for table in graph.sorted_subset(impacted):
        version = current.get(table, 1) + 1
        plan.versions.append(VersionedTable(table=table, version=version, physical=versioned_name(table, version),
                                            reason=impacted[table]))
    for change in changes:
        if change.category == Category.NON_BREAKING and change.table not in impacted:
            plan.in_place.append(InPlaceChange(table=change.table,
                                               physical=versioned_name(change.table, current.get(change.table, 1)),
                                               reason="; ".join(change.reasons)))
        elif change.category == Category.ADDED:
            plan.added.append(change.table)
        elif change.category == Category.REMOVED:
            plan.removed.append(change.table)
    return plan


def versioned_sql(sql: str, physical_names: dict[str, str]) -> str:
    """A table's SQL with every project table renamed to the version it must read or write."""
    return rename_tables(sql, {k: v for k, v in physical_names.items() if k != v})
