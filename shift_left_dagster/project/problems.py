"""Broken tables and the tables left out because of them: one place decides what a project excludes.

A table is broken when its own files are (a parse error, a DML writing another table, a name two
folders define, a cycle). Every table that reads a broken table, directly or not, is excluded with
it, since it can neither plan nor run without it. Everything else loads, plans and deploys, so one
bad file costs its own lineage only, never the whole project.
"""

from __future__ import annotations

from collections import deque
from graphlib import CycleError, TopologicalSorter

from pydantic import BaseModel, Field


class ProjectProblem(BaseModel):
    """Something wrong in one file, where to fix it: `file:line: message`."""

    file: str  # relative to the project root, e.g. pipelines/facts/p1/fct_order/sql-scripts/dml.fct_order.sql
    line: int = 1
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class TableSource(BaseModel):
    """Where a table is defined and what it reads, as far as its files could be read."""

    name: str
    type: str
    product: str
    folder: str
    ddl_path: str | None = None
    dml_path: str | None = None
    reads: list[str] = Field(default_factory=list)  # every name read (tables and raw topics), sorted


class BrokenTable(ProjectProblem):
    """A table left out of plans, deployments and deployable assets; file:line: message is what to fix.

    `excluded_because` is empty when the table's own files are at fault; else it is the chain of tables
    from the one it reads to the broken one (`["int_b", "src_a"]`: reads int_b, which reads broken src_a).
    """

    table: str
    excluded_because: list[str] = Field(default_factory=list)
    source: TableSource

    @property
    def reason(self) -> str:
        """One line naming the fault, and for an excluded dependant, the broken table it needs."""
        if not self.excluded_because:
            return str(self)
        root = self.excluded_because[-1]
        through = f" through {' -> '.join(self.excluded_because[:-1])}" if len(self.excluded_because) > 1 else ""
        return f"depends on broken table {root}{through} ({self.file}:{self.line})"  # the fault: said once, by root


def exclude_broken(candidates: dict[str, TableSource], broken: list[BrokenTable]) -> list[BrokenTable]:
    """Every table to leave out: `broken` (tables whose files are at fault), the candidates caught in a
    cycle, and every candidate that depends on any of those. Sorted by table, then folder."""
    healthy = dict(candidates)
    found = list(broken) + _cycles(healthy)
    found += _dependants(healthy, found)
    return sorted(found, key=lambda b: (b.table, b.source.folder))


def _cycles(healthy: dict[str, TableSource]) -> list[BrokenTable]:
    """Take every table of a cycle out of `healthy` (one cycle at a time, deterministically)."""
    found: list[BrokenTable] = []
    while True:
        sorter = TopologicalSorter({n: [r for r in s.reads if r in healthy] for n, s in healthy.items()})
        try:
            sorter.prepare()
            return found
        except CycleError as error:
            cycle: list[str] = error.args[1]
            members = list(dict.fromkeys(cycle))
            files = ", ".join(_file_of(healthy[m]) for m in members)
            problem = ProjectProblem(file=_file_of(healthy[members[0]]),
                                     message=f"cycle between tables {' -> '.join(cycle)} ({files})")
            found += [BrokenTable(table=m, **problem.model_dump(), source=healthy.pop(m)) for m in members]


def _dependants(healthy: dict[str, TableSource], broken: list[BrokenTable]) -> list[BrokenTable]:
    """Breadth-first from the broken tables over readers: each dependant keeps the shortest chain."""
    first: dict[str, BrokenTable] = {}
    for table in broken:
        first.setdefault(table.table, table)
    readers: dict[str, list[str]] = {}
    for name in sorted(healthy):
        for parent in healthy[name].reads:
            readers.setdefault(parent, []).append(name)
    via: dict[str, str] = {}
    queue = deque(sorted(first))
    while queue:
        parent = queue.popleft()
        for reader in readers.get(parent, []):
            if reader not in via and reader not in first:
                via[reader] = parent
                queue.append(reader)
    found = []
    for name in sorted(via):
        chain = [via[name]]
        while chain[-1] in via:
            chain.append(via[chain[-1]])
        root = first[chain[-1]]
        found.append(BrokenTable(table=name, file=root.file, line=root.line, message=root.message,
                                 excluded_because=chain, source=healthy.pop(name)))
    return found


def _file_of(source: TableSource) -> str:
    return source.dml_path or source.ddl_path or source.folder
