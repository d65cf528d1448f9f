"""What is live on a Flink service, as plans see it: our statements (by their labels) and the tables.

The one module that reads and writes statement labels, so every path (plan,
blue/green, checks, CLI) agrees on what runs, which version serves and what
kind of statement a name is.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.deploy.naming import versioned_name

TABLE_LABEL = "sl_table"  # the logical table a statement writes (or, for a DDL, creates)
CODE_VERSION_LABEL = "sl_code_version"  # hash of the normalised DDL+DML it was deployed from
VERSION_LABEL = "sl_version"  # blue/green version of that table (1, 2, ...)
KIND_LABEL = "sl_kind"  # ddl | dml | backfill | seed
PROJECT_LABEL = "sl_project"  # the project's identity (deploy/identity.py); the client adds it to all we create

LIVE_PHASES = frozenset({"RUNNING", "PENDING", "DEGRADED"})
HEALTHY_PHASES = frozenset({"RUNNING", "COMPLETED"})


class StatementKind(StrEnum):
    DDL = "ddl"
    DML = "dml"
    BACKFILL = "backfill"
    SEED = "seed"


class LiveStatement(BaseModel):
    """What a plan needs to know of a statement that exists on the service."""

    name: str
    phase: str
    compute_pool_id: str | None = None
    code_version: str | None = None
    sql: str | None = None
    table: str | None = None  # the logical table (label)
    version: int = 1  # blue/green version (label)
    kind: StatementKind | None = None  # (label); None: not one of ours
    project: str | None = None  # (label); None: created before projects were labelled


class LiveState(BaseModel):
    """Every statement of the environment, and the tables (topics) that exist there."""

    statements: dict[str, LiveStatement] = Field(default_factory=dict)
    tables: set[str] | None = None  # None: unknown (no Kafka REST access)
    project: str | None = None  # the identity of the project looking: what `of_project` keeps

    def of_project(self, tables: Collection[str]) -> LiveState:
        """Only this project's statements, for what removes them (housekeeping, undeploy): those labelled
        with its identity, and those without a project label (created before the label existed) whose
        table is one of the project's `tables`, as before. Another project's statements, even of a table
        of the same name, are never ours. The same state when no project is looking."""
        if self.project is None:
            return self
        mine = {name: s for name, s in self.statements.items()
                if s.project == self.project or (s.project is None and s.table in tables)}
        return self.model_copy(update={"statements": mine})

    def dml_versions(self) -> dict[str, list[int]]:
        """Logical table -> the versions whose DML is deployed (live, stopped or completed), sorted."""
        versions: dict[str, set[int]] = {}
        for statement in self.statements.values():
            if statement.kind == StatementKind.DML and statement.table and statement.phase in DEPLOYED_PHASES:
                versions.setdefault(statement.table, set()).add(statement.version)
        return {table: sorted(found) for table, found in versions.items()}

    def serving_versions(self) -> dict[str, int]:
        """The version that serves: the oldest deployed (a candidate runs beside it until promoted)."""
        return {table: found[0] for table, found in self.dml_versions().items()}

    def candidate_versions(self) -> dict[str, int]:
        """Versions deployed beside the serving one and not promoted yet."""
        return {table: found[-1] for table, found in self.dml_versions().items() if len(found) > 1}

    def statements_of(self, table: str, version: int) -> list[LiveStatement]:
        """Every statement of one version of a table (DDL and DML), found by labels."""
        return sorted((s for s in self.statements.values()
                       if s.table == table and s.version == version and s.kind in (StatementKind.DDL,
                                                                                    StatementKind.DML)),
                      key=lambda s: s.name)


DEPLOYED_PHASES = LIVE_PHASES | {"STOPPED", "STOPPING", "COMPLETED"}


def physical_names(versions: dict[str, int]) -> dict[str, str]:
    """Logical table -> the name its version is deployed as."""
    return {table: versioned_name(table, version) for table, version in versions.items()}


def statement_labels(table: str, code_version: str | None, version: int, kind: StatementKind) -> dict[str, str]:
    labels = {TABLE_LABEL: table, VERSION_LABEL: str(version), KIND_LABEL: kind.value}
    if code_version:
        labels[CODE_VERSION_LABEL] = code_version
    return labels


def _kind(labels: dict[str, str], name: str) -> StatementKind | None:
    if KIND_LABEL in labels:
        return StatementKind(labels[KIND_LABEL])
    if "sl_backfill" in labels:
        return StatementKind.BACKFILL
    if TABLE_LABEL not in labels:
        return None
    # Statements deployed before the kind label existed: their names say it.
    return StatementKind.DML if "-dml-" in name else StatementKind.DDL


def live_state(client: ConfluentClient, *, with_tables: bool = True, project: str | None = None) -> LiveState:
    """The plan's view of the environment: one listing of statements (and one of topics)."""
    statements = {}
    for s in client.list_statements():
        labels = (s.metadata.labels if s.metadata else None) or {}
        statements[s.name] = LiveStatement(
            name=s.name,
            phase=s.phase,
            compute_pool_id=s.spec.compute_pool_id,
            code_version=labels.get(CODE_VERSION_LABEL),
            sql=s.spec.statement,
            table=labels.get(TABLE_LABEL),
            version=int(labels.get(VERSION_LABEL, "1")),
            kind=_kind(labels, s.name),
            project=labels.get(PROJECT_LABEL),
        )
    tables = None
    if with_tables:
        try:
            tables = {topic.topic_name for topic in client.list_topics()}
        except ConfluentError:
            tables = None  # no Kafka REST access: plans trust the statements alone
    return LiveState(statements=statements, tables=tables, project=project)
