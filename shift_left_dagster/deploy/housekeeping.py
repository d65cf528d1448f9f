"""Housekeeping as plan steps: remove what no deployment needs any more (shift_left's
`housekeep-statements` and `delete-unused-tables`).

Only this project's statements (`LiveState.of_project`: labelled with its identity, or unlabelled
and of one of its tables) and tables are touched; what reads a table is asked of every statement:

- terminal statements no plan reads: COMPLETED DDL statements (their table exists, or is gone),
  COMPLETED or FAILED backfill and seed statements, and FAILED statements of a version that
  neither serves nor is a blue/green candidate;
- tables of old versions: `<table>` or `<table>_vN` when another version of the table serves,
  it is not a candidate, and no statement (ours or not) reads it: what a promotion leaves.

Kept, always: a serving or candidate version's DML statement in any phase (a COMPLETED bounded
insert is how a plan knows a source is deployed; a FAILED or STOPPED one is for the health sensor
and a redeploy to handle), and the deployment lease.
"""

from __future__ import annotations

import re

from shift_left_dagster.deploy.live import LiveState, LiveStatement, StatementKind
from shift_left_dagster.deploy.naming import statement_name, versioned_name
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanOptions
from shift_left_dagster.deploy.steps import Action, PlanKind, RetireStep
from shift_left_dagster.deploy.undeploy import readers
from shift_left_dagster.project.graph import ProjectGraph

_VERSIONED = re.compile(r"^(?P<table>.+?)_v(?P<version>\d+)$")


def housekeeping_plan(graph: ProjectGraph, live: LiveState, options: PlanOptions) -> DeploymentPlan:
    """One UNDEPLOY step per statement or table to remove, statements first, in name order."""
    everyone, live = live, live.of_project(graph.tables)
    serving, candidates = live.serving_versions(), live.candidate_versions()
    steps: list[RetireStep] = []
    for statement in sorted(live.statements.values(), key=lambda s: s.name):
        why = _needless(statement, serving, candidates)
        if why and statement.table:
            steps.append(RetireStep(action=Action.UNDEPLOY, table=statement.table,
                                  product=_product(graph, statement.table), version=statement.version,
                                  retire=[statement.name], reason=f"statement {statement.name} removed: {why}"))
    retiring = {name for step in steps for name in step.retire}
    for table, version in _old_version_tables(graph, live, serving, candidates):
        physical = versioned_name(table, version)
        if readers(everyone, physical, retiring):
            continue
        product = _product(graph, table)
        leftovers = [s.name for s in live.statements_of(table, version) if s.name not in retiring]
        steps.append(RetireStep(action=Action.UNDEPLOY, table=table, product=product,
                              version=version, physical_table=physical, retire=leftovers, drop_table=True,
                              drop_statement=statement_name(options.environment, product, "drop", physical),
                              reason=f"table {physical} dropped: version {serving[table]} serves and no "
                                     f"statement reads it"))
    return DeploymentPlan(kind=PlanKind.HOUSEKEEPING, targets=sorted({s.table for s in steps}), options=options,
                          steps=[s.model_copy(update={"index": i, "depends_on": [i - 1] if i else []})
                                 for i, s in enumerate(steps)])


def _needless(statement: LiveStatement, serving: dict[str, int], candidates: dict[str, int]) -> str | None:
    """Why a statement of ours can go (None: it stays)."""
    if statement.kind is None or not statement.table:
        return None  # not ours, or the lease
    current = statement.version in (serving.get(statement.table), candidates.get(statement.table))
    if statement.kind == StatementKind.DDL and statement.phase == "COMPLETED":
        return "a completed DDL statement"
    if statement.kind in (StatementKind.BACKFILL, StatementKind.SEED) and statement.phase in ("COMPLETED", "FAILED"):
        return f"a {statement.phase.lower()} {statement.kind.value} statement"
    if statement.phase == "FAILED" and not current:
        return f"failed, of version {statement.version} which neither serves nor is a candidate"
    return None


def _old_version_tables(graph: ProjectGraph, live: LiveState, serving: dict[str, int],
                        candidates: dict[str, int]) -> list[tuple[str, int]]:
    """(table, version) of existing tables named after a version of a served table that is not in use."""
    if live.tables is None:
        return []  # which tables exist is unknown (no Kafka REST access): nothing is dropped
    found = []
    for name in sorted(live.tables):
        match = _VERSIONED.match(name)
        if name in graph.tables or name in serving or not match:
            table, version = name, 1  # a table's own name is its version 1, even when it ends in _vN
        else:
            table, version = match["table"], int(match["version"])
        if table not in serving or not (table in graph.tables or _labelled(live, table)):
            continue
        if version not in (serving[table], candidates.get(table)):
            found.append((table, version))
    return found


def _labelled(live: LiveState, table: str) -> bool:
    return any(s.table == table for s in live.statements.values())


def _product(graph: ProjectGraph, table: str) -> str | None:
    return graph.tables[table].product if table in graph.tables else None
