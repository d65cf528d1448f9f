"""The ready-made definitions of a project folder, and the resources they use.

Building reads the whole project, so only a code location's module (`defs/definitions.py`) calls it at
import time; importing this module builds nothing.
"""

from __future__ import annotations

from dagster import Definitions, ExecutorDefinition, in_process_executor

from shift_left_dagster.checks import ChecksSettings
from shift_left_dagster.defs.assets import build_flink_assets
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.health import health_sensor
from shift_left_dagster.defs.maintenance import UNDEPLOY_JOB, maintenance_jobs
from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.promotion import promotion_jobs
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.sensors import git_sensor
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.project.inventory import paused_gc


def flink_resources(confluent: ConfluentFlinkResource | None = None,
                    checks: FlinkChecksResource | None = None) -> dict[str, object]:
    """The resources the ready-made assets use: the Flink service, where sinks are read, the run's Spark."""
    return {"confluent": confluent or ConfluentFlinkResource(), "checks": checks or FlinkChecksResource(),
            "spark": SparkResource()}


def build_flink_definitions(
    pipelines_dir: str | None = None,
    translator: FlinkTranslator | None = None,
    resource: ConfluentFlinkResource | None = None,
    partitions: PartitionsConfig | None = None,
    checks: ChecksSettings | None = None,
    select: list[str] | None = None,
    exclude: list[str] | None = None,
    op_name: str | None = None,
    pool: str | None = None,
    executor: ExecutorDefinition | None = in_process_executor,
) -> Definitions:
    """The plain Python builder: a project folder -> Definitions (the YAML component uses it too).

    Built with the cycle collector paused: thousands of specs are allocated at once and none form
    garbage cycles, so one collection afterwards replaces dozens of full rescans.

    Runs execute in process: a deployment is one step (the tables' statements run on the Flink service),
    so a step process of its own would only load the code location a second time (~2-10 s a run).
    Pass `executor=None` (Dagster's default, multiprocess) or another one when other assets share the
    code location and should run in parallel.
    """
    with paused_gc():
        project = FlinkProject(pipelines_dir)
        translator = translator or FlinkTranslator()
        partitions_def = partitions.definition() if partitions else None
        maintenance = maintenance_jobs(project)
        undeploy = next(j for j in maintenance if j.name == UNDEPLOY_JOB)
        return Definitions(
            assets=build_flink_assets(project, translator, partitions_def=partitions_def, checks=checks,
                                      select=select, exclude=exclude, name=op_name, pool=pool),
            sensors=[git_sensor(project, translator, undeploy_job=undeploy), health_sensor(project, translator)],
            jobs=[*promotion_jobs(project), *maintenance],
            resources=flink_resources(resource),
            executor=executor,
        )

