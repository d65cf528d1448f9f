"""What a deploying `@flink_assets` body needs at run time, read back from its own definition (as dagster-dbt
reads its manifest back from `context.assets_def`), kept apart from the asset factory so the resource that
reads it and the factory that writes it do not import each other."""

import hashlib
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
    """The op tag a `@flink_assets` definition carries: its project (by path and content) and checks."""
    identity = _identity(project)
    _LOADED.setdefault(identity, project)
    info = {"pipelines": str(project.pipelines_dir), "name": project.name, "identity": identity,
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
    project = _LOADED.get(info["identity"]) or FlinkProject(info["pipelines"], name=info["name"])
    if _identity(project) != info["identity"]:
        raise RuntimeError(f"{info['pipelines']} changed since the definitions were loaded: reload the code location")
    keys = {spec.metadata[TABLE_METADATA]: spec.key for spec in assets_def.specs if TABLE_METADATA in spec.metadata}
    return FlinkAssetsInfo(project=project, keys=keys, checks=ChecksSettings.model_validate(info["checks"]),
                           data_tests={n: t for n, t in project.data_tests.items() if n in keys})


# The projects definitions were built from, by content: a run deploys the SQL its definitions loaded (the
# code versions Dagster shows), even when a file changed since. Keyed by content, not by op name, so two
# definitions can never see each other's project (two over the same content share one, rightly).
_LOADED: dict[str, FlinkProject] = {}


def _identity(project: FlinkProject) -> str:
    """The project's folder, name, every table's code version and every data test, hashed."""
    graph = project.graph
    tests = sorted(t.model_dump_json() for found in project.data_tests.values() for t in found)
    content = [str(project.pipelines_dir), project.name, sorted((t, i.code_version) for t, i in graph.tables.items()),
               sorted(graph.broken), tests]
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]
