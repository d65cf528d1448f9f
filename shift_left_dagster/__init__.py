"""shift-left-dagster: Confluent Cloud Flink SQL pipelines as Dagster assets.

The public surface, as dagster-dbt exports its own:

    from shift_left_dagster import ConfluentFlinkResource, FlinkProject, flink_assets

    @flink_assets(project=FlinkProject("flink_project/pipelines"))
    def my_tables(context, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

    defs = Definitions(assets=[my_tables, *build_broken_table_assets(project)])  # broken files, shown as such
"""

from shift_left_dagster.checks.models import CheckName, ChecksSettings
from shift_left_dagster.defs.assets import (
    build_broken_table_assets,
    build_flink_asset_specs,
    build_flink_assets,
    flink_assets,
)
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.component import FlinkProjectComponent
from shift_left_dagster.defs.definitions import build_flink_definitions, flink_resources
from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.run import FlinkRun
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.deploy.deployment import Deployer, Deployment

__all__ = [
    "CheckName",
    "ChecksSettings",
    "ConfluentFlinkResource",
    "Deployer",
    "Deployment",
    "FlinkChecksResource",
    "FlinkProject",
    "FlinkProjectComponent",
    "FlinkRun",
    "FlinkTranslator",
    "PartitionsConfig",
    "SparkResource",
    "build_broken_table_assets",
    "build_flink_asset_specs",
    "build_flink_assets",
    "build_flink_definitions",
    "flink_assets",
    "flink_resources",
]
