"""Which files a table folder must hold: a missing file breaks its table, it never removes it.

shift_left's layout is `pipelines/<type>/<product>/<table>/sql-scripts/{ddl,dml}.<table>.sql`. The rule:

- every table has a DDL: it is what creates the table;
- a derived table (intermediates, facts, dimensions, views) has a DML: its rows come from it. Only a
  source or a seed may be DDL-only (a table over a raw topic, or one filled by hand);
- a ddl/dml file git tracks that the working tree lacks was deleted, whatever the table's type: a
  DDL-only source is one whose DML was never committed, not one whose DML was just removed;
- an empty file, or one that does not parse, breaks its table too (the analysis names it).

A table is removed only when its whole folder is gone; until then a missing file is a fault to fix,
so a plan never recreates the table from what is left, nor undeploys it.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from shift_left_dagster.project.problems import ProjectProblem

DERIVED_TYPES = frozenset({"intermediate", "fact", "dimension", "view"})
FIX = "restore it, or delete the table's whole folder to remove the table"


def missing_file(folder: str, table_type: str, ddl: str | None, dml: str | None,
                 deleted: set[str]) -> ProjectProblem | None:
    """The fault of a table folder whose files the rule above requires and that are not there."""
    scripts = f"{folder}/sql-scripts"
    gone = sorted(p for p in deleted if PurePosixPath(p).parent.as_posix() == scripts)
    if gone:
        return ProjectProblem(file=gone[0], message=f"deleted, but git still tracks it: {FIX}")
    name = PurePosixPath(folder).name
    if ddl is None:
        return ProjectProblem(file=f"{scripts}/ddl.{name}.sql",
                              message=f"missing: every table is created by its DDL; {FIX}")
    if dml is None and table_type in DERIVED_TYPES:
        return ProjectProblem(file=f"{scripts}/dml.{name}.sql",
                              message=f"missing: the rows of {table_type} table {name} come from its DML; {FIX}")
    return None
