"""FlinkTable -> Dagster AssetSpec. Subclass `FlinkTranslator` and override a method (dagster-dbt style)."""

from __future__ import annotations

import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from dagster import (
    AssetDep,
    AssetKey,
    AssetSpec,
    AutomationCondition,
    CodeReferencesMetadataValue,
    LocalFileCodeReference,
    TableColumn,
    TableColumnDep,
    TableColumnLineage,
    TableSchema,
)

from shift_left_dagster.defs.pictures import lineage_markdown, neighbourhood_markdown
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable
from shift_left_dagster.project.lineage import project_lineage


class FlinkTranslator:
    """Every hook takes the `FlinkTable` (and the graph where relations matter)."""

    def get_asset_key(self, table: FlinkTable) -> AssetKey:
        """The table's asset key (default: its name); two tables mapped to one key is an error."""
        return AssetKey([table.name])

    def get_external_asset_key(self, topic: str) -> AssetKey:
        """A raw topic the project reads but does not define."""
        return AssetKey([topic])

    def get_group_name(self, table: FlinkTable) -> str:
        """Default: the table's product folder (p1, c360, ...), else `flink`."""
        return table.product or "flink"

    def get_owners(self, table: FlinkTable) -> list[str]:
        """Dagster owners (`team:data`, e-mails); default none."""
        return []

    def get_automation_condition(self, table: FlinkTable) -> AutomationCondition | None:
        """Default none: tables deploy when asked (or by the git sensor)."""
        return None

    def get_tags(self, table: FlinkTable) -> dict[str, str]:
        """`flink/type` and `flink/state_form`."""
        tags = {"flink/type": table.type}
        if table.state_form:
            tags["flink/state_form"] = table.state_form.value
        return tags

    def get_description(self, table: FlinkTable) -> str:
        """The table's type, name and state form with why."""
        form = table.state_form.value if table.state_form else "no DML"
        reasons = f": {', '.join(table.dml.state_reasons)}" if table.dml and table.dml.state_reasons else ""
        return f"{table.type} table {table.name} ({form}{reasons})"

    def get_metadata(self, table: FlinkTable, graph: ProjectGraph) -> dict[str, Any]:
        """Files, key, changelog mode, external sources, column schema and lineage, code references."""
        metadata: dict[str, Any] = {
            "flink/table": table.name,  # how a run finds the table an asset is (defs/info.py)
            "ddl_path": table.ddl_path,
            "dml_path": table.dml_path,
            "primary_key": ", ".join(table.primary_key) or None,
            "changelog_mode": table.ddl.changelog_mode if table.ddl else None,
            "external_sources": ", ".join(graph.external_sources[table.name]) or None,
        }
        if table.ddl and table.ddl.columns:
            metadata["dagster/column_schema"] = TableSchema(columns=[
                _table_column(c.name, c.type or "computed", c.comment) for c in table.ddl.columns])
        metadata["dagster/column_lineage"] = self.get_column_lineage(table, graph)
        traced = project_lineage(graph).all()[table.name]
        metadata["column_lineage_unknown"] = dict(traced.unknown) if traced.unknown else None  # why not traced
        metadata["column_lineage_table"] = lineage_markdown(traced)  # the OSS UI does not draw column lineage
        metadata["neighbourhood"] = neighbourhood_markdown(table.name, graph)
        root = str(graph.inventory.root)  # strings, not Paths: this runs for every table
        files = [os.path.join(root, path) for path in (table.ddl_path, table.dml_path) if path]
        if files:
            metadata.update(code_references(*((file, 1) for file in files)))
        return {k: v for k, v in metadata.items() if v is not None}

    def get_column_lineage(self, table: FlinkTable, graph: ProjectGraph) -> TableColumnLineage | None:
        """Each column's parent columns, from the DML and the parents' DDLs; deps use this translator's keys."""
        traced = project_lineage(graph).all()[table.name]  # all: traced once per graph, cached on disk
        if not traced.columns:
            return None
        keys: dict[str, AssetKey] = {}
        for name in {p.table for parents in traced.columns.values() for p in parents}:
            known = graph.tables.get(name)
            keys[name] = self.get_asset_key(known) if known else self.get_external_asset_key(name)
        return TableColumnLineage(deps_by_column={column: [_column_dep(keys[p.table], p.column) for p in parents]
                                                  for column, parents in traced.columns.items()})

    def get_asset_spec(self, table: FlinkTable, graph: ProjectGraph) -> AssetSpec:
        """The whole spec from the hooks above; override it to change anything at once."""
        deps = [_dep(self.get_asset_key(graph.tables[p])) for p in graph.parents[table.name]]
        deps += [_dep(self.get_external_asset_key(e)) for e in graph.external_sources[table.name]]
        return AssetSpec(
            key=self.get_asset_key(table),
            deps=deps,
            group_name=self.get_group_name(table),
            kinds={"flink", "confluent"},
            tags=self.get_tags(table),
            owners=self.get_owners(table),
            automation_condition=self.get_automation_condition(table),
            metadata=self.get_metadata(table, graph),
            code_version=table.code_version,
            description=self.get_description(table),
            skippable=True,
        )

    def get_external_asset_spec(self, topic: str) -> AssetSpec:
        """A raw topic: observable, not materialisable here."""
        return AssetSpec(key=self.get_external_asset_key(topic), group_name="external", kinds={"kafka"},
                         description=f"raw topic {topic}, written outside this project")


# Dagster's metadata values and asset deps are immutable: one object for each column, column dependency or
# dependency that many tables share, e.g. tenant_id STRING, instead of one per table (a third of the specs'
# metadata at 3000 tables).


@lru_cache(maxsize=1 << 16)
def _table_column(name: str, kind: str, description: str | None) -> TableColumn:
    return TableColumn(name=name, type=kind, description=description)


@lru_cache(maxsize=1 << 16)
def _dep(key: AssetKey) -> AssetDep:
    return AssetDep(key)


@lru_cache(maxsize=1 << 16)
def _column_dep(key: AssetKey, column: str) -> TableColumnDep:
    return TableColumnDep(asset_key=key, column_name=column)


CODE_REFERENCES = "dagster/code_references"  # the metadata key the UI links a definition's code from


def code_references(*places: tuple[Path | str, int]) -> dict[str, CodeReferencesMetadataValue]:
    """Metadata linking to SQL files' lines, e.g. the DDL and the DML (Dagster marks code references beta;
    the warning says nothing to users)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {CODE_REFERENCES: CodeReferencesMetadataValue(code_references=[
            LocalFileCodeReference(file_path=str(file), line_number=line) for file, line in places])}
