"""Stop and resume as plans: the stuck-statement runbook's "stop it to limit damage", then its resume from
the offsets it kept, through the one plan printer and executor (and the project's lease).

Both act on the serving version of each table, or (`candidate`) on its new version not promoted yet: a
reprocess catching up, a breaking commit's version. A resume is only ever a resume: a table whose code changed
since it was stopped is refused (deploying it lets the plan's rules decide between a resume, a replacement
from offsets and a rebuild; a new version is rolled back and built again), as is a table that is not stopped.
"""

from __future__ import annotations

from shift_left_dagster.confluent.models import Phase
from shift_left_dagster.deploy.live import LIVE_PHASES, LiveState
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanError, Planner, PlanOptions, TableState, finish
from shift_left_dagster.deploy.steps import Action, PlanKind, PlanStep, SkipStep, StopStep
from shift_left_dagster.project.graph import ProjectGraph

STOPPABLE = LIVE_PHASES | {Phase.FAILING}


def stop_plan(graph: ProjectGraph, tables: list[str], live: LiveState, options: PlanOptions,
              candidate: bool = False) -> DeploymentPlan:
    """A STOP step for each table whose DML runs (or keeps failing), readers first so none of them waits on
    a stopped parent; the others are skipped, saying why."""
    planner = Planner(graph, live, _acting_on(live, options, candidate))
    candidates = live.candidate_versions()
    steps: list[PlanStep] = []
    for table in reversed(graph.sorted_subset(_known(graph, tables))):
        fields = planner.table_step(table, Action.SKIP, "").model_dump(exclude={"action", "reason"})
        statement = live.statements.get(fields["dml_statement"] or "")
        if candidate and table not in candidates:
            steps.append(SkipStep(**fields, reason="no new version beside the serving one"))
        elif statement is not None and statement.phase in STOPPABLE:
            steps.append(StopStep(**fields, reason=f"{statement.phase}: stopped, its offsets kept"))
        else:
            why = f"{statement.phase}: nothing runs" if statement else "no DML statement deployed"
            steps.append(SkipStep(**fields, reason=why))
    return DeploymentPlan(kind=PlanKind.STOP, targets=sorted(tables), options=options,
                          steps=[s.model_copy(update={"index": i, "depends_on": [i - 1] if i else []})
                                 for i, s in enumerate(steps)])


def resume_plan(graph: ProjectGraph, tables: list[str], live: LiveState, options: PlanOptions,
                candidate: bool = False) -> DeploymentPlan:
    """A RESUME step for each stopped table whose code is unchanged, parents first (the others skipped,
    saying why); refused, one line a table, for a stopped table whose code changed."""
    planner = Planner(graph, live, _acting_on(live, options, candidate))
    candidates = live.candidate_versions()
    steps: list[PlanStep] = []
    problems = []
    for table in graph.sorted_subset(_known(graph, tables)):
        state = planner.state(table)
        if candidate and table not in candidates:
            steps.append(planner.table_step(table, Action.SKIP, "no new version beside the serving one"))
        elif state == TableState.STOPPED and planner.unchanged(table):
            steps.append(planner.table_step(table, Action.RESUME, "stopped with the same code version: resumed "
                                                                  "from its latest offsets"))
        elif state == TableState.STOPPED and candidate:
            problems.append(f"{table}: its code changed since version {candidates[table]} was stopped, so it is not "
                            f"resumed: roll it back (shift-left-dagster rollback {table}) and build it again")
        elif state == TableState.STOPPED:
            problems.append(f"{table}: its code changed since it was stopped, so it is not resumed: deploy it "
                            f"(shift-left-dagster deploy {table}), the plan decides how")
        else:
            steps.append(planner.table_step(table, Action.SKIP, f"{state.value}, not stopped: nothing to resume"
                                            + ("" if state.deployed else " (deploy it)")))
    if problems:
        raise PlanError(problems)
    return finish(planner, PlanKind.RESUME, sorted(tables), steps)


def _acting_on(live: LiveState, options: PlanOptions, candidate: bool) -> PlanOptions:
    """The options whose versions the steps act on: the serving ones, or each table's candidate (a table
    without one keeps its serving version, which the plan skips)."""
    if not candidate:
        return options
    return options.model_copy(update={"versions": {**options.versions, **live.candidate_versions()}})


def _known(graph: ProjectGraph, tables: list[str]) -> list[str]:
    for table in tables:
        graph.require(table)
    return sorted(set(tables))
