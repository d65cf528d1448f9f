"""`FlinkProjectComponent`: the same builder as `build_flink_definitions`, declared in YAML for `dg`.

    # defs/flink/defs.yaml
    type: shift_left_dagster.defs.component.FlinkProjectComponent
    attributes:
      pipelines: ../../flink_project/pipelines   # relative to this file
      mode: auto                                  # auto | local | cloud
      config_file: null                           # shift_left config.yaml; secrets from SL_* env vars
      partitions: {granularity: daily, start: "2026-01-01"}   # optional: none without a start
"""

from __future__ import annotations

from dagster import Component, ComponentLoadContext, Definitions, Model, Resolvable

from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.resources import ConfluentFlinkResource


class FlinkProjectComponent(Component, Model, Resolvable):
    """A shift_left pipelines folder as Dagster assets deployed to Confluent Cloud for Flink (or locally)."""

    pipelines: str
    mode: str = "auto"
    config_file: str | None = None
    partitions: PartitionsConfig | None = None

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        from shift_left_dagster.defs.definitions import build_flink_definitions

        pipelines = (context.path / self.pipelines).resolve()
        resource = ConfluentFlinkResource(mode=self.mode, config_file=self.config_file)  # type: ignore[arg-type]
        return build_flink_definitions(str(pipelines), resource=resource, partitions=self.partitions)
