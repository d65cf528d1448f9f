"""Promotion and rollback of blue/green versions, as Dagster jobs (the same code as the CLI).

Promotion first verifies the candidates (their checks pass, their keys match the
serving version's) and promotes nothing when a problem is found.
"""

from dagster import Config, Failure, JobDefinition, OpExecutionContext, job, op

from shift_left_dagster.checks.candidates import verify_candidates
from shift_left_dagster.checks.readers import open_reader
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.deploy.bluegreen import promote, rollback


class PromoteConfig(Config):
    tables: list[str] = []  # empty: every candidate version
    verify: bool = True
    require_same_keys: bool = True


class RollbackConfig(Config):
    tables: list[str] = []


def promotion_jobs(project) -> list[JobDefinition]:  # noqa: ANN001 - a FlinkProject
    @op
    def promote_versions(context: OpExecutionContext, config: PromoteConfig, confluent: ConfluentFlinkResource,
                         checks: FlinkChecksResource, spark: SparkResource) -> None:
        """Candidates serve; the old versions' statements stop and are removed (their tables are kept)."""
        client = confluent.get_client()
        if config.verify:
            reader = open_reader(checks.sink_config(confluent), spark.get_session())
            try:
                report = verify_candidates(client, project.graph, confluent.get_config().env_name, reader,
                                           checks.settings(), config.require_same_keys)
            finally:
                reader.close()
            context.log.info(f"candidates {report.candidates}; key differences {report.key_differences}")
            if report.problems:
                raise Failure(description="not promoted: " + "; ".join(report.problems))
        promoted = promote(client, config.tables or None)
        context.log.info(f"promoted: {promoted or 'nothing to promote'}")

    @op
    def rollback_versions(context: OpExecutionContext, config: RollbackConfig,
                          confluent: ConfluentFlinkResource) -> None:
        """Candidates are removed; the serving versions were never stopped."""
        removed = rollback(confluent.get_client(), config.tables or None)
        context.log.info(f"rolled back: {removed or 'nothing to roll back'}")

    @job(name="promote_flink_versions", description="Verify, then promote blue/green candidate versions")
    def promote_job() -> None:
        promote_versions()

    @job(name="rollback_flink_versions", description="Remove blue/green candidate versions")
    def rollback_job() -> None:
        rollback_versions()

    return [promote_job, rollback_job]
