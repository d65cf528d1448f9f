"""A Flink project as Dagster sees it: a pipelines folder, read once per process."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from shift_left_dagster.checks.data_tests import DataTest, discover
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory, resolve_pipelines_dir


class FlinkProject:
    """A pipelines folder (warm loads come from the content-hash cache); `seeds/` beside it, if any."""

    def __init__(self, pipelines_dir: str | Path | None = None, name: str | None = None):
        self.pipelines_dir = resolve_pipelines_dir(pipelines_dir or default_pipelines_dir())
        self.name = name or self.pipelines_dir.parent.name.replace("-", "_")

    @property
    def seeds_dir(self) -> Path:
        """Seed data for the raw topics (CREATE + INSERT ... VALUES files), used on the local service."""
        return self.pipelines_dir.parent / "seeds"

    @cached_property
    def graph(self) -> ProjectGraph:
        """Broken tables (and their dependants) are left out, into `graph.broken`: the code location
        still loads, and shows them as failing assets instead."""
        return ProjectGraph(build_inventory(self.pipelines_dir, strict=False))

    @cached_property
    def data_tests(self) -> dict[str, list[DataTest]]:
        """The tests teams declare next to tables (`<table folder>/checks/*.sql`), by table."""
        return discover(self.graph.inventory.root, self.graph.tables)


def default_pipelines_dir() -> Path:
    """The one default: $PIPELINES, else ./flink_project/pipelines, else the sample project shipped
    next to the package (a source checkout)."""
    if os.environ.get("PIPELINES"):
        return Path(os.environ["PIPELINES"])
    here = Path("flink_project/pipelines")
    if here.is_dir():
        return here.resolve()
    return Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
