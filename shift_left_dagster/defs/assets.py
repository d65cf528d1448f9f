"""Flink tables as Dagster assets: a translator users subclass, one subsettable multi_asset per project.

As dagster-dbt does it: the project is read once (from the inventory cache),
each table becomes an AssetSpec through the translator, and one op deploys
exactly the selected tables, in the order the execution plan decides,
yielding a MaterializeResult per table as it finishes.

(No `from __future__ import annotations` here: Dagster reads the op's `context`
annotation at definition time.)
"""


import os
from functools import cached_property
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from pydantic import Field

from shift_left_dagster.checks import ChecksSettings
from shift_left_dagster.defs.checks import FlinkChecksResource, RunChecks, SparkResource, check_specs
from shift_left_dagster.defs.partitions import PartitionsConfig, reaches_open_partition
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.sensors import COMMIT_TAG, SINCE_TAG
from shift_left_dagster.deploy.backfill import partial_history_loss, run_backfill
from shift_left_dagster.deploy.bluegreen import current_versions, deploy_blue_green, plan_blue_green, plan_options
from shift_left_dagster.deploy.changes import detect_changes, repository_of
from shift_left_dagster.deploy.executor import PlanExecutor, StepResult, live_statements
from shift_left_dagster.deploy.plan import build_plan, render_plan
from shift_left_dagster.deploy.seeds import seed_raw_topics
from shift_left_dagster.deploy.target import connect
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable, build_inventory, resolve_pipelines_dir


class FlinkProject:
    """A pipelines folder, read once per process (warm loads come from the content-hash cache)."""

    def __init__(self, pipelines_dir: str | Path | None = None, name: str | None = None):
        self.pipelines_dir = resolve_pipelines_dir(pipelines_dir)
        self.name = name or self.pipelines_dir.parent.name.replace("-", "_")

    @property
    def seeds_dir(self) -> Path:
        """Seed data for the raw topics (INSERT ... VALUES files), used by the local service."""
        return self.pipelines_dir.parent / "seeds"

    @cached_property
    def graph(self) -> ProjectGraph:
        return ProjectGraph(build_inventory(self.pipelines_dir))


class FlinkTranslator:
    """Table -> AssetSpec. Subclass and override a method to change keys, groups, tags, metadata."""

    def get_asset_key(self, table_name: str) -> AssetKey:
        return AssetKey([table_name])

    def get_group_name(self, table: FlinkTable) -> str:
        return table.product or "flink"

    def get_tags(self, table: FlinkTable) -> dict[str, str]:
        tags = {"flink/type": table.type}
        if table.state_form:
            tags["flink/state_form"] = table.state_form.value
        return tags

    def get_metadata(self, table: FlinkTable, graph: ProjectGraph) -> dict[str, object]:
        metadata: dict[str, object] = {
            "ddl_path": table.ddl_path,
            "dml_path": table.dml_path,
            "primary_key": ", ".join(table.primary_key) or None,
            "changelog_mode": table.ddl.changelog_mode if table.ddl else None,
            "external_sources": ", ".join(graph.external_sources[table.name]) or None,
        }
        if table.ddl and table.ddl.columns:
            metadata["dagster/column_schema"] = _column_schema(table)
        return {k: v for k, v in metadata.items() if v is not None}

    def get_asset_spec(self, table: FlinkTable, graph: ProjectGraph) -> AssetSpec:
        deps = [self.get_asset_key(p) for p in graph.parents[table.name] + graph.external_sources[table.name]]
        return AssetSpec(
            key=self.get_asset_key(table.name),
            deps=deps,
            group_name=self.get_group_name(table),
            kinds={"flink", "confluent"},
            tags=self.get_tags(table),
            metadata=self.get_metadata(table, graph),
            code_version=table.code_version,
            description=f"{table.type} table {table.name} ({table.state_form.value if table.state_form else 'no dml'})",
            skippable=True,
        )

    def get_external_asset_spec(self, topic: str) -> AssetSpec:
        """A raw topic the project reads but does not define: observable, not materialisable here."""
        return AssetSpec(key=self.get_asset_key(topic), group_name="external", kinds={"kafka"},
                         description=f"raw topic {topic}, written outside this project")


def _column_schema(table: FlinkTable):
    from dagster import TableColumn, TableSchema

    return TableSchema(
        columns=[TableColumn(name=c.name, type=c.type or "computed", description=None) for c in table.ddl.columns]
    )


class DeployConfig(Config):
    """Run config of a deployment (the CLI flags of `shift-left-dagster deploy`)."""

    dml_only: bool = False
    force_sources: bool = False
    may_start_children: bool = False
    allow_partial_history: bool = Field(
        default=False, description="allow rebuilding a table from later than the partitions' first start"
    )


def flink_assets(
    project: FlinkProject,
    translator: FlinkTranslator | None = None,
    *,
    partitions: PartitionsConfig | None = None,
    checks_settings: ChecksSettings | None = None,
) -> list[AssetsDefinition | AssetSpec]:
    """The project's table assets (one subsettable multi_asset) plus its external sources as specs."""
    translator = translator or FlinkTranslator()
    graph = project.graph
    specs = [translator.get_asset_spec(table, graph) for table in graph.tables.values()]
    keys = {translator.get_asset_key(name): name for name in graph.tables}
    externals = sorted({e for sources in graph.external_sources.values() for e in sources})
    partitions_def = partitions.definition() if partitions else None
    checks = [c for name, table in graph.tables.items()
              for c in check_specs(translator.get_asset_key(name), table, checks_settings or ChecksSettings())]

    @multi_asset(
        name=f"flink_{project.name}",
        specs=specs,
        check_specs=checks,
        can_subset=True,
        partitions_def=partitions_def,
        backfill_policy=BackfillPolicy.single_run() if partitions_def else None,
    )
    def deploy_flink_tables(context: AssetExecutionContext, config: DeployConfig, confluent: ConfluentFlinkResource,
                            checks: FlinkChecksResource, spark: SparkResource):
        selected = sorted(keys[key] for key in context.selected_asset_keys)
        target = confluent.get_config()
        client = connect(target)
        if confluent.is_local and confluent.seed_local_raw_topics and project.seeds_dir.is_dir():
            scope = set(selected).union(*(graph.ancestors(t) for t in selected))
            raw = set().union(*(graph.external_sources[t] for t in scope))
            seeded = seed_raw_topics(client, project.seeds_dir, only=raw)
            if seeded:
                context.log.info(f"seeded raw topics on the local service: {', '.join(seeded)}")
        if SINCE_TAG in context.run.tags:  # a git sensor run: deploy the commit's changes blue/green
            yield from deploy_commit(context, project, graph, client, target, selected, translator)
            return
        window = context.partition_time_window if partitions_def else None
        if window is not None and not reaches_open_partition(partitions_def, window):
            for done in run_backfill(client, graph, selected, window.start, window.end, target.env_name,
                                     target.flink.compute_pool_id, confluent.statement_timeout_seconds):
                yield MaterializeResult(asset_key=translator.get_asset_key(done.table), metadata={
                    "action": "backfill", "statement": done.statement, "phase": done.phase,
                    "window": f"[{done.start.isoformat()}, {done.end.isoformat()})"})
            return
        live = live_statements(client)
        options = plan_options(target, live, dml_only=config.dml_only, force_sources=config.force_sources,
                               may_start_children=config.may_start_children,
                               start_at=window.start if window else None)
        plan = build_plan(graph, selected, live, options)
        context.log.info(render_plan(plan))
        lost = partial_history_loss(graph, plan, partitions_def.start) if partitions_def else []
        if lost and not config.allow_partial_history:
            raise Failure(description="refusing to drop history (set allow_partial_history to proceed): "
                          + "; ".join(lost))
        executor = PlanExecutor(client, graph, max_parallel=confluent.max_parallel,
                                timeout=confluent.statement_timeout_seconds)
        with RunChecks(client=client, env_name=target.env_name, checks=checks, confluent=confluent, spark=spark,
                       asset_key=translator.get_asset_key, selected=context.selected_asset_check_keys) as run_checks:
            for result in executor.run(plan):
                table = result.step.table
                if table not in selected:
                    if table:
                        context.log.info(f"{result.step.action.value} {table}: {result.step.reason}")
                    continue
                yield MaterializeResult(asset_key=translator.get_asset_key(table), metadata=step_metadata(result))
                evaluated = run_checks.evaluate([graph.tables[table]], options.physical_names)
                yield from evaluated.results
                if evaluated.failed_blocking:
                    failed = ", ".join(key.name for key in evaluated.failed_blocking)
                    skipped = executor.block_descendants(table, f"blocking check {failed} failed on {table}")
                    context.log.warning(f"blocking check {failed} failed on {table}: not deploying "
                                        f"{', '.join(skipped) or 'anything downstream'} in this run")

    return [deploy_flink_tables, *(translator.get_external_asset_spec(e) for e in externals)]


def deploy_commit(context, project, graph, client, target, selected, translator):  # noqa: ANN001, ANN201
    """Blue/green deployment of what the commits since the sensor's cursor changed."""
    repo, pipelines = repository_of(project.pipelines_dir)
    since, until = context.run.tags[SINCE_TAG], context.run.tags.get(COMMIT_TAG, "HEAD")
    changes = detect_changes(repo, since, until, pipelines)
    plan = plan_blue_green(graph, changes, current_versions(live_statements(client)))
    context.log.info("blue/green plan: " + plan.model_dump_json(exclude={"changes"}))
    for step in deploy_blue_green(client, graph, plan, target.env_name, target.flink.compute_pool_id):
        if step.table in selected:
            yield MaterializeResult(asset_key=translator.get_asset_key(step.table), metadata={
                "action": step.action, "deployed_as": step.physical, "reason": step.reason,
                "statements": MetadataValue.json(step.statements), "commit": until})
    if plan.added:  # new tables have no serving version: an ordinary plan deploys them
        live = live_statements(client)
        options = plan_options(target, live)
        for result in PlanExecutor(client, graph).run(build_plan(graph, plan.added, live, options)):
            if result.step.table in selected:
                yield MaterializeResult(asset_key=translator.get_asset_key(result.step.table),
                                        metadata={**step_metadata(result), "commit": until})
    if plan.removed:
        context.log.warning(f"tables removed from git are left deployed (undeploy is manual): {plan.removed}")


def step_metadata(result: StepResult) -> dict[str, object]:
    step = result.step
    metadata: dict[str, object] = {
        "action": step.action.value,
        "reason": step.reason,
        "statements": MetadataValue.json(result.statements),
        "compute_pool": result.compute_pool,
    }
    if result.carried_offsets:
        metadata["carried_offsets"] = MetadataValue.json(
            {topic: {str(p): o for p, o in parts.items()} for topic, parts in result.carried_offsets.items()}
        )
    return {k: v for k, v in metadata.items() if v is not None}


def default_pipelines_dir() -> Path:
    """$PIPELINES, else the sample project next to this package (a source checkout)."""
    return Path(os.environ.get("PIPELINES") or Path(__file__).resolve().parents[2] / "flink_project" / "pipelines")
