"""The execution plan: what to create, restart, carry over or leave alone, in what order, and why.

A pure function of (graph, live statement state, options), so it is tested
without any service and printed before anything runs (SQLMesh: plan, then
apply). Rules: DESIGN.md, "Deploying a table".
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from shift_left_dagster.deploy.naming import compute_pool_name, statement_name
from shift_left_dagster.project.analysis import StateForm
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import TableType

# Labels our statements carry, so a later plan knows what runs (and a restart can find it).
TABLE_LABEL = "sl_table"
CODE_VERSION_LABEL = "sl_code_version"
VERSION_LABEL = "sl_version"  # blue/green version of the table the statement writes (1, 2, ...)

LIVE_PHASES = {"RUNNING", "PENDING", "DEGRADED"}


class Action(StrEnum):
    CREATE_POOL = "create_compute_pool"
    DEPLOY = "deploy"  # create the table, start its DML from earliest
    RESTART = "restart_with_table_recreation"  # stop the DML, recreate the table, reprocess from earliest
    CARRY_OVER = "stop_and_resume_from_offsets"  # stop the DML, start it again from its latest offsets
    REPLACE_DML = "replace_dml"  # dml-only: keep the table, replace its statement
    SKIP = "skip"


class LiveStatement(BaseModel):
    """What the plan needs to know of a statement that exists on the service."""

    name: str
    phase: str
    compute_pool_id: str | None = None
    code_version: str | None = None
    sql: str | None = None
    table: str | None = None  # the logical table it writes (label)
    version: int = 1  # its blue/green version (label)


class PlanOptions(BaseModel):
    environment: str = "dev"
    dml_only: bool = False
    force_sources: bool = False
    may_start_children: bool = False
    compute_pool_id: str | None = None  # the configured pool, when there is one
    start_at: datetime | None = None  # (re)deployed statements read their sources from here, not earliest
    physical_names: dict[str, str] = Field(default_factory=dict)  # logical -> running version (blue/green)


class PlanStep(BaseModel):
    index: int
    table: str | None  # None for a compute pool step
    action: Action
    reason: str
    ddl_statement: str | None = None
    dml_statement: str | None = None
    drop_statement: str | None = None  # the DROP TABLE run before a table is recreated
    physical_table: str | None = None  # the name the table is deployed as (a blue/green version)
    compute_pool: str | None = None  # an id, or "new:<display name>" created by an earlier step
    state_form: StateForm | None = None
    code_version: str | None = None
    depends_on: list[int] = Field(default_factory=list)


class DeploymentPlan(BaseModel):
    targets: list[str]
    options: PlanOptions
    steps: list[PlanStep]

    def step_for(self, table: str) -> PlanStep | None:
        return next((s for s in self.steps if s.table == table), None)

    @property
    def changes(self) -> list[PlanStep]:
        return [s for s in self.steps if s.action != Action.SKIP]


def build_plan(
    graph: ProjectGraph,
    targets: list[str],
    live: dict[str, LiveStatement],
    options: PlanOptions | None = None,
) -> DeploymentPlan:
    """Plan the deployment of `targets` (and what they need) against the live statements."""
    options = options or PlanOptions()
    planner = _Planner(graph, live, options)
    for target in sorted(set(targets)):
        graph.require(target)
    decisions = planner.decide(sorted(set(targets)))
    return DeploymentPlan(targets=sorted(set(targets)), options=options, steps=planner.steps(decisions))


class _Planner:
    def __init__(self, graph: ProjectGraph, live: dict[str, LiveStatement], options: PlanOptions):
        self.graph, self.live, self.options = graph, live, options

    # -- naming and live state ------------------------------------------------------------

    def names(self, table: str) -> tuple[str, str | None]:
        info = self.graph.tables[table]
        physical = self.options.physical_names.get(table, table)
        ddl = statement_name(self.options.environment, info.product, "ddl", physical)
        dml = statement_name(self.options.environment, info.product, "dml", physical) if info.dml else None
        return ddl, dml

    def running(self, table: str) -> LiveStatement | None:
        """The live statement that makes a table 'running' (its DML; its DDL when it has none)."""
        ddl, dml = self.names(table)
        statement = self.live.get(dml) if dml else self.live.get(ddl)
        if statement is None:
            return None
        ok = LIVE_PHASES if dml else {"COMPLETED"}
        return statement if statement.phase in ok else None

    def unchanged(self, table: str) -> bool:
        statement = self.running(table)
        return statement is not None and statement.code_version == self.graph.tables[table].code_version

    # -- decisions ------------------------------------------------------------------------

    def decide(self, targets: list[str]) -> dict[str, tuple[Action, str]]:
        decisions: dict[str, tuple[Action, str]] = {}
        recreated: set[str] = set()  # tables whose output is recreated by this plan

        def settle(table: str, action: Action, reason: str) -> None:
            if table not in decisions:
                decisions[table] = (action, reason)
                if action in (Action.DEPLOY, Action.RESTART):
                    recreated.add(table)

        # Targets and their ancestors, parents before children (sources first).
        wanted = set(targets)
        scope = wanted | {a for target in targets for a in self.graph.ancestors(target)}
        for table in self.graph.sorted_subset(scope):
            decide = self.target_action if table in wanted else self.ancestor_action
            settle(table, *decide(table, recreated))
        # Children: breadth-first from every table whose output is recreated.
        queue = deque(self.graph.sorted_subset(recreated))
        while queue:
            parent = queue.popleft()
            for child in self.graph.children[parent]:
                if child in decisions:
                    continue
                action, reason = self.child_action(child, parent)
                if action == Action.SKIP:
                    continue  # not running: nothing to do, and not part of the plan
                settle(child, action, reason)
                if action == Action.RESTART:
                    queue.append(child)
        return decisions

    def ancestor_action(self, table: str, recreated: set[str]) -> tuple[Action, str]:
        info = self.graph.tables[table]
        changed_parents = [p for p in self.graph.parents[table] if p in recreated]
        running = self.running(table)
        if info.type == TableType.SOURCE and self.options.force_sources:
            verb = Action.RESTART if running else Action.DEPLOY
            return verb, "source redeployed: force-sources"
        if running is None:
            return Action.DEPLOY, "ancestor not running: deployed before its children"
        if changed_parents:
            return Action.RESTART, f"parent {', '.join(changed_parents)} is recreated: reprocessed from earliest"
        note = "" if self.unchanged(table) else " (its code changed: select it to redeploy)"
        return Action.SKIP, f"ancestor already {running.phase}{note}"

    def target_action(self, table: str, recreated: set[str]) -> tuple[Action, str]:
        running = self.running(table)
        changed_parents = [p for p in self.graph.parents[table] if p in recreated]
        if self.options.dml_only:
            if running and self.unchanged(table) and not changed_parents:
                return Action.SKIP, f"{running.phase} with the same code version"
            return Action.REPLACE_DML, "dml-only: table kept, statement replaced"
        if running is None:
            return Action.DEPLOY, "not running"
        if changed_parents:
            return Action.RESTART, f"parent {', '.join(changed_parents)} is recreated"
        if self.unchanged(table):
            return Action.SKIP, f"{running.phase} with the same code version"
        return Action.RESTART, "code changed: table recreated, reprocessed from earliest"

    def child_action(self, child: str, parent: str) -> tuple[Action, str]:
        if self.running(child) is None:
            return Action.SKIP, "not running"
        if self.options.may_start_children:
            return Action.RESTART, f"may-start-children: restarted because {parent} is recreated"
        if self.graph.tables[child].state_form == StateForm.STATEFUL:
            return Action.RESTART, f"stateful child of recreated {parent}: table recreated, reprocessed from earliest"
        return Action.CARRY_OVER, (f"stateless child of recreated {parent}: stopped and resumed from its offsets "
                                   f"(from earliest on {parent}'s new topic)")

    # -- steps ----------------------------------------------------------------------------

    def pool_for(self, table: str) -> tuple[str, str | None]:
        """(pool reference, name of a pool to create or None)."""
        if self.options.compute_pool_id:
            return self.options.compute_pool_id, None
        for name in self.names(table):
            statement = self.live.get(name) if name else None
            if statement is not None and statement.compute_pool_id:
                return statement.compute_pool_id, None
        pool = compute_pool_name(self.options.environment, self.graph.tables[table].product)
        return f"new:{pool}", pool

    def steps(self, decisions: dict[str, tuple[Action, str]]) -> list[PlanStep]:
        steps: list[PlanStep] = []
        pool_steps: dict[str, int] = {}
        table_steps: dict[str, int] = {}
        for table in self.graph.sorted_subset(decisions):
            action, reason = decisions[table]
            info = self.graph.tables[table]
            ddl, dml = self.names(table)
            pool, to_create = (None, None) if action == Action.SKIP else self.pool_for(table)
            depends = sorted(table_steps[p] for p in self.graph.parents[table] if p in table_steps)
            if to_create:
                if to_create not in pool_steps:
                    pool_steps[to_create] = len(steps)
                    steps.append(
                        PlanStep(index=len(steps), table=None, action=Action.CREATE_POOL, compute_pool=pool,
                                 reason=f"no configured pool and none in use for product {info.product or '-'}")
                    )
                depends = sorted({*depends, pool_steps[to_create]})
            table_steps[table] = len(steps)
            steps.append(
                PlanStep(
                    index=len(steps),
                    table=table,
                    action=action,
                    reason=reason,
                    ddl_statement=ddl,
                    dml_statement=dml,
                    drop_statement=statement_name(self.options.environment, info.product, "drop",
                                                  self.options.physical_names.get(table, table)),
                    physical_table=self.options.physical_names.get(table, table),
                    compute_pool=pool,
                    state_form=info.state_form,
                    code_version=info.code_version,
                    depends_on=depends,
                )
            )
        return steps


def render_plan(plan: DeploymentPlan) -> str:
    """One line a step, for terminals and run logs."""
    lines = [f"plan for {', '.join(plan.targets)}: {len(plan.changes)} change(s)"]
    for step in plan.steps:
        what = step.table or step.compute_pool
        after = f" after {','.join(map(str, step.depends_on))}" if step.depends_on else ""
        lines.append(f"{step.index:3d}. {step.action.value:30} {what:32} {step.reason}{after}")
    return "\n".join(lines)
