"""Seed raw topics from `seeds/*.sql` (CREATE TABLE + INSERT ... VALUES), for local and test set-ups.

Raw topics come from connectors in real life; the local service has none, so
a project's seed files stand in. Seeding is idempotent: a raw table whose
topic exists already is left alone.
"""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import Phase
from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.project.parsing import parse_statements


def seed_raw_topics(
    client: ConfluentClient, seeds_dir: Path, only: set[str] | None = None, timeout: float = 300.0
) -> list[str]:
    """Run the seed file of every raw table (of `only`, when given) that does not exist yet."""
    existing = {topic.topic_name for topic in client.list_topics()}
    seeded = []
    for path in sorted(seeds_dir.glob("*.sql")):
        statements = parse_statements(path.read_text(), str(path))
        creates = [s for s in statements if isinstance(s.tree, exp.Create)]
        table = creates[0].tree.find(exp.Table).name if creates else path.stem
        if table in existing or (only is not None and table not in only):
            continue
        for index, statement in enumerate(statements):
            name = statement_name("seed", None, "ddl" if isinstance(statement.tree, exp.Create) else "dml",
                                  f"{table}-{index}")
            client.delete_statement(name, timeout=timeout)
            client.create_statement(name, statement.sql)
            client.wait_for_phase(name, {Phase.COMPLETED}, timeout)
            client.delete_statement(name, timeout=timeout)
        seeded.append(table)
    return seeded
