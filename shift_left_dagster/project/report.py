"""Reports over the project graph: inventory JSON, table hierarchies, pipeline_definition.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shift_left_dagster.project.graph import ProjectGraph


def inventory_report(graph: ProjectGraph) -> dict[str, dict[str, Any]]:
    """The `inventory --json` object: one entry per table, keys sorted."""
    return {
        name: {
            "type": table.type,
            "product": table.product,
            "ddl": table.ddl_path,
            "dml": table.dml_path,
            "parents": graph.parents[name],
            "children": graph.children[name],
            "external_sources": graph.external_sources[name],
            "state_form": table.state_form.value if table.state_form else None,
            "primary_key": table.primary_key,
            "changelog_mode": table.ddl.changelog_mode if table.ddl else None,
        }
        for name, table in graph.tables.items()
    }


def broken_report(graph: ProjectGraph) -> list[dict[str, Any]]:
    """The tables the project leaves out, each with what to fix (`file:line: message`) and, for a
    dependant, the chain of tables to the broken one; sorted by table."""
    return [
        {
            "table": broken.table,
            "type": broken.source.type,
            "product": broken.source.product,
            "ddl": broken.source.ddl_path,
            "dml": broken.source.dml_path,
            "file": broken.file,
            "line": broken.line,
            "message": broken.message,
            "excluded_because": broken.excluded_because,
            "reason": broken.reason,
        }
        for broken in graph.inventory.broken
    ]


def _node(graph: ProjectGraph, name: str) -> dict[str, Any]:
    table = graph.tables[name]
    joins = table.dml.joins if table.dml else None
    return {
        "table_name": name,
        "product_name": table.product,
        "type": table.type,
        "dml_ref": table.dml_path,
        "ddl_ref": table.ddl_path,
        "path": table.folder,
        "complexity": {
            "number_of_regular_joins": joins.regular if joins else 0,
            "number_of_left_joins": joins.left if joins else 0,
            "number_of_right_joins": joins.right if joins else 0,
            "number_of_inner_joins": joins.inner if joins else 0,
            "number_of_outer_joins": joins.outer if joins else 0,
            "complexity_type": _complexity(joins.model_dump() if joins else {}),
            "state_form": (table.state_form.value.capitalize() if table.state_form else "Stateless"),
        },
    }


def _complexity(joins: dict[str, int]) -> str:
    count = sum(joins.values())
    return "Simple" if count <= 1 else "Medium" if count <= 3 else "Complex"


def hierarchy(graph: ProjectGraph, name: str, with_children: bool = False) -> dict[str, Any]:
    """shift_left's pipeline_definition shape: parents recursively, children one level deep.

    With `with_children`, children are expanded recursively too.
    """
    graph.require(name)

    def up(table: str) -> dict[str, Any]:
        node = _node(graph, table)
        node["parents"] = [up(parent) for parent in graph.parents[table]]
        node["children"] = [leaf(child) for child in graph.children[table]]
        return node

    def down(table: str) -> dict[str, Any]:
        node = _node(graph, table)
        node["parents"] = []
        node["children"] = [down(child) for child in graph.children[table]]
        return node

    def leaf(table: str) -> dict[str, Any]:
        return {**_node(graph, table), "parents": [], "children": []}

    root = up(name)
    if with_children:
        root["children"] = [down(child) for child in graph.children[name]]
    return root


def write_pipeline_definition(graph: ProjectGraph, name: str) -> Path:
    """Write <table folder>/pipeline_definition.json; same bytes on every run."""
    path = graph.inventory.root / graph.tables[name].folder / "pipeline_definition.json"
    path.write_text(json.dumps(hierarchy(graph, name), indent=3) + "\n")
    return path
