"""Promotion and rollback of blue/green versions, as Dagster jobs (the same code as the CLI)."""


from dagster import Config, OpExecutionContext, job, op

from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.deploy.bluegreen import promote, rollback


class VersionsConfig(Config):
    tables: list[str] = []  # empty: every candidate version


@op
def promote_versions(context: OpExecutionContext, config: VersionsConfig, confluent: ConfluentFlinkResource) -> None:
    """Candidates serve; the old versions' statements stop and are removed (their tables are kept)."""
    promoted = promote(confluent.get_client(), config.tables or None)
    context.log.info(f"promoted: {promoted or 'nothing to promote'}")


@op
def rollback_versions(context: OpExecutionContext, config: VersionsConfig, confluent: ConfluentFlinkResource) -> None:
    """Candidates are removed; the serving versions were never stopped."""
    removed = rollback(confluent.get_client(), config.tables or None)
    context.log.info(f"rolled back: {removed or 'nothing to roll back'}")


@job(description="Promote blue/green candidate versions of Flink tables")
def promote_job() -> None:
    promote_versions()


@job(description="Roll back blue/green candidate versions of Flink tables")
def rollback_job() -> None:
    rollback_versions()
