"""Blue/green: from table changes to the versions to deploy beside the running ones.

A breaking change gets a new version of the table (`<table>_v2`, ...) and of
every descendant that reads it, each reading the new versions of its changed
parents; the running ("green") version is never touched until promotion. The
versioned SQL is derived at deploy time by renaming tables in the AST; the git
files are not rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import Phase
from shift_left_dagster.deploy.changes import Category, TableChange
from shift_left_dagster.deploy.executor import PlanExecutor, live_statements, statement_labels
from shift_left_dagster.deploy.naming import statement_name, versioned_name
from shift_left_dagster.deploy.plan import LIVE_PHASES, Action, LiveStatement, PlanOptions, PlanStep
from shift_left_dagster.deploy.rewrite import rename_tables
from shift_left_dagster.project.config import FlinkProjectConfig
from shift_left_dagster.project.graph import ProjectGraph

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


# -- versions on the service ---------------------------------------------------------------------

def running_versions(live: dict[str, LiveStatement]) -> dict[str, list[int]]:
    """Logical table -> the versions whose DML runs now (from the statements' labels), sorted."""
    versions: dict[str, set[int]] = {}
    for statement in live.values():
        if statement.table and statement.phase in LIVE_PHASES and "-dml-" in statement.name:
            versions.setdefault(statement.table, set()).add(statement.version)
    return {table: sorted(found) for table, found in versions.items()}


def current_versions(live: dict[str, LiveStatement]) -> dict[str, int]:
    """The version that serves (the oldest running: a candidate runs beside it until promoted)."""
    return {table: found[0] for table, found in running_versions(live).items()}


def candidate_versions(live: dict[str, LiveStatement]) -> dict[str, int]:
    """Versions deployed beside the serving one and not yet promoted."""
    return {table: found[-1] for table, found in running_versions(live).items() if len(found) > 1}


def physical_names(versions: dict[str, int]) -> dict[str, str]:
    return {table: versioned_name(table, version) for table, version in versions.items()}


def plan_options(config: FlinkProjectConfig, live: dict[str, LiveStatement], **flags: object) -> PlanOptions:
    """Plan options for an environment as it runs now: its name, its pool, the versions that serve."""
    return PlanOptions(environment=config.env_name, compute_pool_id=config.flink.compute_pool_id,
                       physical_names=physical_names(current_versions(live)), **flags)


class BlueGreenStep(BaseModel):
    table: str
    physical: str
    action: str  # "new_version" | "in_place"
    statements: dict[str, str] = Field(default_factory=dict)
    reason: str


def deploy_blue_green(
    client: ConfluentClient,
    graph: ProjectGraph,
    plan: BlueGreenPlan,
    environment: str,
    compute_pool_id: str | None = None,
    timeout: float = 600.0,
) -> Iterator[BlueGreenStep]:
    """New versions beside the running ones (parents first), then in-place replacements from offsets."""
    live = live_statements(client)
    serving = physical_names(current_versions(live))
    reading = {**serving, **plan.renames()}  # new versions read new versions of their changed parents
    for version in plan.versions:
        table = graph.tables[version.table]
        statements: dict[str, str] = {}
        root = graph.inventory.root
        if table.ddl_path:
            ddl = statement_name(environment, table.product, "ddl", version.physical)
            client.delete_statement(ddl, timeout=timeout)
            client.create_statement(ddl, versioned_sql((root / table.ddl_path).read_text(), reading),
                                    compute_pool_id=compute_pool_id,
                                    labels=statement_labels(table.name, table.code_version, version.version))
            statements[ddl] = client.wait_for_phase(ddl, {Phase.COMPLETED}, timeout).phase
        if table.dml_path:
            dml = statement_name(environment, table.product, "dml", version.physical)
            client.delete_statement(dml, timeout=timeout)
            client.create_statement(dml, versioned_sql((root / table.dml_path).read_text(), reading),
                                    compute_pool_id=compute_pool_id,
                                    labels=statement_labels(table.name, table.code_version, version.version))
            statements[dml] = client.wait_for_phase(dml, {Phase.RUNNING, Phase.COMPLETED}, timeout).phase
        yield BlueGreenStep(table=version.table, physical=version.physical, action="new_version",
                            statements=statements, reason=version.reason)
    if plan.in_place:
        executor = PlanExecutor(client, graph, timeout=timeout)
        executor.physical_names = serving
        for change in plan.in_place:
            table = graph.tables[change.table]
            step = PlanStep(index=0, table=change.table, action=Action.CARRY_OVER, reason=change.reason,
                            dml_statement=statement_name(environment, table.product, "dml", change.physical),
                            physical_table=change.physical, state_form=table.state_form,
                            code_version=table.code_version, compute_pool=compute_pool_id)
            result = executor.execute(step)
            yield BlueGreenStep(table=change.table, physical=change.physical, action="in_place",
                                statements=result.statements, reason=change.reason)


def _version_statements(live: dict[str, LiveStatement], table: str, version: int) -> list[str]:
    """Every statement of one version of a table (its DDL and DML), found by their labels."""
    return sorted(name for name, s in live.items() if s.table == table and s.version == version)


def promote(client: ConfluentClient, tables: list[str] | None = None, timeout: float = 600.0) -> dict[str, int]:
    """Make candidates serve: the old versions' statements stop and are removed (their tables are kept)."""
    live = live_statements(client)
    candidates = candidate_versions(live)
    current = current_versions(live)
    promoted = {}
    for table in sorted(tables or candidates):
        if table not in candidates:
            continue
        for name in _version_statements(live, table, current[table]):
            client.delete_statement(name, timeout=timeout)
        promoted[table] = candidates[table]
    return promoted


def rollback(client: ConfluentClient, tables: list[str] | None = None, timeout: float = 600.0) -> dict[str, int]:
    """Remove candidates: their statements and tables go; the serving versions were never stopped."""
    live = live_statements(client)
    candidates = candidate_versions(live)
    removed = {}
    for table in sorted(tables or candidates, reverse=True):
        if table not in candidates:
            continue
        physical = versioned_name(table, candidates[table])
        for name in _version_statements(live, table, candidates[table]):
            client.delete_statement(name, timeout=timeout)
        drop = statement_name("rollback", None, "drop", physical)
        client.delete_statement(drop, timeout=timeout)
        client.create_statement(drop, f"DROP TABLE IF EXISTS `{physical}`")
        client.wait_for_phase(drop, {Phase.COMPLETED}, timeout)
        client.delete_statement(drop, timeout=timeout)
        removed[table] = candidates[table]
    return removed
