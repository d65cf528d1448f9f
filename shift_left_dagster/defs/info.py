"""What a deploying `@flink_assets` body needs at run time, read back from its own definition (as dagster-dbt
reads its manifest back from `context.assets_def`), kept apart from the asset factory so the resource that
reads it and the factory that writes it do not import each other."""

import functools
import json
from dataclasses import dataclass

from dagster import AssetExecutionContext, AssetKey

from shift_left_dagster.checks.data_tests import DataTest
from shift_left_dagster.checks.models import ChecksSettings
from shift_left_dagster.defs.project import FlinkProject


@dataclass(frozen=True)
class FlinkAssetsInfo:
    """What a deploying body needs at run time, read back from its own definition (`flink_assets_info`)."""

    project: FlinkProject
    keys: dict[str, AssetKey]  # every table of the decorator (selected in this run or not)
    checks: ChecksSettings
    data_tests: dict[str, list[DataTest]]

    @property
    def outside(self) -> list[str]:
        """Project tables this definition leaves out (its select/exclude): its runs never deploy them."""
        return sorted(set(self.project.graph.tables) - set(self.keys))


INFO_TAG = "shift_left_dagster/flink_assets"  # op tag: the project and checks a @flink_assets body deploys with
TABLE_METADATA = "flink/table"  # spec metadata: the table an asset is


def op_tags(project: FlinkProject, checks: ChecksSettings | None) -> dict[str, str]:
    """The op tag a `@flink_assets` definition carries: its project and checks."""
    info = {"pipelines": str(project.pipelines_dir), "name": project.name,
            "checks": (checks or ChecksSettings()).model_dump(mode="json")}
    return {INFO_TAG: json.dumps(info)}


def flink_assets_info(context: AssetExecutionContext) -> FlinkAssetsInfo:
    """The project behind the running `@flink_assets` body, read from its definition (as dagster-dbt reads
    its manifest back from `context.assets_def`): each definition knows its own tables, whatever else the
    process defines."""
    assets_def = context.assets_def
    raw = assets_def.op.tags.get(INFO_TAG)
    if raw is None:
        raise RuntimeError(f"op {assets_def.op.name} was not built by @flink_assets: no Flink project is known for it")
    info = json.loads(raw)
    project = _project(info["pipelines"], info["name"])
    keys = {spec.metadata[TABLE_METADATA]: spec.key for spec in assets_def.specs if TABLE_METADATA in spec.metadata}
    return FlinkAssetsInfo(project=project, keys=keys, checks=ChecksSettings.model_validate(info["checks"]),
                           data_tests={n: t for n, t in project.data_tests.items() if n in keys})


@functools.cache
def _project(pipelines: str, name: str) -> FlinkProject:
    """A project read once per process (runs of many definitions over one folder share it)."""
    return FlinkProject(pipelines, name=name)
