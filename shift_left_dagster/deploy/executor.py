"""Run any deployment plan through the Confluent client: the one code path that creates statements.

Independent steps run concurrently (bounded); each waits for its statements'
phases; the first failure stops the plan and says which step, which statement
and why. Nothing destructive happens before the replacement is known to
compile on the target, and an in-place replacement that fails puts the old
statement back from the same offsets. Each step keeps its own state (the
statement it acts on). `stop()` (a terminated run, Ctrl-C, a closed generator)
starts no new step and makes every wait give up at its next poll, except inside
an in-place swap or a seed, which finish; `DeploymentStopped` says what ran.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError, NotFound, StatementFailed, Stopped
from shift_left_dagster.confluent.models import Phase, Statement
from shift_left_dagster.deploy.backfill import window_options, windowed_dml
from shift_left_dagster.deploy.bounded import run_bounded
from shift_left_dagster.deploy.live import CODE_VERSION_LABEL, HEALTHY_PHASES, StatementKind, statement_labels
from shift_left_dagster.deploy.naming import backfill_statement_name, statement_name
from shift_left_dagster.deploy.plan import DeploymentPlan
from shift_left_dagster.deploy.rewrite import (
    queries_of,
    specific_offsets_options,
    with_insert_columns,
    with_source_options,
)
from shift_left_dagster.deploy.seeds import seed_statements
from shift_left_dagster.deploy.steps import (
    Action,
    BackfillStep,
    CreatePoolStep,
    DeployStep,
    PlanStep,
    PoolRef,
    ReplaceStep,
    ResumeStep,
    RetireStep,
    SeedStep,
    SkipStep,
    Step,
    StopStep,
    TableStep,
)
from shift_left_dagster.deploy.stretches import Stretch, split, with_stretches
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
    stretches: int = 0  # earlier code versions the table's sink still holds rows of (in-place replacements)
    mixed_code: str | None = None  # a backfill wrote a window with other code than the serving statement's
    acting_on: str | None = Field(default=None, exclude=True)  # the statement the step works on now


class DeploymentFailed(RuntimeError):
    """A step failed; the plan stopped there. `detail` says why in Flink/Confluent terms."""

    def __init__(self, step: Step, statement: str | None, detail: str):
        self.step, self.statement, self.detail = step, statement, detail
        where = f" statement {statement}" if statement else ""
        super().__init__(f"step {step.index} ({step.action.value} {step.target}){where} failed: {detail}")


class DeploymentStopped(RuntimeError):
    """The run was asked to stop (a terminated Dagster run, Ctrl-C): steps not started were left out,
    running ones gave up waiting; every statement is as it was or as its step planned."""

    def __init__(self, finished: list[int], interrupted: list[int], not_started: list[int]):
        self.finished, self.interrupted, self.not_started = finished, interrupted, not_started
        super().__init__(f"deployment stopped: steps {_numbers(finished)} ran, {_numbers(interrupted)} were "
                         f"interrupted, {_numbers(not_started)} did not start")


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
        self.stopping = threading.Event()  # set by stop(): no new step starts, waits give up
        self._shielded = threading.local()  # a step's critical section (an in-place swap) finishes first

    def stop(self) -> None:
        """Stop cooperatively: no new step starts, and running steps give up at their next wait."""
        self.stopping.set()

    def run(self, plan: DeploymentPlan) -> Iterator[StepResult]:
        """Execute the plan; yield each step's result as it finishes. Raises DeploymentFailed, or
        DeploymentStopped once stop() was called (or the caller was interrupted)."""
        self.environment = plan.options.environment
        self.client.should_stop = self._should_stop
        pending = {step.index: step for step in plan.steps}
        done: list[int] = []
        running: dict[Future[StepResult], PlanStep] = {}
        failure: DeploymentFailed | None = None
        interrupted: list[int] = []
        pool = ThreadPoolExecutor(max_workers=self.max_parallel)
        try:
            while (pending and failure is None and not self.stopping.is_set()) or running:
                if failure is None and not self.stopping.is_set():
                    self._start_ready(pool, pending, done, running)
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
                    except Stopped:
                        interrupted.append(step.index)
                        continue
                    done.append(step.index)
                    yield result
        except BaseException:  # interrupted (Dagster run termination, Ctrl-C) or the consumer closed us
            self.stop()
            pool.shutdown(wait=True)  # running steps give up at their next wait
            log.warning("%s", DeploymentStopped(done, sorted({*interrupted, *(s.index for s in running.values())}),
                                                sorted(pending)))
            raise
        finally:
            pool.shutdown(wait=True)
            self.client.should_stop = _never
        if failure is not None:
            raise failure
        if self.stopping.is_set():
            raise DeploymentStopped(done, sorted(interrupted), sorted(pending))

    def _start_ready(self, pool: ThreadPoolExecutor, pending: dict[int, PlanStep], done: list[int],
                     running: dict[Future[StepResult], PlanStep]) -> None:
        for index, step in sorted(pending.items()):
            if step.table in self.blocked:
                del pending[index]
                done.append(index)  # nothing of it runs; its dependents are blocked too
                log.info("step %s (%s) skipped: %s", index, step.table, self.blocked[step.table or ""])
                continue
            if len(running) >= self.max_parallel:
                break
            if all(d in done for d in step.depends_on):
                running[pool.submit(self.execute, step)] = step
                del pending[index]

    def _should_stop(self) -> bool:
        return self.stopping.is_set() and not getattr(self._shielded, "on", False)

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """Waits inside finish even when stopping: a swap half done would leave the table unserved."""
        self._shielded.on = True
        try:
            yield
        finally:
            self._shielded.on = False

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
        log.info("step %s: %s %s (%s)", step.index, step.action.value, step.target, step.reason)
        result = StepResult(step=step)
        try:
            match step:
                case CreatePoolStep():
                    result.compute_pool = self.pool_id(step.pool)
                case SeedStep():
                    with self.shielded():  # a raw topic half seeded would never be seeded again: finish it
                        self.seed(step, result)
                case SkipStep():
                    self.observe(step, result)
                case DeployStep():
                    result.compute_pool = self.pool_id(step.pool)
                    self.deploy(step, result)
                case ResumeStep():
                    result.compute_pool = self.pool_id(step.pool)
                    self.resume(step, result)
                case StopStep():
                    self.halt(step, result)
                case ReplaceStep():
                    result.compute_pool = self.pool_id(step.pool)
                    self.replace(step, result)
                case BackfillStep():
                    result.compute_pool = self.pool_id(step.pool)
                    self.backfill(step, result)
                case RetireStep():
                    self.retire(step, result)
            return result
        except ConfluentError as error:
            raise DeploymentFailed(step, result.acting_on, str(error)) from error

    def observe(self, step: SkipStep, result: StepResult) -> None:
        for name in (step.ddl_statement, step.dml_statement):
            if name:
                result.acting_on = name
                try:
                    result.statements[name] = self.client.get_statement(name).phase
                except NotFound:
                    pass  # a table with no DDL statement of ours (created before, or outside)

    def deploy(self, step: DeployStep, result: StepResult) -> None:
        """DEPLOY / RECREATE: the table is dropped and created again, its DML starts from earliest."""
        if step.validate_first:
            self.validate(step, step.dml_sql, result)
        self.remove(step.dml_statement)
        if step.ddl_sql:
            self.run_to_completion(step.drop_statement, f"DROP TABLE IF EXISTS `{step.physical_table}`", result)
            result.statements[step.ddl_statement] = self.run_to_completion(
                step.ddl_statement, step.ddl_sql, result, labels=self.labels(step, StatementKind.DDL))
        if step.dml_sql and step.dml_statement:
            sql = step.dml_sql
            if step.start_at is not None:
                sql = with_source_options(sql, {name: window_options(step.start_at, None) for name in _sources(sql)})
            self.start_dml(step, step.dml_statement, sql, result)

    def resume(self, step: ResumeStep, result: StepResult) -> None:
        name = step.dml_statement or step.ddl_statement
        result.acting_on = name
        statement = self.client.resume_statement(name, timeout=self.timeout)
        result.statements[statement.name] = self.settle(statement.name).phase

    def halt(self, step: StopStep, result: StepResult) -> None:
        """Stop the table's DML, keeping its offsets (the statement's latest_offsets) for a resume."""
        name = step.dml_statement or step.ddl_statement
        result.acting_on = name
        result.statements[name] = self.client.stop_statement(name, timeout=self.timeout).phase

    def replace(self, step: ReplaceStep, result: StepResult) -> None:
        """REPLACE_DML / REPLACE_IN_PLACE: the table is kept; the statement is swapped, from its offsets.
        The new statement records the stretch the old code wrote (deploy/stretches.py)."""
        self.validate(step, step.dml_sql, result)
        result.acting_on = step.dml_statement
        old = self.existing(step.dml_statement)
        with self.shielded():  # from here the table is not served until the new statement (or the old) runs
            offsets = self.stop_for_offsets(step.dml_statement) if step.carry_offsets else {}
            result.carried_offsets = offsets
            for index, alter in enumerate(step.alter_sql):  # the DDL change, once nothing writes the table
                self.run_to_completion(f"{step.drop_statement}-alter-{index}", alter, result)
            self.remove(step.dml_statement)
            sql, result.stretches = self.with_history(step, old, offsets)
            try:
                self.start_dml(step, step.dml_statement, sql, result)
                if step.action == Action.REPLACE_IN_PLACE:
                    self.stays_healthy(step.dml_statement)
            except (ConfluentError, DeploymentFailed) as error:
                if old is None or step.action != Action.REPLACE_IN_PLACE:
                    raise
                self.restore(step, old, offsets)
                raise DeploymentFailed(step, step.dml_statement,
                                       f"the new statement failed ({_detail(error)}); the old statement was "
                                       f"restarted from the same offsets under {step.dml_statement}") from error

    def with_history(self, step: ReplaceStep, old: Statement | None,
                     offsets: dict[str, dict[int, int]]) -> tuple[str, int]:
        """The new DML from the carried offsets, recording the stretches earlier code wrote: a switch is
        recorded where the code changed and the sink keeps the old code's rows (offsets carried)."""
        if not offsets:
            return step.dml_sql, 0
        sql = with_source_options(step.dml_sql, {topic: specific_offsets_options(o) for topic, o in offsets.items()})
        earlier, old_sql = _written(old, step.kept_columns)
        old_version = (old.metadata.labels or {}).get(CODE_VERSION_LABEL) if old is not None and old.metadata else None
        if old_sql and old_version != step.code_version:
            earlier = [*earlier, Stretch(code_version=old_version, sql=old_sql, until=offsets)]
        return with_stretches(sql, earlier), len(earlier)

    def backfill(self, step: BackfillStep, result: StepResult) -> None:
        """A bounded statement over [start_at, end_at) of event time: created, waited on, deleted."""
        name = backfill_statement_name(self.environment, step.product, step.physical_table,
                                       step.start_at, step.end_at)
        serving = self.existing(step.dml_statement or "")
        version = (serving.metadata.labels or {}).get(CODE_VERSION_LABEL) if serving and serving.metadata else None
        if version != step.code_version:
            result.mixed_code = (f"the window was rebuilt with code version {step.code_version} while "
                                 f"{step.dml_statement} runs {version or 'an unknown version'}")
        result.acting_on = name
        self.remove(name)
        self.client.create_statement(name, windowed_dml(step.dml_sql, step.start_at, step.end_at),
                                     compute_pool_id=result.compute_pool,
                                     labels=self.labels(step, StatementKind.BACKFILL))
        result.finished[name] = self.client.wait_for_phase(name, {Phase.COMPLETED}, self.timeout).phase
        self.remove(name)

    def retire(self, step: RetireStep, result: StepResult) -> None:
        """PROMOTE / ROLLBACK / UNDEPLOY: statements removed, then (drop_table) the table they wrote."""
        for name in step.retire:
            result.acting_on = name
            self.remove(name)
            result.finished[name] = "DELETED"
        if step.drop_table and step.physical_table and step.drop_statement:
            self.run_to_completion(step.drop_statement, f"DROP TABLE IF EXISTS `{step.physical_table}`", result)

    def seed(self, step: SeedStep, result: StepResult) -> None:
        path = Path(step.seed_file) if self.seeds_root is None else self.seeds_root / step.seed_file
        for index, (kind, sql) in enumerate(seed_statements(path)):
            self.run_to_completion(statement_name("seed", None, kind, f"{step.topic}-{index}"), sql, result)

    # -- helpers -------------------------------------------------------------------------------

    def labels(self, step: TableStep, kind: StatementKind) -> dict[str, str]:
        return statement_labels(step.table, step.code_version, step.version, kind)

    def validate(self, step: TableStep, dml_sql: str | None, result: StepResult) -> None:
        """Compile the new DML on the target (EXPLAIN of each query it runs) before anything is destroyed."""
        if not dml_sql:
            return
        name = statement_name(self.environment, step.product, "ddl", f"validate-{step.physical_table}")
        for query in queries_of(dml_sql):
            result.acting_on = name
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

    def pool_id(self, pool: PoolRef) -> str | None:
        if pool.id:
            return pool.id
        display = pool.create or ""
        if display not in self.pools:
            existing = [p for p in self.client.list_compute_pools() if p.spec.display_name == display]
            created = existing[0] if existing else self.client.create_compute_pool(display, max_cfu=self.max_cfu)
            self.pools[display] = created.id
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

    def start_dml(self, step: TableStep, name: str, sql: str, result: StepResult) -> None:
        result.acting_on = name
        statement = self.client.create_statement(name, sql, compute_pool_id=result.compute_pool,
                                                 labels=self.labels(step, StatementKind.DML))
        result.statements[statement.name] = self.settle(statement.name).phase

    def run_to_completion(self, name: str, sql: str, result: StepResult, labels: dict[str, str] | None = None) -> str:
        """A bounded statement (DDL, DROP, ALTER, seed insert) run to COMPLETED; kept only when labelled."""
        result.acting_on = name
        return run_bounded(self.client, name, sql, timeout=self.timeout, compute_pool_id=result.compute_pool,
                           labels=labels, keep=labels is not None).phase

    def settle(self, name: str) -> Statement:
        return self.client.wait_for_phase(name, SETTLED, self.timeout)

    def stays_healthy(self, name: str) -> None:
        """A replacement must keep running a while (and so process new input) without failing."""
        deadline = time.monotonic() + self.settle_seconds
        while time.monotonic() < deadline:
            self.client.wait_for_phase(name, SETTLED, self.timeout)
            time.sleep(min(0.5, self.settle_seconds))
        self.client.wait_for_phase(name, SETTLED, self.timeout)

    def restore(self, step: ReplaceStep, old: Statement, offsets: dict[str, dict[int, int]]) -> None:
        """Put the replaced statement back, from the offsets the new one started at."""
        self.remove(step.dml_statement)
        earlier, sql = _written(old, step.kept_columns)
        if offsets:
            sql = with_source_options(sql, {topic: specific_offsets_options(o) for topic, o in offsets.items()})
        labels = old.metadata.labels if old.metadata else None
        self.client.create_statement(step.dml_statement, with_stretches(sql, earlier),
                                     compute_pool_id=old.spec.compute_pool_id, labels=labels)
        self.settle(step.dml_statement)


def _written(old: Statement | None, kept_columns: list[str]) -> tuple[list[Stretch], str]:
    """The stretches a statement records and its own DML; where the table gained columns since
    (`kept_columns`: those it had), each writes the columns it knew, so it still runs and recomputes."""
    if old is None:
        return [], ""
    earlier, sql = split(old.spec.statement or "")
    if not kept_columns:
        return earlier, sql
    narrowed = [s.model_copy(update={"sql": with_insert_columns(s.sql, kept_columns)}) for s in earlier]
    return narrowed, with_insert_columns(sql, kept_columns)


def _sources(sql: str) -> list[str]:
    return tables_read(parse_one_statement(sql).tree)


def _detail(error: BaseException) -> str:
    return getattr(error, "detail", None) or str(error)


def _numbers(indexes: list[int]) -> str:
    return ", ".join(map(str, indexes)) or "none"


def _never() -> bool:
    return False
