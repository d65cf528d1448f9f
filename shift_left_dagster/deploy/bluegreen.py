"""Blue/green: from table changes to the versions to deploy beside the running ones.

A breaking change gets a new version of the table (`<table>_v2`, ...) and of
every descendant that reads it, each reading the new versions of its changed
parents; the running ("green") version is never touched until promotion. The
versioned SQL is derived at deploy time by renaming tables in the AST; the git
files are not rewritten.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shift_left_dagster.deploy.changes import Category, TableChange
from shift_left_dagster.deploy.live import DEPLOYED_PHASES, LiveState, StatementKind
from shift_left_dagster.deploy.naming import statement_name, versioned_name
from shift_left_dagster.deploy.plan import Decision, DeploymentPlan, PlanError, Planner, PlanOptions, finish
from shift_left_dagster.deploy.rewrite import rename_tables
from shift_left_dagster.deploy.steps import Action, PlanKind, PlanStep, RetireStep
from shift_left_dagster.deploy.undeploy import undeploy_plan
from shift_left_dagster.project.analysis import StateForm, tables_read
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.parsing import parse_one_statement


class VersionedTable(BaseModel):
    table: str  # the logical name, as in git
    version: int
    physical: str  # the name this version is deployed as
    reason: str


class InPlaceChange(BaseModel):
    table: str
    physical: str
    reason: str
    added_columns: list[tuple[str, str]] = Field(default_factory=list)  # (name, type), nullable


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
    breaking = {c.table for c in changes if c.table in graph.tables and (
        c.category == Category.BREAKING or (c.category == Category.NON_BREAKING
                                            and graph.tables[c.table].state_form == StateForm.STATEFUL))}
    impacted: dict[str, str] = {}
    for table in graph.sorted_subset(breaking):
        impacted.setdefault(table, "breaking change: " + "; ".join(
            next(c for c in changes if c.table == table).reasons))
        for descendant in graph.descendants(table):
            impacted.setdefault(descendant, f"reads a new version of {table}")
    for table in graph.sorted_subset(list(impacted)):
        version = current.get(table, 1) + 1
        plan.versions.append(VersionedTable(table=table, version=version, physical=versioned_name(table, version),
                                            reason=impacted[table]))
    for change in changes:
        if change.category == Category.NON_BREAKING and change.table not in impacted:
            plan.in_place.append(InPlaceChange(table=change.table,
                                               physical=versioned_name(change.table, current.get(change.table, 1)),
                                               reason="; ".join(change.reasons),
                                               added_columns=[(c.name, c.type) for c in change.added_columns]))
        elif change.category == Category.ADDED:
            plan.added.append(change.table)
        elif change.category == Category.REMOVED:
            plan.removed.append(change.table)
    return plan


def versioned_sql(sql: str, physical: dict[str, str]) -> str:
    """A table's SQL with every project table renamed to the version it must read or write."""
    return rename_tables(sql, {k: v for k, v in physical.items() if k != v})


def commit_plan(graph: ProjectGraph, changes: list[TableChange], live: LiveState,
                options: PlanOptions) -> DeploymentPlan:
    """One deployment plan for a commit range: new versions beside the serving ones (parents first),
    in-place replacements from offsets (DDL first), then an ordinary plan for added tables; the same
    read validation and seeding as every plan (`finish`)."""
    broken = [graph.broken[c.table].reason for c in changes if c.table in graph.broken]
    broken += [r for c in changes if c.category == Category.BROKEN and c.table not in graph.broken for r in c.reasons]
    if broken:  # a file that stopped parsing or was deleted reads as a removed table: never undeploy on that
        raise PlanError([f"the commit leaves a table broken, fix it first: {reason}" for reason in broken])
    serving = live.serving_versions()
    options = options.model_copy(update={"versions": serving})
    planner = Planner(graph, live, options)
    # A change someone already deployed (its serving statement runs the committed code) is done: a new
    # version or an in-place swap of the same code would redo it (an added column would be added twice).
    done = sorted({c.table for c in changes if c.table in graph.tables and c.table in serving
                   and planner.unchanged(c.table)})
    changes = [c for c in changes if c.table not in done]
    wanted = plan_blue_green(graph, changes, serving)
    deployed = {v.table for v in wanted.versions if v.table in serving}
    candidates = live.candidate_versions()
    busy = sorted((deployed | {c.table for c in wanted.in_place}) & set(candidates))
    if busy:  # a new version would replace the candidate, an in-place swap would miss it
        raise PlanError([f"{t} has version {candidates[t]} beside the serving one (a reprocess or an earlier "
                         f"commit's) and the commit changes {t}: promote or roll it back first" for t in busy])
    reading = {**options.physical_names, **{v.table: v.physical for v in wanted.versions if v.table in deployed}}
    steps: list[PlanStep] = []
    for version in wanted.versions:
        if version.table not in deployed:
            continue  # never deployed: nothing to serve beside; an ordinary plan deploys it below
        steps.append(planner.table_step(version.table, Action.DEPLOY,
                                        f"new version {version.version} beside the serving one: {version.reason}",
                                        version=version.version, physical=version.physical, reading=reading))
    ordinary = sorted({v.table for v in wanted.versions if v.table not in deployed} | set(wanted.added))
    for change in wanted.in_place:
        if change.table not in serving:
            ordinary.append(change.table)
            continue
        steps.append(_in_place_step(graph, planner, change, serving[change.table]))
    if ordinary:
        decisions = planner.decide(sorted(set(ordinary)))
        for table in graph.sorted_subset(list(decisions)):
            if table not in {s.table for s in steps}:
                steps.append(planner.table_step(table, *decisions[table]))
    steps += _repairs(graph, planner, done, {s.table for s in steps if s.table})
    plan = finish(planner, PlanKind.COMMIT, wanted.selection, _ordered(graph, steps))
    if not wanted.removed:
        return plan
    # Tables whose folder left git: undeployed after the rest, unless something still reads them.
    removal = undeploy_plan(graph, wanted.removed, live, options, strict=False).steps
    first = len(plan.steps)
    tail = [s.model_copy(update={"index": first + i, "depends_on": [first + i - 1] if first + i else []})
            for i, s in enumerate(removal)]
    return plan.model_copy(update={"steps": [*plan.steps, *tail]})


def _repairs(graph: ProjectGraph, planner: Planner, done: list[str], planned: set[str]) -> list[PlanStep]:
    """What a deployment of the `done` tables (already running the committed code) stopped half way left
    behind, planned as a deploy of them would: a child FAILED, or one whose parent was recreated under it."""
    decisions: dict[str, Decision] = {table: (Action.SKIP, "runs the committed code") for table in done}
    planner.follow_children(decisions, set(done))
    return [planner.table_step(table, *decisions[table]) for table in graph.sorted_subset(list(decisions))
            if table not in done and table not in planned]


def _in_place_step(graph: ProjectGraph, planner: Planner, change: InPlaceChange, version: int) -> PlanStep:
    """A compatible stateless change replaced in place: nullable columns added first (ALTER), the
    statement swapped from its offsets; the old statement writes only the columns it knew."""
    step = planner.table_step(change.table, Action.REPLACE_IN_PLACE,
                              f"compatible stateless change, replaced in place: {change.reason}",
                              version=version, physical=change.physical)
    alter = [f"ALTER TABLE `{change.physical}` ADD (`{name}` {kind})" for name, kind in change.added_columns]
    if not alter:
        return step
    added = {name for name, _ in change.added_columns}
    ddl = graph.tables[change.table].ddl
    kept = [c.name for c in (ddl.columns if ddl else []) if not c.computed and c.name not in added]
    return step.model_copy(update={"alter_sql": alter, "kept_columns": kept})


def promote_plan(graph: ProjectGraph, live: LiveState, options: PlanOptions,
                 tables: list[str] | None = None) -> DeploymentPlan:
    """Candidates serve: the old versions' statements are removed (their tables are kept)."""
    candidates, serving = live.candidate_versions(), live.serving_versions()
    chosen = [t for t in sorted(tables or candidates) if t in candidates]
    stranded = _stranded_readers(graph, live, {versioned_name(t, serving[t]): t for t in chosen}, serving)
    if stranded:
        raise PlanError(stranded)
    steps = [_retire_step(graph, options, Action.PROMOTE, t, serving[t], candidates[t], live) for t in chosen]
    return DeploymentPlan(kind=PlanKind.PROMOTE, targets=chosen, options=options,
                          steps=[s.model_copy(update={"index": i}) for i, s in enumerate(steps)])


def _stranded_readers(graph: ProjectGraph, live: LiveState, retired: dict[str, str],
                      serving: dict[str, int]) -> list[str]:
    """Serving statements of other tables reading a version the promotion retires: they would stop receiving
    rows (a table deployed after the new versions were built, or a candidate promoted without its readers)."""
    problems = []
    for statement in sorted(live.of_project(list(graph.tables)).statements.values(), key=lambda s: s.name):
        if (statement.kind != StatementKind.DML or statement.table in retired.values() or not statement.sql
                or statement.phase not in DEPLOYED_PHASES or statement.version != serving.get(statement.table or "")):
            continue
        for topic in sorted(set(tables_read(parse_one_statement(statement.sql).tree)) & set(retired)):
            problems.append(f"{statement.table} ({statement.name}) reads {topic}, which promoting {retired[topic]} "
                            f"retires, and has no new version reading {retired[topic]}'s: promote them together, or "
                            f"roll back and build the new versions again (deployed readers follow)")
    return problems


def rollback_plan(graph: ProjectGraph, live: LiveState, options: PlanOptions,
                  tables: list[str] | None = None) -> DeploymentPlan:
    """Candidates are removed, children first: statements, then tables; the serving versions never stopped."""
    candidates = live.candidate_versions()
    chosen = [t for t in sorted(tables or candidates) if t in candidates]
    ordered = list(reversed(graph.sorted_subset([t for t in chosen if t in graph.tables])))
    ordered += [t for t in chosen if t not in graph.tables]
    steps = [_retire_step(graph, options, Action.ROLLBACK, t, candidates[t], candidates[t], live) for t in ordered]
    return DeploymentPlan(kind=PlanKind.ROLLBACK, targets=chosen, options=options,
                          steps=[s.model_copy(update={"index": i, "depends_on": [i - 1] if i else []})
                                 for i, s in enumerate(steps)])


def _retire_step(graph: ProjectGraph, options: PlanOptions, action: Literal[Action.PROMOTE, Action.ROLLBACK],
                 table: str, retired: int,
                 candidate: int, live: LiveState) -> RetireStep:
    physical = versioned_name(table, retired)
    product = graph.tables[table].product if table in graph.tables else None
    verb = "promoted" if action == Action.PROMOTE else "rolled back"
    return RetireStep(action=action, table=table, product=product, version=candidate,
                    physical_table=physical, drop_table=action == Action.ROLLBACK,
                    drop_statement=statement_name(options.environment, product, "drop", physical),
                    retire=[s.name for s in live.statements_of(table, retired)],
                    reason=f"version {candidate} {verb}: version {retired}'s statements removed")


def _ordered(graph: ProjectGraph, steps: list[PlanStep]) -> list[PlanStep]:
    position = {name: i for i, name in enumerate(graph.order)}
    return sorted(steps, key=lambda s: position.get(s.table or "", -1))
