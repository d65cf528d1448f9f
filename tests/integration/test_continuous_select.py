"""A SELECT is a continuous query unless it runs in snapshot mode ('sql.snapshot.mode' = 'now'):
it stays RUNNING and its results grow with the changelog of its result as its inputs change
(op 0 +I, 1 -U, 2 +U, 3 -D). A snapshot query, or one whose sources are all bounded, completes."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET
from tests.integration.support import SNAPSHOT, client_for, quiesce, run, unique

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def client(local_service) -> ConfluentClient:  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("cs-ddl"), "CREATE TABLE cs_orders (shop STRING, amount INT) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("cs-insert"), "INSERT INTO cs_orders VALUES ('a', 1), ('b', 2)")
    return client


def started(client: ConfluentClient, sql: str, properties: dict[str, str] | None = None) -> str:
    name = unique("cs-select")
    client.create_statement(name, sql, properties=properties)
    client.wait_for_phase(name, {"RUNNING", "COMPLETED"}, timeout=120)
    return name


def changes(client: ConfluentClient, name: str) -> list[tuple[int, list[Any]]]:
    return [(row.op, row.row) for row in client.statement_results(name)]


def test_a_select_stays_running_and_its_results_grow(local_service, client: ConfluentClient) -> None:
    name = started(client, "SELECT shop, amount FROM cs_orders WHERE amount < 100")
    statement = client.get_statement(name)
    traits = statement.status.traits
    assert statement.phase == "RUNNING" and traits is not None and traits.schema_ is not None
    assert traits.is_bounded is False
    assert [c.name for c in traits.schema_.columns] == ["shop", "amount"]
    quiesce(local_service.url)
    assert sorted(changes(client, name)) == [(0, ["a", "1"]), (0, ["b", "2"])]
    run(client, unique("cs-insert"), "INSERT INTO cs_orders VALUES ('c', 3), ('d', 500)")
    quiesce(local_service.url)
    assert sorted(changes(client, name)) == [(0, ["a", "1"]), (0, ["b", "2"]), (0, ["c", "3"])]
    assert client.get_statement(name).phase == "RUNNING"
    client.delete_statement(name)


def test_an_aggregate_retracts_and_updates(local_service, client: ConfluentClient) -> None:
    run(client, unique("cs-ddl"), "CREATE TABLE cs_sales (shop STRING, amount INT) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("cs-insert"), "INSERT INTO cs_sales VALUES ('a', 1), ('b', 2)")
    name = started(client, "SELECT shop, SUM(amount) AS total FROM cs_sales GROUP BY shop")
    quiesce(local_service.url)
    assert sorted(changes(client, name)) == [(0, ["a", "1"]), (0, ["b", "2"])]
    run(client, unique("cs-insert"), "INSERT INTO cs_sales VALUES ('a', 10), ('c', 5)")
    quiesce(local_service.url)
    later = changes(client, name)[2:]
    assert sorted(later) == [(0, ["c", "5"]), (1, ["a", "1"]), (2, ["a", "11"])]
    assert later.index((1, ["a", "1"])) < later.index((2, ["a", "11"]))  # -U before its +U
    traits = client.get_statement(name).status.traits
    assert traits is not None and traits.is_append_only is False and traits.upsert_columns == [0]
    client.delete_statement(name)


def test_results_page_while_running(local_service, client: ConfluentClient) -> None:
    run(client, unique("cs-ddl"), "CREATE TABLE cs_many (id INT) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("cs-insert"), "INSERT INTO cs_many VALUES " + ", ".join(f"({i})" for i in range(1500)))
    name = started(client, "SELECT id FROM cs_many")
    quiesce(local_service.url)
    url = f"{local_service.url}{client._statement_path(name)}/results"
    auth = (LOCAL_API_KEY, LOCAL_API_SECRET)
    seen: list[Any] = []
    page: dict[str, Any] = requests.get(url, auth=auth, timeout=60).json()
    while page["results"]["data"]:
        seen += page["results"]["data"]
        assert page["metadata"]["next"]  # a running query: more may come
        page = requests.get(page["metadata"]["next"], auth=auth, timeout=60).json()
    assert len(seen) == 1500
    waiting = page["metadata"]["next"]
    assert waiting
    run(client, unique("cs-insert"), "INSERT INTO cs_many VALUES (1500)")
    quiesce(local_service.url)
    assert requests.get(waiting, auth=auth, timeout=60).json()["results"]["data"] == [{"op": 0, "row": ["1500"]}]
    client.delete_statement(name)


def test_a_snapshot_query_completes(client: ConfluentClient) -> None:
    name = started(client, "SELECT shop, SUM(amount) FROM cs_orders GROUP BY shop", SNAPSHOT)
    traits = client.wait_for_phase(name, {"COMPLETED"}, timeout=60).status.traits
    assert traits is not None and traits.is_bounded is True
    assert all(op == 0 for op, _row in changes(client, name))
    client.delete_statement(name)


def test_a_select_over_bounded_sources_completes(client: ConfluentClient) -> None:
    name = started(client, "SELECT shop FROM cs_orders", {"sql.tables.scan.bounded.mode": "latest-offset"})
    client.wait_for_phase(name, {"COMPLETED"}, timeout=60)
    assert ("a",) in {tuple(row) for _op, row in changes(client, name)}
    assert client.get_statement(name).phase == "COMPLETED"
    client.delete_statement(name)
    constant = started(client, "SELECT 1")  # no source: nothing unbounded to wait for
    assert client.wait_for_phase(constant, {"COMPLETED"}, timeout=60).phase == "COMPLETED"
    client.delete_statement(constant)
