"""What a deploying `@flink_assets` body needs at run time, kept apart from the asset factory so the
resource that reads it and the factory that writes it do not import each other."""

from dataclasses import dataclass

from dagster import AssetExecutionContext, AssetKey, AssetSpec

from shift_left_dagster.checks.data_tests import DataTest
from shift_left_dagster.checks.models import ChecksSettings
from shift_left_dagster.defs.project import FlinkProject


@dataclass(frozen=True)
class FlinkAssetsInfo:
    """What a deploying body needs at run time, found from its context (see `flink_assets_info`)."""

    project: FlinkProject
    keys: dict[str, AssetKey]
    checks: ChecksSettings
    data_tests: dict[str, list[DataTest]]
    externals: list[AssetSpec]  # the raw topics the tables read, as external assets


REGISTRY: dict[str, FlinkAssetsInfo] = {}  # op name -> info, filled when definitions are built


def flink_assets_info(context: AssetExecutionContext) -> FlinkAssetsInfo:
    """The project behind the running `@flink_assets` body."""
    name = context.op_def.name
    if name not in REGISTRY:
        raise RuntimeError(f"op {name} was not built by @flink_assets: no Flink project is known for it")
    return REGISTRY[name]
