"""The deployment object every caller uses (CLI, Dagster assets, sensor runs, promotion jobs, tests).

A `Deployer` knows the project, the service and the environment; each of its
methods reads what is live once, makes one typed plan and returns a
`Deployment` holding it. `Deployment.run()` executes the plan with the one
executor, yields each step's result as it finishes, and fails unless every
statement it touched is healthy once it settled.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatch
from pathlib import Path

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.deploy.backfill import plan_backfill
from shift_left_dagster.deploy.bluegreen import commit_plan, promote_plan, rollback_plan
from shift_left_dagster.deploy.changes import detect_changes, repository_of
from shift_left_dagster.deploy.executor import DeploymentFailed, PlanExecutor, StepResult
from shift_left_dagster.deploy.housekeeping import housekeeping_plan
from shift_left_dagster.deploy.identity import project_identity
from shift_left_dagster.deploy.lease import DeploymentLease, Liveness, this_process
from shift_left_dagster.deploy.live import PROJECT_LABEL, LiveState, live_state
from shift_left_dagster.deploy.naming import lease_name
from shift_left_dagster.deploy.operate import resume_plan, stop_plan
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanOptions, PlanStep, build_plan, render_plan
from shift_left_dagster.deploy.reprocess import reprocess_plan
from shift_left_dagster.deploy.seeds import seed_files
from shift_left_dagster.deploy.undeploy import undeploy_plan
from shift_left_dagster.project.config import FlinkProjectConfig
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import analyse_file


class Unhealthy(RuntimeError):
    """Every step ran, but a statement the run touched is not healthy once it settled."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("statements not healthy after the deployment settled: " + "; ".join(problems))


@dataclass
class Deployment:
    """One plan, run once. Iterate `run()` for results as steps finish; `results` keeps them.

    The project's lease is held from planning until the run ends; a deployment that is never run
    frees it at the end of its `with` block, or when it is garbage collected (a script that only
    prints the plan), so no one waits for the lease to go stale."""

    plan: DeploymentPlan
    executor: PlanExecutor
    graph: ProjectGraph
    lease: DeploymentLease | None = None  # held from planning to the end of the run
    results: list[StepResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.lease is not None:
            weakref.finalize(self, _release_unrun, self.lease)

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    def __str__(self) -> str:
        return render_plan(self.plan)

    def run(self) -> Iterator[StepResult]:
        try:
            for result in self.executor.run(self.plan):
                self.results.append(result)
                yield result
            problems = self.executor.unhealthy(self.results)
        finally:
            self.release()
        if problems:
            raise Unhealthy(problems)

    def release(self) -> None:
        """Let the next deployment of the project plan (done by `run`; call it when not running)."""
        if self.lease is not None:
            self.lease.release()

    def wait(self) -> list[StepResult]:
        """Run to the end; the results of every step."""
        for _ in self.run():
            pass
        return self.results

    def changed_on_disk(self) -> list[str]:
        """Files of planned tables whose text changed since the project was loaded: the plan deploys the
        loaded SQL (the one its code versions hash), so a caller says so and asks for a reload."""
        changed = []
        root = self.graph.inventory.root
        for table in sorted({s.table for s in self.plan.changes if s.table and s.table in self.graph.tables}):
            info = self.graph.tables[table]
            for path, loaded in ((info.ddl_path, info.ddl_sql), (info.dml_path, info.dml_sql)):
                if not path:
                    continue
                try:
                    now = analyse_file(path, (root / path).read_text()).normalized_sql
                except (OSError, ValueError):
                    now = None
                if now != loaded:
                    changed.append(path)
        return changed

    def block_descendants(self, table: str, reason: str) -> list[str]:
        """Tables downstream of `table` whose steps have not started are skipped in this run."""
        planned = {s.table for s in self.plan.steps if s.table}
        skipped = [d for d in self.graph.descendants(table) if d in planned]
        self.executor.block(skipped, reason)
        return skipped


def _release_unrun(lease: DeploymentLease) -> None:
    """The lease of a deployment dropped without running (a no-op once it ran); never raises, as a
    finalizer must not (the service may be gone when the interpreter exits)."""
    try:
        lease.release()
    except Exception as error:  # noqa: BLE001 - said, then let the lease go stale
        logging.getLogger(__name__).warning("could not release the deployment lease %s: %s", lease.name, error)


@dataclass
class Deployer:
    """A project and a service: makes deployments (plans) and runs them through one executor."""

    client: ConfluentClient
    graph: ProjectGraph
    config: FlinkProjectConfig
    seeds_dir: Path | None = None  # local service: raw topics the project reads are seeded from here
    max_parallel: int = 4
    timeout: float = 600.0
    settle_seconds: float = 2.0
    exclusive: bool = True  # hold the project's deployment lease from planning to the end of the run
    holder: str = field(default_factory=this_process)  # dagster-run:<run_id> for a Dagster run
    lease_wait_seconds: float = 600.0
    lease_liveness: Liveness | None = None  # holder -> alive? (the Dagster resource asks its instance)

    def __post_init__(self) -> None:
        self.identity = project_identity(self.config, self.graph.inventory.root)
        self.client.labels[PROJECT_LABEL] = self.identity  # every statement we create says whose it is

    def live(self) -> LiveState:
        return live_state(self.client, project=self.identity)

    def lease(self) -> DeploymentLease:
        """The project's deployment lease on this environment (keyed by the project's identity)."""
        return DeploymentLease(self.client, lease_name(self.config.env_name, self.identity), self.holder,
                               wait_seconds=self.lease_wait_seconds, liveness=self.lease_liveness)

    def options(self, live: LiveState, **flags: object) -> PlanOptions:
        """Plan options for the environment as it runs now: its name, pool, serving versions, seeds."""
        seeds = seed_files(self.seeds_dir) if self.seeds_dir else {}
        return PlanOptions(environment=self.config.env_name, compute_pool_id=self.config.flink.compute_pool_id,
                           versions=live.serving_versions(),
                           reject_topics_prefixes=list(self.config.kafka.reject_topics_prefixes),
                           schema_context=self.config.app.schema_context,
                           seeds=seeds, **flags)  # type: ignore[arg-type]

    def deploy(self, targets: list[str], *, dml_only: bool = False, force_sources: bool = False,
               may_start_children: bool = False, start_at: datetime | None = None,
               force: bool = False, exclude: list[str] | None = None) -> Deployment:
        """Deploy `targets` and what they need; tables in `exclude` (names or globs) are never deployed (a
        plan that needs one is refused, naming it)."""
        excluded = [t for t in self.graph.tables if any(fnmatch(t, p) for p in exclude or [])]

        def make(live: LiveState) -> DeploymentPlan:
            options = self.options(live, dml_only=dml_only, force_sources=force_sources,
                                   may_start_children=may_start_children, start_at=start_at, force=force,
                                   exclude=excluded)
            return build_plan(self.graph, targets, live, options)

        return self._planned(make)

    def deploy_commit(self, since: str, until: str = "HEAD") -> Deployment:
        """What the commits (since, until] changed in the pipelines folder, blue/green."""
        repo, pipelines = repository_of(self.graph.inventory.pipelines)
        changes = detect_changes(repo, since, until, pipelines)
        return self._planned(lambda live: commit_plan(self.graph, changes, live, self.options(live)))

    def backfill(self, tables: list[str], start: datetime, end: datetime) -> Deployment:
        return self._planned(lambda live: plan_backfill(self.graph, tables, start, end, live, self.options(live)))

    def reprocess(self, tables: list[str], start: datetime) -> Deployment:
        """New versions of `tables` (and their deployed descendants) reading their sources from `start`,
        beside the serving ones: promote or roll them back afterwards."""
        return self._planned(lambda live: reprocess_plan(self.graph, tables, start, live, self.options(live)))

    def promote(self, tables: list[str] | None = None) -> Deployment:
        return self._planned(lambda live: promote_plan(self.graph, live, self.options(live), tables))

    def rollback(self, tables: list[str] | None = None) -> Deployment:
        return self._planned(lambda live: rollback_plan(self.graph, live, self.options(live), tables))

    def undeploy(self, tables: list[str], *, product: str | None = None, strict: bool = True) -> Deployment:
        """Remove tables (or a product's), children first; a table something else reads is refused
        (`strict`), or kept and named in the plan."""
        chosen = list(tables) + [t for t, info in self.graph.tables.items() if product and info.product == product]
        return self._planned(lambda live: undeploy_plan(self.graph, sorted(set(chosen)), live, self.options(live),
                                                        strict=strict))

    def stop(self, tables: list[str], *, candidate: bool = False) -> Deployment:
        """Stop the tables' running statements, keeping their offsets (`candidate`: their new versions')."""
        return self._planned(lambda live: stop_plan(self.graph, tables, live, self.options(live), candidate))

    def resume(self, tables: list[str], *, candidate: bool = False) -> Deployment:
        """Resume stopped tables from their offsets; refused for a table whose code changed (deploy it)."""
        return self._planned(lambda live: resume_plan(self.graph, tables, live, self.options(live), candidate))

    def housekeep(self) -> Deployment:
        """Remove terminal statements no plan needs and old versions' tables nothing reads."""
        return self._planned(lambda live: housekeeping_plan(self.graph, live, self.options(live)))

    def _deployment(self, plan: DeploymentPlan, lease: DeploymentLease | None = None) -> Deployment:
        executor = PlanExecutor(self.client, max_parallel=self.max_parallel, timeout=self.timeout,
                                settle_seconds=self.settle_seconds, seeds_root=self.seeds_dir)
        return Deployment(plan=plan, executor=executor, graph=self.graph, lease=lease)

    def _planned(self, make: Callable[[LiveState], DeploymentPlan]) -> Deployment:
        """Plan while holding the project's lease (released when the deployment has run, or fails to plan)."""
        lease = None
        if self.exclusive:
            lease = self.lease()
            lease.acquire()
        try:
            return self._deployment(make(self.live()), lease)
        except BaseException:
            if lease is not None:
                lease.release()
            raise


__all__ = ["Deployer", "Deployment", "DeploymentFailed", "PlanStep", "StepResult", "Unhealthy"]
