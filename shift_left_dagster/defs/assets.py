"""Flink tables as Dagster assets, the dagster-dbt way: specs from a translator, one subsettable
multi-asset whose body the user writes (`@flink_assets`), and a default body for the ready-made
definitions.

    @flink_assets(project=FlinkProject("flink_project/pipelines"))
    def my_flink_tables(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

(No `from __future__ import annotations` here: Dagster reads the body's annotations.)
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    Config,
    Failure,
    PartitionsDefinition,
    TimeWindowPartitionsDefinition,
    multi_asset,
)
from pydantic import Field

from shift_left_dagster.checks import ChecksSettings
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource, check_specs
from shift_left_dagster.defs.info import TABLE_METADATA, op_tags
from shift_left_dagster.defs.partitions import reaches_open_partition
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.tags import COMMIT_TAG, SINCE_TAG
from shift_left_dagster.defs.translator import FlinkTranslator, code_references
from shift_left_dagster.deploy.backfill import partial_history_loss
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable
from shift_left_dagster.project.problems import BrokenTable


@dataclass(frozen=True)
class FlinkAssetSpecs:
    """What a project becomes in Dagster: table specs, their checks, the raw topics they read."""

    specs: list[AssetSpec]
    check_specs: list[AssetCheckSpec]
    externals: list[AssetSpec]
    keys: dict[str, AssetKey]  # table name -> asset key


def build_flink_asset_specs(
    project: FlinkProject,
    translator: FlinkTranslator | None = None,
    *,
    select: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    checks: ChecksSettings | None = None,
) -> FlinkAssetSpecs:
    """Asset and check specs of the project's tables (`select`/`exclude`: table names or globs)."""
    translator = translator or FlinkTranslator()
    graph = project.graph
    names = [n for n in graph.tables if _chosen(n, select, exclude)]
    keys: dict[str, AssetKey] = {}
    owners: dict[AssetKey, str] = {}
    for name in names:
        key = translator.get_asset_key(graph.tables[name])
        if key in owners:
            raise ValueError(f"tables {owners[key]} and {name} map to the same asset key {key.to_user_string()}: "
                             "make FlinkTranslator.get_asset_key return distinct keys")
        owners[key] = name
        keys[name] = key
    specs = [_named(translator.get_asset_spec(graph.tables[n], graph), n) for n in names]
    settings = checks or ChecksSettings()
    tests = project.data_tests
    checks_list = [c for n in names for c in check_specs(keys[n], graph.tables[n], settings, tests.get(n, ()))]
    return FlinkAssetSpecs(specs=specs, check_specs=checks_list, externals=external_specs(graph, translator, names),
                           keys=keys)


def _named(spec: AssetSpec, table: str) -> AssetSpec:
    """A spec that says which table it is (a translator overriding get_metadata may have dropped it)."""
    return spec if spec.metadata.get(TABLE_METADATA) == table else spec.merge_attributes(
        metadata={TABLE_METADATA: table})


def external_specs(graph: ProjectGraph, translator: FlinkTranslator, tables: Sequence[str]) -> list[AssetSpec]:
    """The raw topics the tables read, as external assets."""
    names = sorted({e for n in tables for e in graph.external_sources[n]})
    return [translator.get_external_asset_spec(e) for e in names]


def flink_assets(
    *,
    project: FlinkProject,
    translator: FlinkTranslator | None = None,
    select: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    checks: ChecksSettings | None = None,
    partitions_def: PartitionsDefinition | None = None,
    name: str | None = None,
    pool: str | None = None,
) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """Decorate a body that deploys the selected tables: one subsettable multi-asset for the project.

    Deployments of one project are serialised through the Dagster concurrency `pool`
    (default `flink/<project>`), so two runs never plan against each other's half-done work.
    """
    built = build_flink_asset_specs(project, translator, select=select, exclude=exclude, checks=checks)
    return _multi_asset_of(built, project, checks, partitions_def, name, pool)


def _multi_asset_of(built: FlinkAssetSpecs, project: FlinkProject, checks: ChecksSettings | None,
                    partitions_def: PartitionsDefinition | None, name: str | None,
                    pool: str | None) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """`@flink_assets` over specs already built (the ready-made assets reuse their raw topics' specs)."""

    def decorator(body: Callable[..., Any]) -> AssetsDefinition:
        return multi_asset(
            name=name or body.__name__,
            specs=built.specs,
            check_specs=built.check_specs,
            can_subset=True,
            partitions_def=partitions_def,
            backfill_policy=BackfillPolicy.single_run() if partitions_def else None,
            pool=pool or f"flink/{project.name}",
            op_tags=op_tags(project, checks),
        )(body)

    return decorator


class DeployConfig(Config):
    """Run config of the ready-made body (the CLI flags of `shift-left-dagster deploy`)."""

    dml_only: bool = False
    force_sources: bool = False
    may_start_children: bool = Field(default=False, description="also deploy descendants not deployed yet")
    allow_partial_history: bool = Field(
        default=False, description="allow rebuilding a table from later than the partitions' first start")


def build_flink_assets(
    project: FlinkProject,
    translator: FlinkTranslator | None = None,
    *,
    partitions_def: TimeWindowPartitionsDefinition | None = None,
    checks: ChecksSettings | None = None,
    select: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    name: str | None = None,
    pool: str | None = None,
) -> list[AssetsDefinition | AssetSpec]:
    """The ready-made assets: `@flink_assets` with the default body, plus the raw topics as specs.

    The body says which kind of run it is, explicitly: a git-sensor run deploys its commit
    blue/green, a closed partition range is backfilled, anything else is an ordinary deployment
    (from the range start when the range reaches the open partition).
    """

    built = build_flink_asset_specs(project, translator, select=select, exclude=exclude, checks=checks)

    @_multi_asset_of(built, project, checks, partitions_def, name or f"flink_{project.name}", pool)
    def deploy_flink_tables(context: AssetExecutionContext, config: DeployConfig, confluent: ConfluentFlinkResource,
                            checks: FlinkChecksResource, spark: SparkResource):
        tags = context.run.tags
        if SINCE_TAG in tags:
            run = confluent.deploy_commit(context=context, since=tags[SINCE_TAG], until=tags.get(COMMIT_TAG, "HEAD"),
                                          checks=checks, spark=spark)
            yield from run.stream()
            return
        window = context.partition_time_window if partitions_def else None
        if window is not None and partitions_def is not None and not reaches_open_partition(partitions_def, window):
            yield from confluent.backfill(context=context, window=window, checks=checks, spark=spark).stream()
            return
        run = confluent.deploy(context=context, dml_only=config.dml_only, force_sources=config.force_sources,
                               may_start_children=config.may_start_children,
                               start_at=window.start if window else None, checks=checks, spark=spark)
        first = partitions_def.start if partitions_def else None
        lost = partial_history_loss(project.graph, run.plan, first) if first else []
        if lost and not config.allow_partial_history:
            run.deployment.release()
            raise Failure(description="refusing to drop history (set allow_partial_history to proceed): "
                          + "; ".join(lost))
        yield from run.stream()

    broken = build_broken_table_assets(project, translator, select=select, exclude=exclude,
                                       partitions_def=partitions_def, name=f"{name or f'flink_{project.name}'}_broken")
    return [deploy_flink_tables, *built.externals, *broken]


BROKEN_GROUP = "broken"
SQL_VALID_CHECK = "flink_sql_valid"


def build_broken_table_assets(
    project: FlinkProject,
    translator: FlinkTranslator | None = None,
    *,
    select: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    partitions_def: PartitionsDefinition | None = None,
    name: str | None = None,
) -> list[AssetsDefinition]:
    """The tables the project leaves out (a broken file, or reading a broken table) as failing assets, so a
    broken file shows in the UI where it is instead of failing the whole code location: group `broken`,
    the fault (`file:line: message`) in the description and metadata, and a blocking check
    `flink_sql_valid` that fails with it whenever it runs. Their own op: no healthy table's run includes
    them (no healthy table depends on one). Nothing broken: no assets. Add it beside `@flink_assets`."""
    translator = translator or FlinkTranslator()
    graph = project.graph
    chosen = [b for n, b in graph.broken.items() if _chosen(n, select, exclude)]
    if not chosen:
        return []
    logging.getLogger(__name__).warning(
        "Flink project %s: %d table(s) left out, shown in the %r group: %s", project.name, len(chosen),
        BROKEN_GROUP, "; ".join(str(p) for p in graph.inventory.problems))
    keys = {b.table: translator.get_asset_key(_stub(b)) for b in graph.broken.values()}
    keys.update({n: translator.get_asset_key(t) for n, t in graph.tables.items()})
    reasons = {keys[b.table]: b.reason for b in chosen}
    specs = [_broken_spec(b, keys, project) for b in chosen]
    checks = [AssetCheckSpec(SQL_VALID_CHECK, asset=keys[b.table], blocking=True,
                             description="the table's Flink SQL, and that of every table it reads, is sound")
              for b in chosen]

    @multi_asset(name=name or f"flink_{project.name}_broken", specs=specs, check_specs=checks, can_subset=True,
                 partitions_def=partitions_def,
                 backfill_policy=BackfillPolicy.single_run() if partitions_def else None)
    def broken_flink_tables(context: AssetExecutionContext):
        for check in context.selected_asset_check_keys:
            reason = reasons[check.asset_key]
            yield AssetCheckResult(asset_key=check.asset_key, check_name=check.name, passed=False,
                                   severity=AssetCheckSeverity.ERROR, description=reason, metadata={"error": reason})
        if context.selected_asset_keys:
            raise Failure(description="left out of the Flink project, fix the file first: "
                          + "; ".join(reasons[k] for k in sorted(context.selected_asset_keys)))

    return [broken_flink_tables]


def _stub(broken: BrokenTable) -> FlinkTable:
    """What the translator needs to name a broken table's asset (its files may not parse)."""
    source = broken.source
    return FlinkTable(name=broken.table, type=source.type, product=source.product, folder=source.folder,
                      ddl_path=source.ddl_path, dml_path=source.dml_path, code_version="")


def _broken_spec(broken: BrokenTable, keys: dict[str, AssetKey], project: FlinkProject) -> AssetSpec:
    return AssetSpec(
        key=keys[broken.table],
        deps=[keys[r] for r in broken.source.reads if r in keys],
        group_name=BROKEN_GROUP,
        kinds={"flink", "confluent"},
        tags={"flink/type": broken.source.type, "flink/broken": "true"},
        description=f"BROKEN: {broken.source.type} table {broken.table} is left out of plans and deployments: "
                    f"{broken.reason}",
        metadata={"flink/broken": broken.reason, "file": broken.file, "line": broken.line,
                  "excluded_because": ", ".join(broken.excluded_because) or "its own file",
                  **code_references((project.graph.inventory.root / broken.file, broken.line))},
        skippable=True,
    )


def _chosen(name: str, select: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    if select and not any(fnmatch(name, pattern) for pattern in select):
        return False
    return not (exclude and any(fnmatch(name, pattern) for pattern in exclude))
