"""`defs` for workspace.yaml, `dagster ... -m shift_left_dagster.defs.definitions` and `dg`."""

from __future__ import annotations

from dagster import Definitions

from shift_left_dagster.defs.assets import FlinkProject, FlinkTranslator, default_pipelines_dir, flink_assets
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.promotion import promotion_jobs
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.sensors import git_sensor
from shift_left_dagster.project.inventory import paused_gc


def flink_resources(confluent: ConfluentFlinkResource | None = None) -> dict[str, object]:
    """The resources the table assets need: the Flink service, the checks' settings, the run's Spark."""
    return {"confluent": confluent or ConfluentFlinkResource(), "checks": FlinkChecksResource(),
            "spark": SparkResource()}


def build_flink_definitions(
    pipelines_dir: str | None = None,
    translator: FlinkTranslator | None = None,
    resource: ConfluentFlinkResource | None = None,
    partitions: PartitionsConfig | None = None,
) -> Definitions:
    """The plain Python builder: a project folder -> Definitions (the YAML component uses it too).

    Built with the cycle collector paused: thousands of specs are allocated at once and none form
    garbage cycles, so one collection afterwards replaces dozens of full rescans.
    """
    with paused_gc():
        return _build(pipelines_dir, translator, resource, partitions)


def _build(
    pipelines_dir: str | None,
    translator: FlinkTranslator | None,
    resource: ConfluentFlinkResource | None,
    partitions: PartitionsConfig | None,
) -> Definitions:
    project = FlinkProject(pipelines_dir or default_pipelines_dir())
    translator = translator or FlinkTranslator()
    return Definitions(
        assets=flink_assets(project, translator, partitions=partitions),
        sensors=[git_sensor(project, translator.get_asset_key)],
        jobs=promotion_jobs(project),
        resources=flink_resources(resource),
    )


defs = build_flink_definitions()
