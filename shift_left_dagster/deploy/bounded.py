"""Run one bounded statement to its end: the one create-wait-delete loop (plan steps, unit tests)."""

from __future__ import annotations

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import Phase, Statement


def run_bounded(client: ConfluentClient, name: str, sql: str, *, timeout: float,
                compute_pool_id: str | None = None, labels: dict[str, str] | None = None,
                keep: bool = False) -> Statement:
    """A statement that completes (DDL, DROP, ALTER, INSERT ... VALUES, a bounded query) run to COMPLETED
    under `name`: a statement left under that name is removed first (a terminal one keeps its name for
    days), and this one is removed once done unless `keep`. A FAILED one raises StatementFailed and stays,
    for its error to be read."""
    client.delete_statement(name, timeout=timeout)
    client.create_statement(name, sql, compute_pool_id=compute_pool_id, labels=labels)
    final = client.wait_for_phase(name, {Phase.COMPLETED}, timeout)
    if not keep:
        client.delete_statement(name, timeout=timeout)
    return final
