"""Run a deployment plan through the Confluent client, step by step, stopping at the first failure.

Independent steps (no dependency between them) run concurrently, bounded. Each
step waits for its statements' phases; the first failure stops the plan and
says which step, which statement and why.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError, NotFound
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.deploy.plan import (
    CODE_VERSION_LABEL,
    TABLE_LABEL,
    VERSION_LABEL,
    Action,
    DeploymentPlan,
    LiveStatement,
    PlanStep,
)
from shift_left_dagster.deploy.backfill import window_options
from shift_left_dagster.deploy.naming import VERSION_SUFFIX
from shift_left_dagster.deploy.rewrite import rename_tables, specific_offsets_options, with_source_options
from shift_left_dagster.project.analysis import StateForm
from shift_left_dagster.project.graph import ProjectGraph

log = logging.getLogger(__name__)

SETTLED = {Phase.RUNNING, Phase.COMPLETED}


class StepResult(BaseModel):
    """What one step did: the statements it left, their phases, offsets it carried."""

    step: PlanStep
    statements: dict[str, str] = Field(default_factory=dict)  # name -> phase
    compute_pool: str | None = None
    carried_offsets: dict[str, dict[int, int]] = Field(default_factory=dict)


class DeploymentFailed(RuntimeError):
    """A step failed; the plan stopped there."""

    def __init__(self, step: PlanStep, statement: str | None, detail: str):
        self.step, self.statement, self.detail = step, statement, detail
        where = f" statement {statement}" if statement else ""
        super().__init__(f"step {step.index} ({step.action.value} {step.table or step.compute_pool}){where} failed: {detail}")


def live_statements(client: ConfluentClient) -> dict[str, LiveStatement]:
    """The plan's view of the environment: every statement, with our labels."""
    live = {}
    for s in client.list_statements():
        labels = (s.metadata.labels if s.metadata else None) or {}
        live[s.name] = LiveStatement(
            name=s.name,
            phase=s.phase,
            compute_pool_id=s.spec.compute_pool_id,
            code_version=labels.get(CODE_VERSION_LABEL),
            sql=s.spec.statement,
            table=labels.get(TABLE_LABEL),
            version=int(labels.get(VERSION_LABEL, "1")),
        )
    return live


class PlanExecutor:
    def __init__(
        self,
        client: ConfluentClient,
        graph: ProjectGraph,
        *,
        max_parallel: int = 4,
        timeout: float = 600.0,
        max_cfu: int = 10,
    ):
        self.client, self.graph = client, graph
        self.max_parallel, self.timeout, self.max_cfu = max_parallel, timeout, max_cfu
        self.pools: dict[str, str] = {}  # "new:<name>" -> created pool id
        self.start_at: datetime | None = None
        self.physical_names: dict[str, str] = {}
        self.blocked: dict[str, str] = {}  # table -> why its step is skipped
        self.recreated: set[str] = set()

    def run(self, plan: DeploymentPlan) -> Iterator[StepResult]:
        """Execute the plan; yield each step's result as it finishes. Raises DeploymentFailed."""
        self.start_at = plan.options.start_at
        self.physical_names = plan.options.physical_names
        self.blocked: dict[str, str] = {}
        # A recreated table is a new topic: offsets carried from its old topic would skip its new records.
        self.recreated = {s.table for s in plan.steps if s.table and s.action in (Action.DEPLOY, Action.RESTART)}
        pending = {step.index: step for step in plan.steps}
        done: set[int] = set()
        running: dict[Future, PlanStep] = {}
        failure: DeploymentFailed | None = None
        with ThreadPoolExecutor(max_workers=self.max_parallel) as pool:
            while (pending and failure is None) or running:
                if failure is None:
                    for index, step in sorted(pending.items()):
                        if step.table in self.blocked:
                            del pending[index]
                            log.info("step %s (%s) skipped: %s", index, step.table, self.blocked[step.table])
                            continue
                        if len(running) >= self.max_parallel:
                            break
                        if all(d in done for d in step.depends_on):
                            running[pool.submit(self.execute, step)] = step
                            del pending[index]
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    step = running.pop(future)
                    try:
                        result = future.result()
                    except DeploymentFailed as error:
                        failure = failure or error
                        continue
                    done.add(step.index)
                    yield result
        if failure is not None:
            raise failure

    def block_descendants(self, table: str, reason: str) -> list[str]:
        """Steps of tables downstream of `table` not started yet are skipped (a blocking check failed)."""
        skipped = [d for d in self.graph.descendants(table) if d not in self.blocked]
        for descendant in skipped:
            self.blocked[descendant] = reason
        return skipped

    # -- one step ------------------------------------------------------------------------

    def execute(self, step: PlanStep) -> StepResult:
        log.info("step %s: %s %s (%s)", step.index, step.action.value, step.table or step.compute_pool, step.reason)
        current = None
        try:
            if step.action == Action.CREATE_POOL:
                return StepResult(step=step, compute_pool=self.create_pool(step.compute_pool or ""))
            result = StepResult(step=step, compute_pool=self.resolve_pool(step.compute_pool))
            if step.action == Action.SKIP:
                for name in (step.ddl_statement, step.dml_statement):
                    current = name
                    if name:
                        result.statements[name] = self.client.get_statement(name).phase
                return result
            if step.action in (Action.DEPLOY, Action.RESTART):
                current = step.dml_statement
                self.remove(step.dml_statement)
                current = step.ddl_statement
                self.recreate_table(step, result)
                current = step.dml_statement
                self.start_dml(step, result, offsets={})
            elif step.action in (Action.CARRY_OVER, Action.REPLACE_DML):
                current = step.dml_statement
                offsets = self.stop_for_offsets(step.dml_statement)
                self.remove(step.dml_statement)
                keep_offsets = step.state_form != StateForm.STATEFUL
                result.carried_offsets = offsets if keep_offsets else {}
                self.start_dml(step, result, offsets=result.carried_offsets)
            return result
        except ConfluentError as error:
            raise DeploymentFailed(step, current, str(error)) from error

    def create_pool(self, reference: str) -> str:
        display_name = reference.removeprefix("new:")
        existing = [p for p in self.client.list_compute_pools() if p.spec.display_name == display_name]
        pool = existing[0] if existing else self.client.create_compute_pool(display_name, max_cfu=self.max_cfu)
        self.pools[reference] = pool.id
        return pool.id

    def resolve_pool(self, reference: str | None) -> str | None:
        if reference and reference.startswith("new:"):
            if reference not in self.pools:  # created by a step of an earlier run
                self.create_pool(reference)
            return self.pools[reference]
        return reference

    def remove(self, name: str | None) -> None:
        """Delete a statement (a terminal one keeps its name for 30 days otherwise)."""
        if name:
            self.client.delete_statement(name, timeout=self.timeout)

    def stop_for_offsets(self, name: str | None) -> dict[str, dict[int, int]]:
        if not name:
            return {}
        try:
            stopped = self.client.stop_statement(name, timeout=self.timeout)
        except NotFound:
            return {}
        return stopped.latest_offsets

    def recreate_table(self, step: PlanStep, result: StepResult) -> None:
        table = self.graph.tables[step.table]
        if not table.ddl_path or not step.ddl_statement:
            return
        drop = f"DROP TABLE IF EXISTS `{step.physical_table or table.name}`"
        self.run_to_completion(step.drop_statement or "", drop, step, result, keep=False)
        self.remove(step.ddl_statement)
        self.run_to_completion(step.ddl_statement, self.physical(self.read(table.ddl_path)), step, result, keep=True)

    def start_dml(self, step: PlanStep, result: StepResult, offsets: dict[str, dict[int, int]]) -> None:
        table = self.graph.tables[step.table]
        if not table.dml_path or not step.dml_statement:
            return
        sql = self.read(table.dml_path)
        if offsets:
            # latest_offsets are keyed by topic = the physical table name
            logical = {v: k for k, v in self.physical_names.items()}
            offsets = {logical.get(topic, topic): o for topic, o in offsets.items()
                       if logical.get(topic, topic) not in self.recreated}
            sql = with_source_options(sql, {topic: specific_offsets_options(o) for topic, o in offsets.items()})
        elif self.start_at is not None:
            sql = with_source_options(sql, {name: window_options(self.start_at, None) for name in table.tables_read})
        statement = self.client.create_statement(
            step.dml_statement,
            self.physical(sql),
            compute_pool_id=result.compute_pool,
            labels=statement_labels(table.name, table.code_version, version_of(step)),
        )
        result.statements[statement.name] = self.settle(statement).phase

    def run_to_completion(self, name: str, sql: str, step: PlanStep, result: StepResult, keep: bool) -> None:
        self.remove(name)
        table = self.graph.tables[step.table]
        labels = statement_labels(table.name, table.code_version, version_of(step)) if keep else None
        statement = self.client.create_statement(name, sql, compute_pool_id=result.compute_pool, labels=labels)
        final = self.client.wait_for_phase(statement.name, {Phase.COMPLETED}, self.timeout)
        if keep:
            result.statements[name] = final.phase
        else:
            self.remove(name)

    def settle(self, statement: Statement) -> Statement:
        return self.client.wait_for_phase(statement.name, SETTLED, self.timeout)

    def read(self, relative: str) -> str:
        return (Path(self.graph.inventory.root) / relative).read_text()

    def physical(self, sql: str) -> str:
        """The SQL with every table renamed to the version that runs (identity without blue/green)."""
        renames = {k: v for k, v in self.physical_names.items() if k != v}
        return rename_tables(sql, renames) if renames else sql


def version_of(step: PlanStep) -> int:
    match = VERSION_SUFFIX.match(step.physical_table or "")
    return int(match.group("n")) if match and step.physical_table != step.table else 1


def statement_labels(table: str, code_version: str, version: int) -> dict[str, str]:
    return {TABLE_LABEL: table, CODE_VERSION_LABEL: code_version, VERSION_LABEL: str(version)}
