"""`shift-left-dagster`: the project from a terminal, for shift_left users.

Imports stay light (no Dagster, no Spark) so project commands start fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from shift_left_dagster.project.inventory import ProjectError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PipelinesOption = Annotated[
    Optional[Path],
    typer.Option("--pipelines", "-p", help="pipelines folder (default: $PIPELINES, else ./flink_project/pipelines)"),
]


def _graph(pipelines: Path | None):
    from shift_left_dagster.project.graph import ProjectGraph
    from shift_left_dagster.project.inventory import build_inventory

    return ProjectGraph(build_inventory(pipelines))


@app.command()
def inventory(
    pipelines_dir: Annotated[Optional[Path], typer.Argument(help="pipelines folder")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the JSON object keyed by table")] = False,
) -> None:
    """Every table of the project: type, product, files, parents, children, state form."""
    from shift_left_dagster.project.report import inventory_report

    report = inventory_report(_graph(pipelines_dir))
    if as_json:
        typer.echo(json.dumps(report, indent=1))
        return
    for name, entry in report.items():
        parents = ", ".join(entry["parents"] + entry["external_sources"]) or "-"
        typer.echo(f"{name:40} {entry['type']:12} {entry['product'] or '-':12} {entry['state_form'] or '-':9} <- {parents}")
    typer.echo(f"{len(report)} tables")


@app.command()
def report(
    table: Annotated[str, typer.Argument(help="table name")],
    pipelines: PipelinesOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="json, yaml or tree")] = "tree",
    children: Annotated[bool, typer.Option("--children", help="expand children recursively")] = False,
    write: Annotated[bool, typer.Option("--write", help="also write the table's pipeline_definition.json")] = False,
) -> None:
    """The hierarchy of one table: its parents recursively, its children."""
    from shift_left_dagster.project.report import hierarchy, render, write_pipeline_definition

    graph = _graph(pipelines)
    typer.echo(render(hierarchy(graph, table, with_children=children), fmt))
    if write:
        typer.echo(f"wrote {write_pipeline_definition(graph, table)}", err=True)


def main() -> None:
    try:
        app()
    except ProjectError as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
