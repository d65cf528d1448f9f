"""The table graph: parents, children, ancestors, descendants, order. Deterministic throughout.

Every list is sorted or built from sorted inputs, so results are the same bytes
whatever PYTHONHASHSEED is.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import cached_property
from graphlib import CycleError, TopologicalSorter

from shift_left_dagster.project.errors import ProjectError
from shift_left_dagster.project.inventory import FlinkTable, Inventory
from shift_left_dagster.project.problems import BrokenTable


class ProjectGraph:
    """Parents are tables the project defines; other names read are external sources."""

    def __init__(self, inventory: Inventory):
        self.inventory = inventory
        self.tables: dict[str, FlinkTable] = inventory.tables
        self.broken: dict[str, BrokenTable] = {}  # left out of the graph (Inventory.broken), by name
        for broken in inventory.broken:
            self.broken.setdefault(broken.table, broken)
        self.parents: dict[str, list[str]] = {}
        self.external_sources: dict[str, list[str]] = {}
        for name, table in self.tables.items():
            reads = table.tables_read
            self.parents[name] = [r for r in reads if r in self.tables]
            self.external_sources[name] = [r for r in reads if r not in self.tables]
        children: dict[str, list[str]] = {name: [] for name in self.tables}
        for name in self.tables:  # tables are sorted, so every children list is sorted
            for parent in self.parents[name]:
                children[parent].append(name)
        self.children = children
        # what another layer derives from this graph once (project/lineage.py's ProjectLineage), by its type:
        # shared while the graph lives, freed with it
        self.derived: dict[type, object] = {}
        self.order  # noqa: B018 - fail fast on a cycle

    @cached_property
    def levels(self) -> list[list[str]]:
        """Tables grouped so each group only depends on earlier groups (sorted within)."""
        sorter = TopologicalSorter({name: self.parents[name] for name in self.tables})
        try:
            sorter.prepare()
        except CycleError as error:
            cycle = list(dict.fromkeys(error.args[1]))
            files = ", ".join(self._file_of(name) for name in cycle)
            raise ProjectError(
                [f"{self._file_of(cycle[0])}:1: cycle between tables {' -> '.join(error.args[1])} ({files})"]
            ) from None
        levels = []
        while sorter.is_active():
            ready = sorted(sorter.get_ready())
            levels.append(ready)
            sorter.done(*ready)
        return levels

    @cached_property
    def order(self) -> list[str]:
        """A topological order: parents before children."""
        return [name for level in self.levels for name in level]

    def ancestors(self, name: str) -> list[str]:
        """All tables `name` depends on, depth-first, parents before their children."""
        self.require(name)
        seen: set[str] = set()
        result: list[str] = []

        def visit(table: str) -> None:
            for parent in self.parents[table]:
                if parent not in seen:
                    seen.add(parent)
                    visit(parent)
                    result.append(parent)

        visit(name)
        return result

    def descendants(self, name: str) -> list[str]:
        """All tables that depend on `name`, breadth-first."""
        self.require(name)
        seen = {name}
        result: list[str] = []
        queue = deque([name])
        while queue:
            for child in self.children[queue.popleft()]:
                if child not in seen:
                    seen.add(child)
                    result.append(child)
                    queue.append(child)
        return result

    def sorted_subset(self, names: Iterable[str]) -> list[str]:
        """The given tables in topological order."""
        wanted = set(names)
        return [name for name in self.order if name in wanted]

    def require(self, name: str) -> None:
        """Refuse a table the project does not define, or leaves out because of a broken file."""
        if name in self.broken and name not in self.tables:
            raise ProjectError([f"table {name!r} is excluded: {self.broken[name].reason}"])
        if name not in self.tables:
            raise ProjectError([f"unknown table {name!r}: not defined under {self.inventory.pipelines}"])

    def _file_of(self, name: str) -> str:
        table = self.tables[name]
        return table.dml_path or table.ddl_path or table.folder
