"""A deployment inside a Dagster step: its plan, and its events streamed as each table finishes.

As `DbtCliResource.cli(...).stream()`: the asset body yields from `.stream()`.
Every table the plan touches gets its materialisation (a `MaterializeResult`
when it is selected, a runtime `AssetMaterialization` when the plan had to
touch it outside the selection) and its checks; the run fails when a statement
it touched is not healthy once settled, or when a blocking check failed.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    Failure,
    MaterializeResult,
    MetadataValue,
)

from shift_left_dagster.checks.models import CheckName, SensorCheck
from shift_left_dagster.defs.checks import RunChecks
from shift_left_dagster.defs.step_log import step_done, steps_in_run_log
from shift_left_dagster.deploy.deployment import Deployment, DeploymentFailed, Unhealthy
from shift_left_dagster.deploy.executor import StepResult
from shift_left_dagster.deploy.plan import DeploymentPlan, render_plan
from shift_left_dagster.deploy.steps import Action, BackfillStep, RetireStep, TableStep

FlinkEvent = MaterializeResult | AssetCheckResult


class FlinkRun:
    """One deployment run in a Dagster step: `.plan`, `.stream()`, `.wait()`."""

    def __init__(self, context: AssetExecutionContext, deployment: Deployment, keys: Mapping[str, AssetKey],
                 checks: RunChecks | None):
        self.context, self.deployment, self.keys, self.checks = context, deployment, keys, checks
        by_key = {key: table for table, key in keys.items()}
        self.selected = {by_key[k] for k in context.selected_asset_keys if k in by_key}
        self.selected_checks = set(context.selected_asset_check_keys)
        self.reported: set[AssetCheckKey] = set()
        self.failed_blocking: list[str] = []
        self.blocked_by: dict[str, str] = {}  # table -> the upstream blocking check that skipped it

    @property
    def plan(self) -> DeploymentPlan:
        """The typed plan, computed against what is live before anything runs: `.steps` in order."""
        return self.deployment.plan

    def stream(self) -> Iterator[FlinkEvent]:
        """Run the plan; yield each selected table's result and checks as it finishes."""
        self.context.log.info(render_plan(self.plan))
        stale = self.deployment.changed_on_disk()
        if stale:
            self.context.log.warning(f"changed on disk since the definitions loaded: {', '.join(stale)}; this run "
                                     "deploys the loaded SQL (its code_version); reload the code location to deploy "
                                     "the new text")
        try:
            with steps_in_run_log(self.context.log):
                for result in self.deployment.run():
                    self.context.log.info(step_done(result))
                    yield from self._events(result)
            yield from self._remaining_checks()
        except (DeploymentFailed, Unhealthy) as error:
            raise Failure(description=str(error)) from None
        finally:
            if self.checks is not None:
                self.checks.close()
        if self.failed_blocking:
            raise Failure(description="blocking checks failed: " + "; ".join(self.failed_blocking))

    def wait(self) -> list[FlinkEvent]:
        """Run the plan to its end; every event `.stream()` would yield, at once."""
        return list(self.stream())

    def _remaining_checks(self) -> Iterator[FlinkEvent]:
        """Selected checks no step reported: a check-only run computes them now (as `shift-left-dagster
        check` does), those and no other; those of a table an upstream blocking check skipped say so, as
        not evaluated. The health sensor's own checks are its to evaluate, never a run's."""
        by_key = {key: table for table, key in self.keys.items()}
        sensors = {c.value for c in SensorCheck}
        pending: dict[str, list[AssetCheckKey]] = {}
        for check_key in sorted(self.selected_checks - self.reported, key=lambda k: k.to_user_string()):
            if check_key.asset_key in by_key and check_key.name not in sensors:
                pending.setdefault(by_key[check_key.asset_key], []).append(check_key)
        for table, check_keys in pending.items():
            if table in self.blocked_by or self.checks is None:
                why = self.blocked_by.get(table, "checks are disabled for these assets")
                for check_key in check_keys:
                    yield AssetCheckResult(asset_key=check_key.asset_key, check_name=check_key.name, passed=False,
                                           severity=AssetCheckSeverity.WARN,
                                           description=f"not evaluated: {why}", metadata={"evaluated": False})
                continue
            names = {k.name for k in check_keys}
            evaluated = self.checks.evaluate([self.deployment.graph.tables[table]],
                                             {table: self.deployment.plan.options.physical_names.get(table, table)},
                                             skip=[c for c in CheckName if c.value not in names])
            key = self.keys[table]
            yield from (c for c in evaluated.results if AssetCheckKey(key, c.check_name or "") in check_keys)
            if evaluated.failed_blocking:
                self.failed_blocking.append(f"{', '.join(k.name for k in evaluated.failed_blocking)} on {table}")

    def _not_evaluated(self, key: AssetKey, table: str, check_name: str, why: str) -> Iterator[FlinkEvent]:
        check = AssetCheckResult(asset_key=key, check_name=check_name, passed=False,
                                 severity=AssetCheckSeverity.WARN, description=f"not evaluated: {why}",
                                 metadata={"evaluated": False})
        check_key = AssetCheckKey(key, check_name)
        if table in self.selected and check_key in self.selected_checks:
            self.reported.add(check_key)
            yield check
        elif check_key in self.selected_checks or table not in self.selected:
            self.context.log_event(_evaluation(check, key))

    def _events(self, result: StepResult) -> Iterator[FlinkEvent]:
        step = result.step
        table = step.table
        if table is None or table not in self.keys:
            return
        key = self.keys[table]
        metadata = step_metadata(result)
        if table in self.selected:
            yield MaterializeResult(asset_key=key, metadata=metadata)
        elif step.action != Action.SKIP:
            # In a partitioned run, one per partition of the run's range: the table the plan deployed to serve
            # the selection holds those partitions, and Dagster's backfill dialog reads them (else it warns
            # "Upstream data missing" on its children's ranges).
            partitions = self.context.partition_keys if self.context.has_partition_key_range else [None]
            for partition in partitions:
                self.context.log_event(AssetMaterialization(
                    asset_key=key, metadata=metadata, partition=partition,
                    description=f"{step.action.value} outside the selection: {step.reason}"))
        else:
            return
        if self.checks is None or step.action in (Action.PROMOTE, Action.ROLLBACK, Action.UNDEPLOY):
            return
        # A window rebuilt with other code than the serving statement's mixes code versions that no offset
        # separates: reconciled cannot be exact then, and says so (a WARN that never blocks).
        skip = [CheckName.RECONCILED] if result.mixed_code else []
        evaluated = self.checks.evaluate([self.deployment.graph.tables[table]], {table: step.target}, skip=skip)
        for name in skip:
            yield from self._not_evaluated(key, table, name.value, result.mixed_code or "")
        for check in evaluated.results:
            check_key = AssetCheckKey(key, check.check_name or "")
            if table in self.selected and check_key in self.selected_checks:
                self.reported.add(check_key)
                yield check
            else:
                self.context.log_event(_evaluation(check, key))
        if evaluated.failed_blocking:
            failed = ", ".join(k.name for k in evaluated.failed_blocking)
            self.failed_blocking.append(f"{failed} on {table}")
            skipped = self.deployment.block_descendants(table, f"blocking check {failed} failed on {table}")
            for descendant in skipped:
                self.blocked_by.setdefault(descendant, f"upstream blocking check {failed} failed on {table}")
            self.context.log.warning(f"blocking check {failed} failed on {table}: not deploying "
                                     f"{', '.join(skipped) or 'anything downstream'} in this run")


def step_metadata(result: StepResult) -> dict[str, Any]:
    step = result.step
    physical = getattr(step, "physical_table", None)
    metadata: dict[str, Any] = {
        "action": step.action.value,
        "reason": step.reason,
        "statements": MetadataValue.json(result.statements),
        "finished": MetadataValue.json(result.finished) if result.finished else None,
        "compute_pool": result.compute_pool,
        "deployed_as": physical if physical != step.table else None,
        "version": step.version if isinstance(step, TableStep | RetireStep) and step.version > 1 else None,
        "window": f"[{step.start_at.isoformat()}, {step.end_at.isoformat()})" if isinstance(step, BackfillStep)
        else None,
        "code_stretches": result.stretches + 1 if result.stretches else None,
    }
    if result.carried_offsets:
        metadata["carried_offsets"] = MetadataValue.json(
            {topic: {str(p): o for p, o in parts.items()} for topic, parts in result.carried_offsets.items()})
    return {k: v for k, v in metadata.items() if v is not None}


def _evaluation(check: AssetCheckResult, key: AssetKey) -> AssetCheckEvaluation:
    return AssetCheckEvaluation(asset_key=key, check_name=check.check_name or "", passed=check.passed,
                                metadata=check.metadata, severity=check.severity, description=check.description,
                                blocking=None)
