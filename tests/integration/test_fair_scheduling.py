"""A DDL or a snapshot SELECT never waits behind continuous statements: with a queue of continuous
statements still to start, they overtake it (issue: a SELECT waited 120 s behind 240 statements)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from shift_left_dagster.local.engine import finishes_at_once
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from tests.integration.support import SNAPSHOT, client_for, run

QUEUED = 40


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("fair"), spark_factory=lambda: spark) as running:
        yield running


@pytest.mark.service
def test_ddl_and_snapshot_select_overtake_a_queue_of_continuous_statements(service: InProcessService) -> None:
    client = client_for(service.url)
    run(client, "src-ddl", "CREATE TABLE src (id INT, v STRING)")
    run(client, "src-rows", "INSERT INTO src VALUES (1, 'a'), (2, 'b')")
    for i in range(QUEUED):
        run(client, f"sink-ddl-{i}", f"CREATE TABLE sink_{i} (id INT, v STRING)")
    for i in range(QUEUED):  # queued: each starts a continuous job, one after the other
        client.create_statement(f"copy-{i}", f"INSERT INTO sink_{i} SELECT id, v FROM src")
    started = time.monotonic()
    client.create_statement("late-ddl", "CREATE TABLE late (id INT)")
    client.create_statement("late-select", "SELECT id, v FROM src", properties=SNAPSHOT)
    client.wait_for_phase("late-select", {"COMPLETED"}, timeout=120)
    latency = time.monotonic() - started
    assert client.get_statement("late-ddl").phase == "COMPLETED"
    still_pending = [s.name for s in client.list_statements() if s.name.startswith("copy-") and s.phase == "PENDING"]
    assert still_pending, f"the SELECT ({latency:.1f} s) waited for all {QUEUED} continuous starts"
    rows = sorted(tuple(r.row) for r in client.statement_results("late-select"))
    assert rows == [("1", "a"), ("2", "b")]  # the results API encodes values as text
    for i in range(QUEUED):
        client.wait_for_phase(f"copy-{i}", {"RUNNING"}, timeout=300)


@pytest.mark.parametrize(("sql", "properties", "at_once"), [
    ("CREATE TABLE t (a INT)", {}, True),
    ("CREATE TABLE t AS SELECT 1 AS a", {}, False),
    ("DROP TABLE t", {}, True),
    ("SHOW TABLES", {}, True),
    ("EXPLAIN SELECT 1", {}, True),
    ("SELECT * FROM t", {}, False),
    ("SELECT * FROM t", SNAPSHOT, True),
    ("SELECT * FROM INFORMATION_SCHEMA.`TABLES`", {}, True),
    ("INSERT INTO t VALUES (1)", {}, False),
])
def test_what_finishes_at_once(sql: str, properties: dict[str, str], at_once: bool) -> None:
    assert finishes_at_once(sql, properties) is at_once


@pytest.mark.service
def test_records_flow_down_a_chain_without_waiting_a_tick_per_hop(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A round that moved records starts the next one at once: rows inserted at the head of a chain of
    running statements reach its end in a few rounds, not one engine tick (here 60 s) per hop."""
    with InProcessService(tmp_path, spark_factory=lambda: spark, tick_seconds=60) as service:
        client = client_for(service.url)
        for table in ("a", "b", "c", "d"):
            run(client, f"{table}-ddl", f"CREATE TABLE {table} (id INT)")
        for source, sink in (("c", "d"), ("b", "c"), ("a", "b")):  # the engine runs the last hop first
            client.create_statement(f"{source}-to-{sink}", f"INSERT INTO {sink} SELECT id FROM {source}")
            client.wait_for_phase(f"{source}-to-{sink}", {"RUNNING"}, timeout=60)
        data = LocalData(service.data_dir, spark)  # read without waking the engine (a statement would)
        started = time.monotonic()
        run(client, "rows", "INSERT INTO a VALUES (1), (2), (3)")
        rows: list[int] = []
        while time.monotonic() - started < 30 and len(rows) < 3:
            time.sleep(0.2)
            rows = sorted(r["id"] for r in data.current_rows(data.table("d")).collect())
        assert rows == [1, 2, 3], f"after {time.monotonic() - started:.1f} s"
