"""The execution plan: one typed plan for every path (deploy, blue/green, backfill, seeding, promotion).

Pure functions of (graph, live state, options), tested without any service,
printed before anything runs and executed by the one executor (SQLMesh: plan,
then apply). The SQL of every step is rendered here, once, from the text whose
hash is the table's code version.

Exactly-once rules (DESIGN.md, "Deploying a table"):
- a table is *deployed* when its DML is RUNNING/PENDING/DEGRADED, STOPPED (then
  resumed from its latest offsets), or COMPLETED with its table present;
- a table whose output is recreated (DEPLOY, RECREATE) is a new topic: every
  deployed child is recreated too, from earliest, and so on down. Nothing ever
  resumes from offsets of a topic the plan recreates;
- a replaced statement resumes from carried offsets only where its input
  topics stay the same (dml-only, in-place replacement);
- every name a DML reads is a project table, a table of the target or a raw
  topic the plan seeds, else the plan is refused naming the file and line.
"""

from __future__ import annotations

import re
from collections import deque
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field, TypeAdapter

from shift_left_dagster.deploy.live import LIVE_PHASES, LiveState, StatementKind
from shift_left_dagster.deploy.naming import compute_pool_name, statement_name, versioned_name
from shift_left_dagster.deploy.rewrite import rename_tables, with_schema_context
from shift_left_dagster.deploy.steps import (
    RECREATING,
    Action,
    BackfillStep,
    CreatePoolStep,
    DeployStep,
    PlanKind,
    PlanStep,
    PoolRef,
    ReplaceStep,
    SeedStep,
    SkipStep,
    TableStep,
)
from shift_left_dagster.project.analysis import StateForm, tables_read
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable, TableType
from shift_left_dagster.project.parsing import parse_one_statement

STEP: TypeAdapter[PlanStep] = TypeAdapter(PlanStep)  # a step from its fields, its model chosen by its action


class PlanError(ValueError):
    """The plan cannot be made safely; each line names the table (and file:line) and why."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class PlanOptions(BaseModel):
    environment: str = "dev"
    dml_only: bool = False
    force_sources: bool = False
    force: bool = False  # redeploy the targets even when they run unchanged (tables recreated)
    may_start_children: bool = False  # also deploy descendants that are not deployed
    compute_pool_id: str | None = None  # the configured pool, when there is one
    start_at: datetime | None = None  # (re)deployed statements read their sources from here, not earliest
    versions: dict[str, int] = Field(default_factory=dict)  # logical table -> its serving version (blue/green)
    reject_topics_prefixes: list[str] = Field(default_factory=list)  # external names never accepted
    seeds: dict[str, str] = Field(default_factory=dict)  # raw topic -> seed file creating it (local service)
    schema_context: str | None = None  # app.schema_context: put in every DDL's registry format options
    exclude: list[str] = Field(default_factory=list)  # tables this plan must never deploy (an asset's exclude)

    @property
    def physical_names(self) -> dict[str, str]:
        """Logical table -> the name its serving version is deployed as (itself for version 1)."""
        return {table: versioned_name(table, version) for table, version in self.versions.items()}


class DeploymentPlan(BaseModel):
    """The ordered steps of one deployment and what asked for them: printed, recorded, then executed."""

    kind: PlanKind = PlanKind.DEPLOY
    targets: list[str]
    options: PlanOptions
    steps: list[PlanStep]

    def step_for(self, table: str) -> PlanStep | None:
        return next((s for s in self.steps if s.table == table), None)

    @property
    def changes(self) -> list[PlanStep]:
        return [s for s in self.steps if s.action != Action.SKIP]

    @property
    def recreated(self) -> set[str]:
        return {s.table for s in self.steps if s.table and s.action in RECREATING}


class TableState(StrEnum):
    MISSING = "missing"
    FAILED = "failed"
    RUNNING = "running"
    STOPPED = "stopped"
    COMPLETED = "completed"  # a bounded DML that finished, its table present (or a DDL-only table)

    @property
    def deployed(self) -> bool:
        return self in (TableState.RUNNING, TableState.STOPPED, TableState.COMPLETED)


Decision = tuple[Action, str]


def build_plan(
    graph: ProjectGraph,
    targets: list[str],
    live: LiveState,
    options: PlanOptions | None = None,
) -> DeploymentPlan:
    """Plan the deployment of `targets` (and what they need) against what is live."""
    options = options or PlanOptions()
    wanted = sorted(set(targets))
    for target in wanted:
        graph.require(target)
    planner = Planner(graph, live, options)
    decisions = planner.decide(wanted)
    planner.check_excluded(decisions)
    changed_ancestors = [t for t, (action, _) in decisions.items() if action == Action.SKIP
                         and not planner.unchanged(t)]  # their new code must read sound names too
    planner.check_candidates([t for t, (action, _) in decisions.items() if action in RECREATING])
    steps = [planner.table_step(table, *decisions[table]) for table in graph.sorted_subset(list(decisions))]
    return finish(planner, PlanKind.DEPLOY, wanted, steps, also_check=changed_ancestors)


def finish(planner: Planner, kind: PlanKind, targets: list[str], steps: list[PlanStep],
           also_check: list[str] | None = None) -> DeploymentPlan:
    """The one way every entry point ends its plan: the names each step's DML reads validated (and
    those of `also_check`), raw topics seeded first, pools created, dependencies linked."""
    deploying = [s.table for s in steps if isinstance(s, DeployStep | ReplaceStep | BackfillStep)]
    problems, seeded = read_problems(planner.graph, deploying + (also_check or []), planner.live, planner.options)
    if problems:
        raise PlanError(problems)
    seeds: list[PlanStep] = [SeedStep(reason="raw topic missing: seeded", topic=topic,
                                      seed_file=planner.options.seeds[topic])
                             for topic in sorted(seeded - (planner.live.tables or set()))]
    return DeploymentPlan(kind=kind, targets=targets, options=planner.options,
                          steps=link(planner.graph, [*seeds, *steps], extra=list(range(len(seeds)))))


def read_problems(graph: ProjectGraph, tables: list[str], live: LiveState,
                  options: PlanOptions) -> tuple[list[str], set[str]]:
    """Names the tables' DMLs read that are neither a project table, a table of the target, nor a raw
    topic the plan seeds (each problem naming file:line), and the raw topics to seed. Names with a
    rejected prefix are never accepted as external."""
    problems: list[str] = []
    seeded: set[str] = set()
    for table in graph.sorted_subset(sorted(set(tables))):
        for name in graph.external_sources[table]:
            rejected = [p for p in options.reject_topics_prefixes if name.startswith(p)]
            if rejected:
                problem = (f"not a table of the project, and its prefix {rejected[0]!r} is in "
                           "kafka.reject_topics_prefixes (a typo of a project table?)")
            elif name in options.seeds:
                seeded.add(name)
                continue
            elif live.tables is None or name in live.tables:
                continue
            else:
                problem = f"not a table of the project nor a topic of environment {options.environment}"
            problems.append(f"{_where(graph, graph.tables[table], name)}: {table} reads {name}: {problem}")
    return problems, seeded


class Planner:
    """Decisions for one plan; also the step factory other plan kinds (blue/green, backfill) use."""

    def __init__(self, graph: ProjectGraph, live: LiveState, options: PlanOptions):
        self.graph, self.live, self.options = graph, live, options

    # -- names and live state -----------------------------------------------------------------

    def physical(self, table: str) -> str:
        return self.options.physical_names.get(table, table)

    def names(self, table: str, physical: str | None = None) -> tuple[str, str | None]:
        info = self.graph.tables[table]
        physical = physical or self.physical(table)
        ddl = statement_name(self.options.environment, info.product, "ddl", physical)
        dml = statement_name(self.options.environment, info.product, "dml", physical) if info.dml else None
        return ddl, dml

    def table_exists(self, physical: str) -> bool | None:
        return None if self.live.tables is None else physical in self.live.tables

    def state(self, table: str) -> TableState:
        ddl, dml = self.names(table)
        exists = self.table_exists(self.physical(table))
        if dml is None:  # a table with no DML: deployed once its table exists
            statement = self.live.statements.get(ddl)
            done = exists if exists is not None else bool(statement and statement.phase == "COMPLETED")
            return TableState.COMPLETED if done else TableState.MISSING
        statement = self.live.statements.get(dml)
        if statement is None:
            return TableState.MISSING
        if statement.phase in LIVE_PHASES:
            return TableState.RUNNING
        if statement.phase in ("STOPPED", "STOPPING"):
            return TableState.STOPPED
        if statement.phase == "COMPLETED":
            return TableState.COMPLETED if exists is not False else TableState.MISSING
        return TableState.FAILED

    def unchanged(self, table: str) -> bool:
        ddl, dml = self.names(table)
        statement = self.live.statements.get(dml or ddl)
        return statement is not None and statement.code_version == self.graph.tables[table].code_version

    # -- decisions ----------------------------------------------------------------------------

    def decide(self, targets: list[str]) -> dict[str, Decision]:
        decisions: dict[str, Decision] = {}
        wanted = set(targets)
        scope = wanted | {a for target in targets for a in self.graph.ancestors(target)}
        for table in self.graph.sorted_subset(scope):
            recreated = [p for p in self.graph.parents[table] if decisions.get(p, (None,))[0] in RECREATING]
            recreated += [p for p in self.recreated_under(table) if p not in recreated]
            decide = self.target_action if table in wanted else self.ancestor_action
            decisions[table] = decide(table, recreated)
        self.follow_children(decisions, wanted)
        return decisions

    def follow_children(self, decisions: dict[str, Decision], targets: set[str]) -> None:
        """Every deployed descendant of a recreated table is recreated (its topic, from earliest). A target's
        child that a deployment stopped half way left behind (its statement FAILED, or its parent recreated
        under it) is repaired by the same rule: the redeploy converges where the stopped one would have."""
        queue = deque(t for t in self.graph.sorted_subset(list(decisions))
                      if decisions[t][0] in RECREATING or t in targets)
        while queue:
            parent = queue.popleft()
            for child in self.graph.children[parent]:
                if child in decisions:
                    continue
                decision = self.child_action(child, parent, decisions[parent][0] in RECREATING)
                if decision is not None:
                    decisions[child] = decision
                    queue.append(child)

    def child_action(self, child: str, parent: str, parent_recreated: bool) -> Decision | None:
        """What a plan deploying `parent` does to `child` (None: nothing, the child is not in the plan)."""
        state = self.state(child)
        if parent_recreated and state.deployed:
            return Action.RECREATE, (f"reads {parent}, whose topic is recreated: table recreated, reprocessed "
                                     "from earliest")
        if parent_recreated and self.options.may_start_children:
            return Action.DEPLOY, f"may-start-children: {state.value}, deployed after {parent}"
        if state == TableState.FAILED:  # (also when the parent is redeployed: its DML was removed by the stop)
            return Action.DEPLOY, (f"reads {parent}; its statement FAILED (a deployment stopped before redeploying "
                                   "it?): redeployed, from earliest")
        if parent_recreated:
            return None
        if state.deployed and parent in self.recreated_under(child):
            return Action.RECREATE, self.recreated_reason(child, [parent])
        return None

    def recreated_under(self, table: str) -> list[str]:
        """Parents whose table was created after `table`'s statement (a deployment recreated the parent, then
        stopped before recreating this child): the statement reads a topic its offsets, and its sink's rows,
        do not come from, so it is recreated from earliest like any child of a recreated topic."""
        _, dml = self.names(table)
        statement = self.live.statements.get(dml) if dml else None
        if statement is None or statement.created_at is None:
            return []
        under = []
        for parent in self.graph.parents[table]:
            parent_ddl = self.live.statements.get(self.names(parent)[0])
            if parent_ddl is not None and parent_ddl.created_at is not None \
                    and parent_ddl.created_at > statement.created_at:
                under.append(parent)
        return under

    def recreated_reason(self, table: str, recreated: list[str]) -> str:
        """Why `table`, reading the `recreated` parents, is recreated: by this plan, or under its statement."""
        under = set(self.recreated_under(table))
        now = [p for p in recreated if p not in under]
        said = [f"reads {', '.join(now)}, whose topic is recreated"] if now else []
        if under & set(recreated):
            said.append(f"reads {', '.join(p for p in recreated if p in under)}, recreated under its statement "
                        "(a deployment stopped before recreating it): table recreated, reprocessed from earliest")
        return "; ".join(said)

    def ancestor_action(self, table: str, recreated: list[str]) -> Decision:
        info = self.graph.tables[table]
        state = self.state(table)
        if info.type == TableType.SOURCE and self.options.force_sources:
            return (Action.RECREATE if state.deployed else Action.DEPLOY), "source redeployed: force-sources"
        if not state.deployed:
            return Action.DEPLOY, f"ancestor {state.value}: deployed before its children"
        if recreated:
            return Action.RECREATE, self.recreated_reason(table, recreated)
        note = "" if self.unchanged(table) else " (its code changed: select it to redeploy)"
        if state == TableState.STOPPED and table in self.options.exclude:
            return Action.SKIP, "ancestor stopped, excluded here: left stopped (resume it where it is selected)"
        if state == TableState.STOPPED:
            return Action.RESUME, f"ancestor stopped: resumed from its latest offsets{note}"
        return Action.SKIP, f"ancestor already {state.value}{note}"

    def target_action(self, table: str, recreated: list[str]) -> Decision:
        state = self.state(table)
        unchanged = self.unchanged(table)
        if self.options.dml_only:
            return self.dml_only_action(table, state, unchanged, recreated)
        if not state.deployed:
            return Action.DEPLOY, state.value if state == TableState.MISSING else "its statement FAILED: redeployed"
        if recreated:
            return Action.RECREATE, self.recreated_reason(table, recreated)
        if state == TableState.STOPPED:
            if unchanged:
                return Action.RESUME, "stopped with the same code version: resumed from its latest offsets"
            return Action.RECREATE, "stopped, and its code changed: table recreated, reprocessed from earliest"
        if unchanged and not self.options.force:
            return Action.SKIP, f"{state.value} with the same code version"
        if unchanged:
            return Action.RECREATE, "forced: table recreated, reprocessed from earliest"
        return Action.RECREATE, "code changed: table recreated, reprocessed from earliest"

    def dml_only_action(self, table: str, state: TableState, unchanged: bool, recreated: list[str]) -> Decision:
        info = self.graph.tables[table]
        if info.dml is None:
            raise PlanError([f"{info.ddl_path}: dml-only deploy of {table}, which has no DML"])
        if self.table_exists(self.physical(table)) is False:
            raise PlanError([f"{info.dml_path}: dml-only deploy of {table}, but table {self.physical(table)} does "
                             f"not exist on {self.options.environment}: deploy it without dml-only"])
        if recreated:
            return Action.RECREATE, (f"dml-only overridden: {self.recreated_reason(table, recreated)} "
                                     "(a kept table would get its history twice)")
        if state.deployed and unchanged:
            if state == TableState.STOPPED:
                return Action.RESUME, "stopped with the same code version: resumed from its latest offsets"
            return Action.SKIP, f"{state.value} with the same code version"
        if info.state_form == StateForm.STATEFUL and not info.primary_key:
            raise PlanError([f"{info.dml_path}: dml-only deploy of {table}: its DML is stateful and its table is "
                             "append-only, so reprocessing into the kept table would duplicate rows: "
                             "deploy it without dml-only"])
        if info.state_form == StateForm.STATEFUL:
            return Action.REPLACE_DML, "dml-only: table kept, stateful statement replaced from earliest (upserts)"
        return Action.REPLACE_DML, "dml-only: table kept, statement replaced from its latest offsets"

    # -- refusals -----------------------------------------------------------------------------

    def check_excluded(self, decisions: dict[str, Decision]) -> None:
        """Refuse a plan that would deploy a table its caller excludes (a dbt-style `exclude`)."""
        excluded = set(self.options.exclude)
        problems = [f"{table} is excluded here but the plan needs it: {reason} (deploy it from where it is "
                    "selected first)" for table, (action, reason) in sorted(decisions.items())
                    if table in excluded and action not in (Action.SKIP, Action.RESUME)]
        if problems:
            raise PlanError(problems)

    def check_candidates(self, recreated: list[str]) -> None:
        """Refuse to recreate a topic that a blue/green candidate version reads: the candidate would lose
        its input (or read it twice). Promote or roll back the candidate first."""
        topics = {self.physical(t): t for t in recreated}
        problems = []
        for table, version in sorted(self.live.candidate_versions().items()):
            for statement in self.live.statements_of(table, version):
                if statement.kind != StatementKind.DML or not statement.sql:
                    continue
                for topic in sorted(set(tables_read(parse_one_statement(statement.sql).tree)) & set(topics)):
                    problems.append(f"{topics[topic]} would be recreated, but candidate version {version} of "
                                    f"{table} ({statement.name}) reads it: promote or roll back the candidate first")
        if problems:
            raise PlanError(problems)

    # -- steps --------------------------------------------------------------------------------

    def pool_for(self, table: str) -> PoolRef:
        if self.options.compute_pool_id:
            return PoolRef(id=self.options.compute_pool_id)
        for name in self.names(table):
            statement = self.live.statements.get(name) if name else None
            if statement is not None and statement.compute_pool_id:
                return PoolRef(id=statement.compute_pool_id)
        return PoolRef(create=compute_pool_name(self.options.environment, self.graph.tables[table].product))

    def rendered(self, table: str, reading: dict[str, str]) -> tuple[str | None, str | None]:
        """A table's DDL and DML text with every project table renamed to the version it uses, and the
        environment's Schema Registry context in the DDL's options."""
        info = self.graph.tables[table]
        renames = {k: v for k, v in reading.items() if k != v}
        render = (lambda sql: rename_tables(sql, renames)) if renames else (lambda sql: sql)
        ddl = render(info.ddl_sql) if info.ddl_sql else None
        if ddl and self.options.schema_context:
            ddl = with_schema_context(ddl, self.options.schema_context)
        return ddl, render(info.dml_sql) if info.dml_sql else None

    def table_step(self, table: str, action: Action, reason: str, *, version: int | None = None,
                   physical: str | None = None, reading: dict[str, str] | None = None,
                   start_at: datetime | None = None, end_at: datetime | None = None) -> PlanStep:
        """A step of `table`: by default its serving version (labels and names agree with it)."""
        info = self.graph.tables[table]
        physical = physical or self.physical(table)
        ddl, dml = self.names(table, physical)
        fields: dict[str, object] = dict(
            action=action, reason=reason, table=table, product=info.product,
            version=version if version is not None else self.options.versions.get(table, 1),
            physical_table=physical, ddl_statement=ddl, dml_statement=dml,
            drop_statement=statement_name(self.options.environment, info.product, "drop", physical),
            state_form=info.state_form, code_version=info.code_version)
        if action != Action.SKIP:
            fields["pool"] = self.pool_for(table)
        if action in (Action.SKIP, Action.RESUME):
            return STEP.validate_python(fields)
        ddl_sql, dml_sql = self.rendered(table, reading or self.options.physical_names)
        if action in RECREATING:
            fields.update(ddl_sql=ddl_sql, dml_sql=dml_sql, start_at=self.options.start_at,
                          validate_first=action != Action.DEPLOY or self.table_exists(physical) is not False)
        elif dml_sql is None:
            raise PlanError([f"{info.ddl_path}: {action.value} of {table}, which has no DML"])
        elif action == Action.BACKFILL:
            fields.update(dml_sql=dml_sql, start_at=start_at, end_at=end_at)
        else:
            fields.update(dml_sql=dml_sql, carry_offsets=info.state_form != StateForm.STATEFUL)
        return STEP.validate_python(fields)


def link(graph: ProjectGraph, steps: list[PlanStep], extra: list[int] | None = None) -> list[PlanStep]:
    """Numbered steps, a pool step for each pool to create, and each step's dependencies: its parents'
    steps (and `extra`, e.g. the seed steps, for every step that runs a statement)."""
    linked: list[PlanStep] = []
    pools: dict[str, int] = {}
    by_table: dict[str, int] = {}
    for step in steps:
        if not isinstance(step, TableStep):
            linked.append(step.model_copy(update={"index": len(linked)}))
            continue
        depends = [by_table[p] for p in graph.parents.get(step.table, []) if p in by_table]
        depends += [i for i in extra or [] if not isinstance(step, SkipStep)]
        pool = getattr(step, "pool", None)
        if isinstance(pool, PoolRef) and pool.create:
            if pool.create not in pools:
                pools[pool.create] = len(linked)
                linked.append(CreatePoolStep(index=len(linked), pool=pool,
                                             reason=f"no configured pool and none in use for {pool.create}"))
            depends.append(pools[pool.create])
        by_table[step.table] = len(linked)
        linked.append(step.model_copy(update={"index": len(linked), "depends_on": sorted(set(depends))}))
    return linked


def _where(graph: ProjectGraph, table: FlinkTable, name: str) -> str:
    """file:line of the first mention of `name` in the table's DML (or DDL)."""
    path = table.dml_path or table.ddl_path or table.folder
    try:
        text = (graph.inventory.root / path).read_text()
    except OSError:
        return path
    pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])", re.IGNORECASE)
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return f"{path}:{number}"
    return path


def render_plan(plan: DeploymentPlan) -> str:
    """One line a step: the same text for terminals, run logs and reviews."""
    lines = [f"{plan.kind} plan for {', '.join(plan.targets) or '-'}: {len(plan.changes)} change(s)"]
    for step in plan.steps:
        what = step.target
        after = f" after {','.join(map(str, step.depends_on))}" if step.depends_on else ""
        lines.append(f"{step.index:3d}. {step.action.value:22} {what:32} {step.reason}{after}")
    return "\n".join(lines)
