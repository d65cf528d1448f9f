"""Bounded load on the local service: 1000 statements created and listed with paging (each exactly once),
50 concurrent readers of results, a 1 MB statement text, names that are paths. The figures of a bigger run
come from bench/bench_service_load.py."""

from __future__ import annotations

import base64
import http.client
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from shift_left_dagster.confluent.client import ClientSettings, ConfluentClient
from shift_left_dagster.confluent.errors import BadRequest
from shift_left_dagster.local.api import statements_path
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET, local_defaults
from tests.integration.load import (
    CONFLUENT_MAX_SQL_BYTES,
    MB,
    create_stopped,
    list_run,
    read_results,
)
from tests.integration.support import SNAPSHOT, client_for, run, unique

pytestmark = pytest.mark.service
AUTH = (LOCAL_API_KEY, LOCAL_API_SECRET)


def paged_client(url: str, page_size: int) -> ConfluentClient:
    settings = ClientSettings.from_config(local_defaults(url)).model_copy(update={"page_size": page_size})
    return ConfluentClient(settings)


def test_1000_statements_are_created_and_listed_each_exactly_once(local_service) -> None:  # type: ignore[no-untyped-def]
    run_id = unique("load")
    names = [f"{run_id}-{i:04d}" for i in range(1000)]
    client = client_for(local_service.url)
    during: list[list[str]] = []
    done = threading.Event()

    def list_while_creating() -> None:  # keyset paging: no page repeats a statement while others are added
        lister = paged_client(local_service.url, 37)
        while not done.is_set():
            during.append(list_run(lister, run_id))

    lister = threading.Thread(target=list_while_creating)
    lister.start()
    try:
        timings = create_stopped(client, run_id, names, threads=8)
    finally:
        done.set()
        lister.join(60)
    assert timings.wall < 120, timings.describe("creates")
    for page_size in (100, 7):
        listed = list_run(paged_client(local_service.url, page_size), run_id)
        assert len(listed) == len(set(listed)) == 1000 and sorted(listed) == names
    assert during and all(len(seen) == len(set(seen)) and set(seen) <= set(names) for seen in during)
    for name in names:  # leave the shared service as small as it was
        client.delete_statement(name, wait=False)


def test_50_concurrent_readers_read_the_same_complete_results(local_service) -> None:  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    table = f"load_rows_{unique('t').rsplit('-', 1)[1]}"
    run(client, unique("load-ddl"), f"CREATE TABLE {table} (id INT, v STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("load-insert"), f"INSERT INTO {table} VALUES " +
        ", ".join(f"({i}, 'v{i}')" for i in range(2500)))
    name = unique("load-select")
    run(client, name, f"SELECT id, v FROM {table}", properties=SNAPSHOT)

    timings, results = read_results(client, name, readers=50)
    assert timings.wall < 120, timings.describe("readers")
    expected = sorted((str(i), f"v{i}") for i in range(2500))
    assert sorted(tuple(r.row) for r in results[0]) == expected  # type: ignore[misc]
    assert all([r.row for r in rows] == [r.row for r in results[0]] for rows in results)


def test_a_1_mb_statement_is_accepted_and_one_over_4_mb_refused_as_confluent_does(local_service) -> None:  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    padding = "x" * MB
    sql = f"SELECT 1 AS answer /* {padding} */"  # Confluent documents a 4 MB limit on the text
    name = unique("load-1mb")
    done = run(client, name, sql)
    assert done.phase == "COMPLETED" and done.spec.statement == sql
    assert [r.row for r in client.statement_results(name)] == [["1"]]

    too_big = f"SELECT 1 AS answer /* {'x' * CONFLUENT_MAX_SQL_BYTES} */"
    with pytest.raises(BadRequest, match="exceeds 4194304 bytes") as refused:
        client.create_statement(unique("load-5mb"), too_big)
    assert len(str(refused.value)) < 3000  # the detail does not echo the text
    assert requests.get(f"{local_service.url}/local/v1/health", timeout=5).json()["status"] == "ok"


@pytest.mark.parametrize("name", ["a/b", "..", "../escape", "a/../../b", "."])
def test_names_that_are_paths_are_refused_and_touch_nothing(local_service, name: str) -> None:  # type: ignore[no-untyped-def]
    data = Path(local_service.data_dir)
    before = (sorted(p.name for p in data.iterdir()), sorted(p.name for p in data.parent.iterdir()))
    url = local_service.url + statements_path()
    created = requests.post(url, json={"name": name, "spec": {"statement": "SELECT 1"}}, auth=AUTH, timeout=10)
    assert created.status_code == 400 and "is invalid" in created.json()["errors"][0]["detail"]
    for raw in (name, quote(name, safe="")):  # sent as is (http.client: no dot-segment normalising) and encoded
        for method in ("GET", "DELETE", "PUT"):
            status = _raw_status(local_service.port, method, f"{statements_path()}/{raw}")
            assert status in (400, 404, 405), (method, raw, status)
    with pytest.raises(ValueError, match="invalid statement name"):
        client_for(local_service.url).get_statement(name)
    assert name not in {s.name for s in client_for(local_service.url).list_statements()}
    assert (sorted(p.name for p in data.iterdir()), sorted(p.name for p in data.parent.iterdir())) == before


def _raw_status(port: int, method: str, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        token = base64.b64encode(f"{LOCAL_API_KEY}:{LOCAL_API_SECRET}".encode()).decode()
        connection.request(method, path, body=b'{"name": "x", "spec": {"statement": "x"}}',
                           headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"})
        return connection.getresponse().status
    finally:
        connection.close()
