"""`FlinkProjectComponent`: the same builder as `build_flink_definitions`, declared in YAML for `dg`.

    # src/<package>/defs/flink/defs.yaml (`dg scaffold defs shift_left_dagster.FlinkProjectComponent flink`)
    type: shift_left_dagster.FlinkProjectComponent
    attributes:
      pipelines: "{{ context.project_root }}/flink_project/pipelines"   # or a path relative to this file
      mode: auto                                  # auto | local | cloud
      config_file: null                           # shift_left config.yaml; secrets from SL_* env vars
      select: ["*"]                               # table names or globs
      exclude: []
      checks: {enabled: [unique_primary_key, reconciled], blocking: [unique_primary_key]}
      partitions: {granularity: daily, start: "2026-01-01"}   # optional: none without a start
      op: {name: flink_sales, pool: flink/sales}
      translation:                                # per table, {{ table }} is the FlinkTable
        group_name: "flink_{{ table.product }}"
        owners: ["team:data"]
"""

from typing import Annotated, Literal

from dagster import (
    AssetSpec,
    Component,
    ComponentLoadContext,
    Definitions,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_with,
)
from dagster.components.resolved.core_models import OpSpec
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver
from pydantic import Field

from shift_left_dagster.checks import ChecksSettings
from shift_left_dagster.checks.models import CheckName
from shift_left_dagster.defs.builder import build_flink_definitions
from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable


class _ComponentTranslator(FlinkTranslator):
    """The YAML `translation:` applied on top of the default spec of each table."""

    def __init__(self, translation: TranslationFn[FlinkTable] | None):
        self.translation = translation

    def get_asset_spec(self, table: FlinkTable, graph: ProjectGraph) -> AssetSpec:
        spec = super().get_asset_spec(table, graph)
        return self.translation(spec, table) if self.translation else spec


class ChecksModel(Model):
    """Which checks exist and which block (check names: unique_primary_key, reconciled, ...)."""

    enabled: list[str] | None = None
    blocking: list[str] | None = None

    def settings(self) -> ChecksSettings:
        settings = ChecksSettings()
        if self.enabled is not None:
            settings.enabled = [CheckName(name) for name in self.enabled]
        if self.blocking is not None:
            settings.blocking = [CheckName(name) for name in self.blocking]
        return settings


class ScaffoldParams(Model):
    """`dg scaffold defs shift_left_dagster.FlinkProjectComponent NAME [--pipelines PATH]`."""

    pipelines: str = "flink_project/pipelines"  # relative to the project root (where pyproject.toml is)


class FlinkProjectScaffolder(Scaffolder[ScaffoldParams]):
    """Writes a defs.yaml that loads as is: the pipelines path through `{{ context.project_root }}`, so the
    file works at any depth (`src/<package>/defs/<name>/` in a create-dagster project), options commented."""

    @classmethod
    def get_scaffold_params(cls) -> type[ScaffoldParams]:
        return ScaffoldParams

    def scaffold(self, request: ScaffoldRequest[ScaffoldParams]) -> None:
        pipelines = request.params.pipelines
        path = pipelines if pipelines.startswith(("/", "{{")) else "{{ context.project_root }}/" + pipelines
        request.target_path.mkdir(parents=True, exist_ok=True)
        (request.target_path / "defs.yaml").write_text(SCAFFOLD.format(type=request.type_name, pipelines=path))


SCAFFOLD = """\
type: {type}
attributes:
  pipelines: "{pipelines}"
  mode: auto                      # auto | local (the embedded service) | cloud (SL_FLINK_API_KEY, ...)
  select: ["*"]                   # table names or globs; exclude: [...]
  # checks: {{enabled: [unique_primary_key, reconciled, schema_matches_ddl], blocking: [unique_primary_key]}}
  # partitions: {{granularity: daily, start: "2026-01-01"}}
  # op: {{name: flink_tables, pool: flink/my_project}}
  # translation: {{group_name: "flink_{{{{ table.product }}}}"}}
"""


@scaffold_with(FlinkProjectScaffolder)
class FlinkProjectComponent(Component, Model, Resolvable):
    """A shift_left pipelines folder as Dagster assets deployed to Confluent Cloud for Flink (or locally)."""

    pipelines: str = Field(description="the pipelines folder: relative to this defs.yaml, or "
                                       "\"{{ context.project_root }}/...\"")
    mode: Literal["auto", "local", "cloud"] = Field(default="auto", description="as ConfluentFlinkResource.mode")
    config_file: str | None = Field(default=None, description="shift_left config.yaml (default: $CONFIG_FILE)")
    select: list[str] | None = Field(default=None, description="table names or globs (default: all)")
    exclude: list[str] | None = Field(default=None, description="table names or globs left out")
    checks: ChecksModel | None = Field(default=None, description="{enabled: [...], blocking: [...]}")
    partitions: PartitionsConfig | None = Field(default=None, description="{granularity: daily, start: ...}")
    op: OpSpec | None = Field(default=None, description="{name: ..., pool: ...} of the deploying op")
    translation: Annotated[
        TranslationFn[FlinkTable] | None,
        TranslationFnResolver[FlinkTable](lambda table: {"table": table}),
    ] = Field(default=None, description="AssetSpec fields per table; {{ table }} is the FlinkTable")

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        pipelines = (context.path / self.pipelines).resolve()
        resource = ConfluentFlinkResource(mode=self.mode, config_file=self.config_file)
        return build_flink_definitions(
            str(pipelines), translator=_ComponentTranslator(self.translation), resource=resource,
            partitions=self.partitions, checks=self.checks.settings() if self.checks else None,
            select=self.select, exclude=self.exclude,
            op_name=self.op.name if self.op else None, pool=self.op.pool if self.op else None)
