"""shift-left-dagster: Confluent Cloud Flink SQL pipelines as Dagster assets.

The public surface, as dagster-dbt exports its own:

    from shift_left_dagster import ConfluentFlinkResource, FlinkProject, flink_assets

    @flink_assets(project=FlinkProject("flink_project/pipelines"))
    def my_tables(context, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

    defs = Definitions(assets=[my_tables, *build_broken_table_assets(project)])  # broken files, shown as such

Each name is imported on first use (PEP 562), so `import shift_left_dagster.project...` and the CLI never
pay for Dagster or Spark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shift_left_dagster.checks.models import CheckName, ChecksSettings
    from shift_left_dagster.defs.assets import (
        build_broken_table_assets,
        build_flink_asset_specs,
        build_flink_assets,
        flink_assets,
    )
    from shift_left_dagster.defs.builder import build_flink_definitions, flink_resources
    from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
    from shift_left_dagster.defs.component import FlinkProjectComponent
    from shift_left_dagster.defs.partitions import PartitionsConfig
    from shift_left_dagster.defs.project import FlinkProject
    from shift_left_dagster.defs.resources import ConfluentFlinkResource
    from shift_left_dagster.defs.run import FlinkRun
    from shift_left_dagster.defs.translator import FlinkTranslator
    from shift_left_dagster.deploy.deployment import Deployer, Deployment

_MODULE_OF = {
    "CheckName": "shift_left_dagster.checks.models",
    "ChecksSettings": "shift_left_dagster.checks.models",
    "ConfluentFlinkResource": "shift_left_dagster.defs.resources",
    "Deployer": "shift_left_dagster.deploy.deployment",
    "Deployment": "shift_left_dagster.deploy.deployment",
    "FlinkChecksResource": "shift_left_dagster.defs.checks",
    "FlinkProject": "shift_left_dagster.defs.project",
    "FlinkProjectComponent": "shift_left_dagster.defs.component",
    "FlinkRun": "shift_left_dagster.defs.run",
    "FlinkTranslator": "shift_left_dagster.defs.translator",
    "PartitionsConfig": "shift_left_dagster.defs.partitions",
    "SparkResource": "shift_left_dagster.defs.checks",
    "build_broken_table_assets": "shift_left_dagster.defs.assets",
    "build_flink_asset_specs": "shift_left_dagster.defs.assets",
    "build_flink_assets": "shift_left_dagster.defs.assets",
    "build_flink_definitions": "shift_left_dagster.defs.builder",
    "flink_assets": "shift_left_dagster.defs.assets",
    "flink_resources": "shift_left_dagster.defs.builder",
}

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


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use, and keep the name so the next use is a plain lookup."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
