"""A GET of a statement on its way (PENDING, or RUNNING and bounded) answers when it moves: a poller sees a
DDL or an INSERT ... VALUES complete when it does, not one poll interval later (issue 30)."""

from __future__ import annotations

import time

import requests

from shift_left_dagster.local.api import statements_path
from shift_left_dagster.local.engine import MOVING_HOLD_SECONDS
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET
from tests.integration.support import quiesce, unique

AUTH = (LOCAL_API_KEY, LOCAL_API_SECRET)


def test_a_get_answers_when_a_statement_on_its_way_moves(local_service):  # type: ignore[no-untyped-def]
    """Each GET either answers a new phase or was held the whole hold: never the same phase of a statement
    on its way at once (which a poller would only learn of at its next poll)."""
    url = local_service.url + statements_path()
    quiesce(local_service.url)
    table = unique("held").replace("-", "_")
    for sql in (f"CREATE TABLE {table} (id BIGINT) DISTRIBUTED INTO 1 BUCKETS", f"INSERT INTO {table} VALUES (1), (2)"):
        name = unique("held")
        created = requests.post(url, auth=AUTH, json={"name": name, "spec": {"statement": sql}})
        assert created.status_code == 201
        phase, seen = created.json()["status"]["phase"], []
        while phase != "COMPLETED":
            assert len(seen) < 240, (sql, seen)
            started = time.perf_counter()
            answered = requests.get(f"{url}/{name}", auth=AUTH, timeout=30).json()["status"]["phase"]
            seen.append((answered, round(time.perf_counter() - started, 3)))
            assert answered != phase or seen[-1][1] >= MOVING_HOLD_SECONDS * 0.95, (sql, seen)
            phase = answered


def test_a_get_of_a_running_continuous_statement_answers_at_once(local_service):  # type: ignore[no-untyped-def]
    url = local_service.url + statements_path()
    table = unique("cont").replace("-", "_")
    requests.post(url, auth=AUTH, json={"name": unique("ddl"), "spec": {
        "statement": f"CREATE TABLE {table} (id BIGINT) DISTRIBUTED INTO 1 BUCKETS"}})
    name = unique("cont")
    requests.post(url, auth=AUTH, json={"name": name, "spec": {"statement": f"SELECT * FROM {table}"}})
    deadline = time.monotonic() + 120
    while requests.get(f"{url}/{name}", auth=AUTH, timeout=30).json()["status"]["phase"] != "RUNNING":
        assert time.monotonic() < deadline
    started = time.perf_counter()
    assert requests.get(f"{url}/{name}", auth=AUTH, timeout=30).json()["status"]["phase"] == "RUNNING"
    assert time.perf_counter() - started < MOVING_HOLD_SECONDS  # never held: it moves on nobody's clock
    requests.delete(f"{url}/{name}", auth=AUTH)
