"""Undeploy, housekeeping and reprocessing as Dagster jobs (the same plans as `shift-left-dagster
undeploy|housekeep|reprocess`).

The git sensor asks for `undeploy_flink_tables` when a commit only removes tables: their
statements and tables go, unless something still reads them (kept, and named in the plan).
"""

from datetime import UTC, datetime

from dagster import Config, Failure, JobDefinition, OpExecutionContext, job, op

from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.promotion import deployer_of, run_plan
from shift_left_dagster.defs.resources import ConfluentFlinkResource, lease_busy_fails_the_run
from shift_left_dagster.deploy.deployment import Deployment
from shift_left_dagster.deploy.plan import PlanError
from shift_left_dagster.deploy.reprocess import history_not_reprocessed

UNDEPLOY_JOB = "undeploy_flink_tables"
HOUSEKEEP_JOB = "housekeep_flink_project"
REPROCESS_JOB = "reprocess_flink_tables"


class UndeployConfig(Config):
    tables: list[str] = []  # names, also of tables already removed from git
    product: str | None = None  # every table of this product
    keep_read: bool = False  # a table something still reads: kept and named (True), or the run fails (False)
    dry_run: bool = False


class HousekeepConfig(Config):
    dry_run: bool = False


class ReprocessConfig(Config):
    tables: list[str]
    start: str  # ISO date or time, UTC when no offset is given: every source is read from here
    allow_partial_history: bool = False  # consent: the new versions will not hold history before `start`


def maintenance_jobs(project: FlinkProject) -> list[JobDefinition]:
    @op
    def undeploy_tables(context: OpExecutionContext, config: UndeployConfig, confluent: ConfluentFlinkResource) -> None:
        """Statements removed, then tables, children first."""
        with lease_busy_fails_the_run():
            deployment = deployer_of(project, confluent, context).undeploy(config.tables, product=config.product,
                                                                         strict=not config.keep_read)
        _finish(context, deployment, config.dry_run)

    @op
    def housekeep(context: OpExecutionContext, config: HousekeepConfig, confluent: ConfluentFlinkResource) -> None:
        """Terminal statements no plan needs, and old versions' tables nothing reads, removed."""
        with lease_busy_fails_the_run():
            deployment = deployer_of(project, confluent, context).housekeep()
        _finish(context, deployment, config.dry_run)

    @op
    def reprocess_tables(context: OpExecutionContext, config: ReprocessConfig,
                         confluent: ConfluentFlinkResource) -> None:
        """New versions of the tables (and their deployed descendants) reading from `start`, beside the
        serving ones; promote or roll them back with the promotion jobs."""
        start = datetime.fromisoformat(config.start)
        start = start if start.tzinfo else start.replace(tzinfo=UTC)
        with lease_busy_fails_the_run():
            try:
                deployment = deployer_of(project, confluent, context).reprocess(config.tables, start)
            except PlanError as error:
                raise Failure(description=str(error)) from None
        lost = history_not_reprocessed(deployment.plan)
        if not config.allow_partial_history:
            deployment.release()
            raise Failure(description="nothing ran: set allow_partial_history to accept that "
                          + "; ".join(lost), metadata={"plan": str(deployment)})
        context.log.info("\n".join(lost))
        run_plan(context, deployment)

    @job(name=REPROCESS_JOB, description="Reprocess history from a time into new versions beside the serving ones")
    def reprocess_job() -> None:
        reprocess_tables()

    @job(name=UNDEPLOY_JOB, description="Undeploy tables (also ones removed from git), children first")
    def undeploy_job() -> None:
        undeploy_tables()

    @job(name=HOUSEKEEP_JOB, description="Remove terminal statements and unused old-version tables")
    def housekeep_job() -> None:
        housekeep()

    return [undeploy_job, housekeep_job, reprocess_job]


def _finish(context: OpExecutionContext, deployment: Deployment, dry_run: bool) -> None:
    if dry_run:
        deployment.release()
        context.log.info(f"dry run, nothing changed:\n{deployment}")
        return
    run_plan(context, deployment)
