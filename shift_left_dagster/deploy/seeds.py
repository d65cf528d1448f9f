"""Seed raw topics from `seeds/*.sql` (CREATE TABLE + INSERT ... VALUES), for local and test set-ups.

Raw topics come from connectors in real life; the local service has none, so a
project's seed files stand in. The plan adds a SEED step for each raw topic its
DMLs read that does not exist yet; the executor runs the file's statements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sqlglot import exp

from shift_left_dagster.project.parsing import parse_statements


def seed_statements(path: Path) -> list[tuple[Literal["ddl", "dml"], str]]:
    """(kind, sql) of each statement of a seed file: 'ddl' for its CREATE, 'dml' for the inserts."""
    return [("ddl" if isinstance(s.tree, exp.Create) else "dml", s.sql)
            for s in parse_statements(path.read_text(), str(path))]


def seed_files(seeds_dir: Path) -> dict[str, str]:
    """Raw topic -> the seed file (name, relative to `seeds_dir`) that creates it."""
    if not seeds_dir.is_dir():
        return {}
    found = {}
    for path in sorted(seeds_dir.glob("*.sql")):
        statements = parse_statements(path.read_text(), str(path))
        creates = [s for s in statements if isinstance(s.tree, exp.Create)]
        table = creates[0].tree.find(exp.Table) if creates else None
        found[table.name if table is not None else path.stem] = path.name
    return found
