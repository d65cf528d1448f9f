"""Undeploy as plan steps: a table's statements are removed, then its table, children first.

Safe by default: a table that a statement outside the plan still reads is kept, and the plan says
which statement reads it (an explicit undeploy is refused; a sensor run skips it with that reason).
Works from the statements' labels, so a table already removed from git can be undeployed too.
"""

from __future__ import annotations

from shift_left_dagster.deploy.live import LIVE_PHASES, LiveState, StatementKind
from shift_left_dagster.deploy.naming import statement_name, versioned_name
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanError, PlanOptions
from shift_left_dagster.deploy.steps import Action, PlanKind, PlanStep, RetireStep, SkipStep
from shift_left_dagster.project.analysis import tables_read
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement


def readers(live: LiveState, physical: str, ignore: set[str]) -> list[str]:
    """Names of live or stopped DML statements (any, ours or not) whose SQL reads `physical`."""
    found = []
    for statement in live.statements.values():
        if statement.name in ignore or not statement.sql or statement.kind == StatementKind.DDL:
            continue
        if statement.phase not in LIVE_PHASES | {"STOPPED"}:
            continue
        try:
            reads = tables_read(parse_one_statement(statement.sql).tree)
        except (FlinkSqlError, ValueError):
            continue
        if physical in reads:
            found.append(statement.name)
    return sorted(found)


def undeploy_plan(graph: ProjectGraph, tables: list[str], live: LiveState, options: PlanOptions,
                  *, strict: bool = True) -> DeploymentPlan:
    """UNDEPLOY steps for `tables` (serving version, every statement of this project labelled with it: see
    `LiveState.of_project`), children first; a table any statement reads is kept."""
    everyone, live = live, live.of_project(set(graph.tables) | set(tables))
    known = [t for t in tables if t in graph.tables]
    ordered = list(reversed(graph.sorted_subset(known))) + sorted(t for t in tables if t not in graph.tables)
    serving = live.serving_versions()
    retiring = {s.name for t in ordered for s in live.statements_of(t, serving.get(t, 1))}
    steps: list[PlanStep] = []
    problems = []
    for table in ordered:
        version = serving.get(table, 1)
        physical = versioned_name(table, version)
        statements = [s.name for s in live.statements_of(table, version)]
        product = graph.tables[table].product if table in graph.tables else None
        still_read = readers(everyone, physical, retiring)
        kept = None
        if still_read:
            kept = f"{table}: kept, table {physical} is read by {', '.join(still_read)}"
            problems.append(kept)
        elif not statements and _other_projects(everyone, table):
            kept = f"kept: project {', '.join(_other_projects(everyone, table))}'s table"
        elif not statements and live.tables is not None and physical not in live.tables:
            kept = "not deployed"
        drop = statement_name(options.environment, product, "drop", physical)
        if kept:
            steps.append(SkipStep(table=table, product=product, version=version, physical_table=physical,
                                  ddl_statement=statement_name(options.environment, product, "ddl", physical),
                                  drop_statement=drop, reason=kept))
            continue
        steps.append(RetireStep(action=Action.UNDEPLOY, table=table, product=product, version=version,
                                physical_table=physical, retire=statements, drop_table=True, drop_statement=drop,
                                reason=f"undeployed: {len(statements)} statement(s) removed, then table {physical}"))
    if strict and problems:
        raise PlanError(problems)
    return DeploymentPlan(kind=PlanKind.UNDEPLOY, targets=ordered, options=options,
                          steps=[s.model_copy(update={"index": i, "depends_on": [i - 1] if i else []})
                                 for i, s in enumerate(steps)])


def _other_projects(live: LiveState, table: str) -> list[str]:
    """Projects other than the one looking whose statements write `table`: never ours to drop."""
    return sorted({s.project for s in live.statements.values()
                   if s.table == table and s.project is not None and s.project != live.project})
