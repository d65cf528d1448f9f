"""Markdown views of a table for Dagster's open-source UI, which lists metadata but draws neither
`dagster/column_lineage` nor a table's neighbours: a column lineage table and the tables around it."""

from __future__ import annotations

from dagster import MarkdownMetadataValue, MetadataValue

from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.lineage import TableLineage


def lineage_markdown(traced: TableLineage) -> MarkdownMetadataValue | None:
    """One row per column: the parent columns it is computed from, or why it could not be traced."""
    if not traced.columns and not traced.unknown:
        return None
    rows = ["| column | from |", "|---|---|"]
    for column, parents in traced.columns.items():
        rows.append(f"| `{column}` | {', '.join(f'`{p.table}.{p.column}`' for p in parents) or 'constant'} |")
    rows += [f"| `{column}` | not traced: {why.replace('|', '/')} |" for column, why in traced.unknown.items()]
    return MetadataValue.md("\n".join(rows))


def neighbourhood_markdown(name: str, graph: ProjectGraph) -> MarkdownMetadataValue:
    """What the table reads (project tables and raw topics) and what reads it, one hop each way."""
    reads = [f"`{p}`" for p in graph.parents[name]] + [f"`{e}` (raw topic)" for e in graph.external_sources[name]]
    readers = [f"`{c}`" for c in graph.children[name]]
    return MetadataValue.md(f"{', '.join(reads) or 'nothing'} → **`{name}`** → {', '.join(readers) or 'nothing'}\n\n"
                            f"- reads: {', '.join(reads) or 'nothing'}\n- read by: {', '.join(readers) or 'nothing'}")
