"""Promotion and rollback of blue/green versions, as Dagster jobs (the same code as the CLI).

Promotion first verifies the candidates (their checks pass, their keys are right for where they start
reading: checks/candidates.py) on the checks' Spark (the local service's, through the Spark Connect
server it offers, when it is the target) and promotes nothing when a problem is found.
"""

from dagster import AssetKey, AssetMaterialization, Config, Failure, JobDefinition, OpExecutionContext, job, op

from shift_left_dagster.checks.candidates import verify_candidates
from shift_left_dagster.checks.readers import open_reader
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.resources import ConfluentFlinkResource, lease_busy_fails_the_run
from shift_left_dagster.deploy.deployment import Deployer, Deployment, DeploymentFailed, Unhealthy
from shift_left_dagster.deploy.steps import Action, RetireStep, TableStep


class PromoteConfig(Config):
    tables: list[str] = []  # empty: every candidate version
    verify: bool = True
    require_same_keys: bool = False  # also refuse keys only the serving version holds (history before the start)


class RollbackConfig(Config):
    tables: list[str] = []


def deployer_of(project: FlinkProject, confluent: ConfluentFlinkResource, context: OpExecutionContext) -> Deployer:
    return Deployer(client=confluent.get_client(), graph=project.graph, config=confluent.get_config(),
                    timeout=confluent.statement_timeout_seconds, **confluent.run_lease(context))


def run_plan(context: OpExecutionContext, deployment: Deployment) -> None:
    """The one executor runs the plan; each table a promotion or rollback touched gets a materialisation
    (what an undeploy or housekeeping step removed is logged: nothing was materialised)."""
    context.log.info(str(deployment))
    try:
        for result in deployment.run():
            if result.step.action in (Action.UNDEPLOY, Action.SKIP):
                context.log.info(f"{result.step.table}: {result.step.reason}")
            elif isinstance(result.step, TableStep | RetireStep):
                context.log_event(AssetMaterialization(
                    asset_key=AssetKey([result.step.table]), description=result.step.reason,
                    metadata={"action": result.step.action.value, "version": result.step.version}))
    except (DeploymentFailed, Unhealthy) as error:
        raise Failure(description=str(error)) from None


def promotion_jobs(project: FlinkProject) -> list[JobDefinition]:
    @op
    def promote_versions(context: OpExecutionContext, config: PromoteConfig, confluent: ConfluentFlinkResource,
                         checks: FlinkChecksResource, spark: SparkResource) -> None:
        """Candidates serve; the old versions' statements stop and are removed (their tables are kept)."""
        client = confluent.get_client()
        if config.verify:
            reader = open_reader(checks.sink_config(confluent), spark.get_session(
                confluent.get_local_data_dir() if confluent.is_local else None))
            try:
                report = verify_candidates(client, project.graph, confluent.get_config().env_name, reader,
                                           checks.settings(), config.require_same_keys)
            finally:
                reader.close()
            context.log.info(f"candidates {report.candidates}; keys {report.key_differences}")
            for note in report.notes:
                context.log.warning(note)
            if report.problems:
                raise Failure(description="not promoted: " + "; ".join(report.problems))
        with lease_busy_fails_the_run():
            deployment = deployer_of(project, confluent, context).promote(config.tables or None)
        run_plan(context, deployment)

    @op
    def rollback_versions(context: OpExecutionContext, config: RollbackConfig,
                          confluent: ConfluentFlinkResource) -> None:
        """Candidates are removed; the serving versions were never stopped."""
        with lease_busy_fails_the_run():
            deployment = deployer_of(project, confluent, context).rollback(config.tables or None)
        run_plan(context, deployment)

    @job(name="promote_flink_versions", description="Verify, then promote blue/green candidate versions")
    def promote_job() -> None:
        promote_versions()

    @job(name="rollback_flink_versions", description="Remove blue/green candidate versions")
    def rollback_job() -> None:
        rollback_versions()

    return [promote_job, rollback_job]
