"""Run any deployment plan through the Confluent client: the one code path that creates statements.

Independent steps run concurrently (bounded); each waits for its statements'
phases; the first failure stops the plan and says which step, which statement
and why. Nothing destructive happens before the replacement is known to
compile on the target, and an in-place replacement that fails puts the old
statement back from the same offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError, NotFound, StatementFailed
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.deploy.backfill import window_options, windowed_dml
from shift_left_dagster.deploy.live import HEALTHY_PHASES, StatementKind, statement_labels
from shift_left_dagster.deploy.naming import backfill_statement_name, statement_name
from shift_left_dagster.deploy.plan import Action, DeploymentPlan, PlanStep
from shift_left_dagster.deploy.rewrite import (
    queries_of,
    specific_offsets_options,
    with_insert_columns,
    with_source_options,
)
from shift_left_dagster.deploy.seeds import seed_statements
from shift_left_dagster.project.analysis import tables_read
from shift_left_dagster.project.parsing import parse_one_statement

log = logging.getLogger(__name__)

SETTLED = {Phase.RUNNING, Phase.COMPLETED}


class StepResult(BaseModel):
    """What one step did: the statements it left (name -> phase), the offsets it carried."""

    step: PlanStep
    statements: dict[str, str] = Field(default_factory=dict)
    finished: dict[str, str] = Field(default_factory=dict)  # bounded statements run to the end, then removed
    compute_pool: str | None = None
    carried_offsets: dict[str, dict[int, int]] = Field(default_factory=dict)


class DeploymentFailed(RuntimeError):
    """A step failed; the plan stopped there. `detail` says why in Flink/Confluent terms."""

    def __init__(self, step: PlanStep, statement: str | None, detail: str):
        self.step, self.statement, self.detail = step, statement, detail
        where = f" statement {statement}" if statement else ""
        what = step.physical_table or step.table or (str(step.pool) if step.pool else "")
        super().__init__(f"step {step.index} ({step.action.value} {what}){where} failed: {detail}")


class PlanExecutor:
    def __init__(
        self,
        client: ConfluentClient,
        *,
        max_parallel: int = 4,
        timeout: float = 600.0,
        max_cfu: int = 10,
        settle_seconds: float = 2.0,
        seeds_root: Path | None = None,
    ):
        self.client = client
        self.max_parallel, self.timeout, self.max_cfu = max_parallel, timeout, max_cfu
        self.settle_seconds = settle_seconds  # a replaced statement must stay healthy this long
        self.seeds_root = seeds_root
        self.pools: dict[str, str] = {}  # display name -> pool id created or found
        self.blocked: dict[str, str] = {}  # table -> why its step is skipped
        self.environment = "dev"

    def run(self, plan: DeploymentPlan) -> Iterator[StepResult]:
        """Execute the plan; yield each step's result as it finishes. Raises DeploymentFailed."""
        self.environment = plan.options.environment
        pending = {step.index: step for step in plan.steps}
        done: set[int] = set()
        running: dict[Future[StepResult], PlanStep] = {}
        failure: DeploymentFailed | None = None
        with ThreadPoolExecutor(max_workers=self.max_parallel) as pool:
            while (pending and failure is None) or running:
                if failure is None:
                    for index, step in sorted(pending.items()):
                        if step.table in self.blocked:
                            del pending[index]
                            done.add(index)  # nothing of it runs; its dependents are blocked too
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

    def block(self, tables: list[str], reason: str) -> None:
        """Steps of these tables not started yet are skipped (a blocking check failed upstream)."""
        for table in tables:
            self.blocked.setdefault(table, reason)

    def unhealthy(self, results: list[StepResult]) -> list[str]:
        """After the run settles: every statement it left must still be RUNNING or COMPLETED."""
        problems = []
        for result in results:
            for name, phase in result.statements.items():
                if phase not in HEALTHY_PHASES:
                    continue  # already reported as the step's outcome
                try:
                    now = self.client.get_statement(name)
                except NotFound:
                    problems.append(f"{name} ({result.step.table}) disappeared")
                    continue
                result.statements[name] = now.phase
                if now.phase not in HEALTHY_PHASES:
                    detail = now.status.detail if now.status else ""
                    problems.append(f"{name} ({result.step.table}) is {now.phase}: {detail}".rstrip(": "))
        return problems

    # -- one step ------------------------------------------------------------------------------

    def execute(self, step: PlanStep) -> StepResult:
        what = step.physical_table or step.table or step.pool
        log.info("step %s: %s %s (%s)", step.index, step.action.value, what, step.reason)
        result = StepResult(step=step)
        self.current: str | None = None
        try:
            if step.action == Action.CREATE_POOL:
                result.compute_pool = self.pool_id(step)
                return result
            if step.action == Action.SEED:
                self.seed(step)
                return result
            result.compute_pool = self.pool_id(step)
            handler = {
                Action.SKIP: self.observe,
                Action.DEPLOY: self.deploy,
                Action.RECREATE: self.deploy,
                Action.RESUME: self.resume,
                Action.REPLACE_DML: self.replace,
                Action.REPLACE_IN_PLACE: self.replace,
                Action.BACKFILL: self.backfill,
                Action.PROMOTE: self.retire,
                Action.ROLLBACK: self.retire,
                Action.UNDEPLOY: self.retire,
            }[step.action]
            handler(step, result)
            return result
        except DeploymentFailed:
            raise
        except ConfluentError as error:
            raise DeploymentFailed(step, self.current, str(error)) from error

    def observe(self, step: PlanStep, result: StepResult) -> None:
        for name in (step.ddl_statement, step.dml_statement):
            if name:
                self.current = name
                try:
                    result.statements[name] = self.client.get_statement(name).phase
                except NotFound:
                    pass  # a table with no DDL statement of ours (created before, or outside)

    def deploy(self, step: PlanStep, result: StepResult) -> None:
        """DEPLOY / RECREATE: the table is dropped and created again, its DML starts from earliest."""
        if step.validate_first:
            self.validate(step)
        self.remove(step.dml_statement)
        self.create_table(step, result)
        self.start_dml(step, result, offsets={})

    def resume(self, step: PlanStep, result: StepResult) -> None:
        self.current = step.dml_statement
        assert step.dml_statement
        statement = self.client.resume_statement(step.dml_statement, timeout=self.timeout)
        result.statements[statement.name] = self.settle(statement.name).phase

    def replace(self, step: PlanStep, result: StepResult) -> None:
        """REPLACE_DML / REPLACE_IN_PLACE: the table is kept; the statement is swapped, from its offsets."""
        assert step.dml_statement
        self.validate(step)
        self.current = step.dml_statement
        old = self.existing(step.dml_statement)
        offsets = self.stop_for_offsets(step.dml_statement) if step.carry_offsets else {}
        result.carried_offsets = offsets
        # The DDL change, once nothing writes the table (the stopped statement keeps its offsets).
        for index, alter in enumerate(step.alter_sql):
            self.run_to_completion(f"{step.drop_statement}-alter-{index}", alter, step, keep=False)
        self.remove(step.dml_statement)
        try:
            self.start_dml(step, result, offsets=offsets)
            if step.action == Action.REPLACE_IN_PLACE:
                self.stays_healthy(step.dml_statement)
        except (ConfluentError, DeploymentFailed) as error:
            if old is None or step.action != Action.REPLACE_IN_PLACE:
                raise
            self.restore(step, old, offsets)
            raise DeploymentFailed(step, step.dml_statement,
                                   f"the new statement failed ({_detail(error)}); the old statement was "
                                   f"restarted from the same offsets under {step.dml_statement}") from error

    def backfill(self, step: PlanStep, result: StepResult) -> None:
        """A bounded statement over [start_at, end_at) of event time: created, waited on, deleted."""
        assert step.table and step.dml_sql and step.start_at and step.end_at
        name = backfill_statement_name(self.environment, step.product, step.physical_table or step.table,
                                       step.start_at, step.end_at)
        self.current = name
        self.remove(name)
        sql = windowed_dml(step.dml_sql, step.start_at, step.end_at)
        self.client.create_statement(name, sql, compute_pool_id=result.compute_pool,
                                     labels=statement_labels(step.table, step.code_version, step.version,
                                                             StatementKind.BACKFILL))
        result.finished[name] = self.client.wait_for_phase(name, {Phase.COMPLETED}, self.timeout).phase
        self.remove(name)

    def retire(self, step: PlanStep, result: StepResult) -> None:
        """PROMOTE / ROLLBACK / UNDEPLOY: statements removed, then (drop_table) the table they wrote."""
        for name in step.retire:
            self.current = name
            self.remove(name)
            result.finished[name] = "DELETED"
        if step.drop_table and step.physical_table:
            drop = f"DROP TABLE IF EXISTS `{step.physical_table}`"
            self.run_to_completion(step.drop_statement or "", drop, step, keep=False)

    def seed(self, step: PlanStep) -> None:
        assert step.seed_file and step.physical_table
        path = Path(step.seed_file) if self.seeds_root is None else self.seeds_root / step.seed_file
        for index, (kind, sql) in enumerate(seed_statements(path)):
            name = statement_name("seed", None, kind, f"{step.physical_table}-{index}")
            self.run_to_completion(name, sql, step, keep=False)

    # -- helpers -------------------------------------------------------------------------------

    def validate(self, step: PlanStep) -> None:
        """Compile the new DML on the target (EXPLAIN of each query it runs) before anything is destroyed."""
        if not step.dml_sql:
            return
        name = statement_name(self.environment, step.product, "ddl", f"validate-{step.physical_table}")
        for query in queries_of(step.dml_sql):
            self.current = name
            self.remove(name)
            self.client.create_statement(name, f"EXPLAIN {query}")
            try:
                self.client.wait_for_phase(name, {Phase.COMPLETED}, self.timeout)
            except StatementFailed as error:
                raise DeploymentFailed(step, step.dml_statement,
                                       f"its new DML does not compile on the target ({_detail(error)}); "
                                       "nothing was changed") from error
            finally:
                self.remove(name)

    def pool_id(self, step: PlanStep) -> str | None:
        if step.pool is None:
            return None
        if step.pool.id:
            return step.pool.id
        display = step.pool.create or ""
        if display not in self.pools:
            existing = [p for p in self.client.list_compute_pools() if p.spec.display_name == display]
            pool = existing[0] if existing else self.client.create_compute_pool(display, max_cfu=self.max_cfu)
            self.pools[display] = pool.id
        return self.pools[display]

    def remove(self, name: str | None) -> None:
        """Delete a statement (a terminal one keeps its name for 30 days otherwise)."""
        if name:
            self.client.delete_statement(name, timeout=self.timeout)

    def existing(self, name: str) -> Statement | None:
        try:
            return self.client.get_statement(name)
        except NotFound:
            return None

    def stop_for_offsets(self, name: str) -> dict[str, dict[int, int]]:
        try:
            return self.client.stop_statement(name, timeout=self.timeout).latest_offsets
        except NotFound:
            return {}

    def create_table(self, step: PlanStep, result: StepResult) -> None:
        if not step.ddl_sql or not step.ddl_statement:
            return
        drop = f"DROP TABLE IF EXISTS `{step.physical_table}`"
        self.run_to_completion(step.drop_statement or "", drop, step, keep=False)
        self.remove(step.ddl_statement)
        phase = self.run_to_completion(step.ddl_statement, step.ddl_sql, step, keep=True)
        result.statements[step.ddl_statement] = phase

    def start_dml(self, step: PlanStep, result: StepResult, offsets: dict[str, dict[int, int]]) -> None:
        if not step.dml_sql or not step.dml_statement:
            return
        self.current = step.dml_statement
        sql = step.dml_sql
        if offsets:  # latest_offsets are keyed by topic, which is the (physical) table name the SQL reads
            sql = with_source_options(sql, {topic: specific_offsets_options(o) for topic, o in offsets.items()})
        elif step.start_at is not None:
            sql = with_source_options(sql, {name: window_options(step.start_at, None) for name in _sources(sql)})
        assert step.table
        statement = self.client.create_statement(
            step.dml_statement, sql, compute_pool_id=result.compute_pool,
            labels=statement_labels(step.table, step.code_version, step.version, StatementKind.DML))
        result.statements[statement.name] = self.settle(statement.name).phase

    def run_to_completion(self, name: str, sql: str, step: PlanStep, keep: bool) -> str:
        self.current = name
        self.remove(name)
        labels = (statement_labels(step.table, step.code_version, step.version, StatementKind.DDL)
                  if keep and step.table else None)
        self.client.create_statement(name, sql, compute_pool_id=self.pool_id(step), labels=labels)
        final = self.client.wait_for_phase(name, {Phase.COMPLETED}, self.timeout)
        if not keep:
            self.remove(name)
        return final.phase

    def settle(self, name: str) -> Statement:
        return self.client.wait_for_phase(name, SETTLED, self.timeout)

    def stays_healthy(self, name: str) -> None:
        """A replacement must keep running a while (and so process new input) without failing."""
        deadline = time.monotonic() + self.settle_seconds
        while time.monotonic() < deadline:
            self.client.wait_for_phase(name, SETTLED, self.timeout)
            time.sleep(min(0.5, self.settle_seconds))
        self.client.wait_for_phase(name, SETTLED, self.timeout)

    def restore(self, step: PlanStep, old: Statement, offsets: dict[str, dict[int, int]]) -> None:
        """Put the replaced statement back, from the offsets the new one started at."""
        assert step.dml_statement
        self.remove(step.dml_statement)
        sql = old.spec.statement or ""
        if step.kept_columns:  # the table gained columns: the old statement writes the ones it knew
            sql = with_insert_columns(sql, step.kept_columns)
        if offsets:
            sql = with_source_options(sql, {topic: specific_offsets_options(o) for topic, o in offsets.items()})
        labels = old.metadata.labels if old.metadata else None
        self.client.create_statement(step.dml_statement, sql, compute_pool_id=old.spec.compute_pool_id,
                                     labels=labels)
        self.settle(step.dml_statement)


def _sources(sql: str) -> list[str]:
    return tables_read(parse_one_statement(sql).tree)


def _detail(error: BaseException) -> str:
    return getattr(error, "detail", None) or str(error)
