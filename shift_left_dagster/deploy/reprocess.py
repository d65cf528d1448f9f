"""Reprocess history into a shadow version: the runbook's safe backfill for tables a window can't rebuild.

An append table or a stateful one (joins, GROUP BY, dedup) can not have a window rewritten in place
(deploy/backfill.py refuses it). Its history is reprocessed instead as a new blue/green version,
`<table>_v<N+1>`, beside the serving one: its statement reads its sources from a timestamp
(`'scan.startup.mode' = 'timestamp'`), and every deployed descendant gets a new version reading the
new one, by the same rule as a breaking commit. Nothing that serves changes; once the new versions
are checked, `promote` switches consumers (the old statements stop, their tables are kept until
housekeeping) or `rollback` removes them.
"""

from __future__ import annotations

from datetime import UTC, datetime

from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.naming import versioned_name
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanError, Planner, PlanOptions, finish
from shift_left_dagster.deploy.steps import Action, DeployStep, PlanKind
from shift_left_dagster.project.graph import ProjectGraph


def reprocess_plan(graph: ProjectGraph, tables: list[str], start: datetime, live: LiveState,
                   options: PlanOptions) -> DeploymentPlan:
    """New versions of `tables` and of their deployed descendants, reading their sources from `start`."""
    for table in tables:
        graph.require(table)
    serving, candidates = live.serving_versions(), live.candidate_versions()
    problems = [f"{t} is not deployed on {options.environment}: deploy it (shift-left-dagster deploy {t}); "
                "there is no history to reprocess" for t in sorted(tables) if t not in serving]
    wanted = set(tables) | {d for t in tables for d in graph.descendants(t) if d in serving}
    problems += [f"{t} already has candidate version {candidates[t]}: promote or roll it back first"
                 for t in sorted(wanted) if t in candidates]
    if problems:
        raise PlanError(problems)
    options = options.model_copy(update={"versions": serving, "start_at": start})
    planner = Planner(graph, live, options)
    new = {t: serving[t] + 1 for t in wanted}
    reading = {**options.physical_names, **{t: versioned_name(t, v) for t, v in new.items()}}
    steps = []
    for table in graph.sorted_subset(sorted(wanted)):
        why = (f"reprocessed from {start:%Y-%m-%d %H:%M} as version {new[table]} beside the serving one"
               if table in tables else f"reads a reprocessed table: new version {new[table]}, from "
                                       f"{start:%Y-%m-%d %H:%M}")
        steps.append(planner.table_step(table, Action.DEPLOY, why, version=new[table],
                                        physical=versioned_name(table, new[table]), reading=reading))
    return finish(planner, PlanKind.REPROCESS, sorted(tables), steps)


def history_not_reprocessed(plan: DeploymentPlan) -> list[str]:
    """What each new version will not hold: its serving version's history before the start, said before
    anything runs (a user consents to it, as to a partition range that drops history)."""
    start = plan.options.start_at or datetime.min.replace(tzinfo=UTC)
    return [f"{s.physical_table} will not hold {s.table}'s history before {start:%Y-%m-%d %H:%M} (the serving "
            f"version keeps it until promotion)" for s in plan.steps if isinstance(s, DeployStep)]
