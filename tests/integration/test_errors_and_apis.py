"""Failed statements people can understand, and error bodies shaped like Confluent Cloud's."""

from __future__ import annotations

import pytest
import requests

from shift_left_dagster.confluent.errors import StatementFailed
from shift_left_dagster.local.api import statements_path
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET
from tests.integration.support import client_for, quiesce, run, unique

pytestmark = pytest.mark.service
AUTH = (LOCAL_API_KEY, LOCAL_API_SECRET)


def failed(client, sql: str) -> tuple[str, list]:  # type: ignore[no-untyped-def]
    name = unique("fails")
    client.create_statement(name, sql)
    with pytest.raises(StatementFailed):
        client.wait_for_phase(name, {"COMPLETED", "RUNNING"}, timeout=60)
    return client.get_statement(name).status.detail or "", client.statement_exceptions(name)


@pytest.fixture(scope="module")
def events(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("err-ddl"), "CREATE TABLE err_events (id INT, kind STRING, ts TIMESTAMP_LTZ(3))")
    return client


def test_bad_sql_fails_with_the_parser_message(events):  # type: ignore[no-untyped-def]
    detail, exceptions = failed(events, "SELECT id,\n  FROM err_events WHERE")
    assert detail.startswith("SQL parse failed. fails-") and (":2:" in detail or ":3:" in detail), detail
    assert exceptions and exceptions[0].message == detail


@pytest.mark.parametrize(("sql", "construct", "line"), [
    ("SELECT *\nFROM err_events\nMATCH_RECOGNIZE (PARTITION BY id ORDER BY ts MEASURES A.id AS x "
     "PATTERN (A) DEFINE A AS A.id > 0)", "MATCH_RECOGNIZE", 3),
    ("SELECT id, t.x\nFROM err_events,\n  LATERAL TABLE(split_words(kind)) AS t(x)", "LATERAL TABLE", 3),
    ("SELECT id,\n  NO_SUCH_FUNCTION(kind)\nFROM err_events", "function NO_SUCH_FUNCTION", 2),
])
def test_unsupported_construct_fails_naming_it_and_its_line(events, sql: str, construct: str, line: int):  # type: ignore[no-untyped-def]
    detail, exceptions = failed(events, sql)
    assert construct in detail and f"line {line}" in detail and "not supported" in detail, detail
    assert exceptions[0].message == detail


def test_missing_table_fails_like_flink(events):  # type: ignore[no-untyped-def]
    detail, _ = failed(events, "INSERT INTO nowhere SELECT id FROM err_events")
    assert detail == "Table (or view) 'nowhere' does not exist or you do not have permission to access it."


def test_statement_error_bodies(local_service):  # type: ignore[no-untyped-def]
    url = local_service.url + statements_path()
    missing = requests.get(f"{url}/no-such-statement", auth=AUTH)
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["detail"] == "Statement resource=no-such-statement does not exist"
    assert missing.json()["errors"][0]["status"] == "404" and missing.headers["X-Request-Id"]

    bad_name = requests.post(url, auth=AUTH, json={"name": "Bad_Name", "spec": {"statement": "SELECT 1"}})
    assert bad_name.status_code == 400 and "Bad_Name" in bad_name.json()["errors"][0]["detail"]
    too_long = requests.post(url, auth=AUTH, json={"name": "a" * 73, "spec": {"statement": "SELECT 1"}})
    assert too_long.status_code == 400

    name = unique("parked")
    created = requests.post(url, auth=AUTH, json={"name": name, "spec": {"statement": "SELECT 1", "stopped": True}})
    assert created.status_code == 201 and created.headers["Location"].endswith(f"/statements/{name}")
    assert created.json()["status"]["phase"] == "PENDING" and created.json()["metadata"]["resource_version"] == "1"
    duplicate = requests.post(url, auth=AUTH, json={"name": name, "spec": {"statement": "SELECT 2"}})
    assert duplicate.status_code == 409 and duplicate.json()["errors"][0]["code"] == "resource_already_exists"

    client_for(local_service.url).wait_for_phase(name, {"STOPPED"}, timeout=30)
    not_ready = requests.get(f"{url}/{name}/results", auth=AUTH)
    assert not_ready.status_code == 409
    assert not_ready.json()["errors"][0]["detail"] == f"Results for Statement={name} not ready"

    current = requests.get(f"{url}/{name}", auth=AUTH).json()
    stale = {**current, "metadata": {**current["metadata"], "resource_version": "0"}}
    assert requests.put(f"{url}/{name}", auth=AUTH, json=stale).status_code == 409
    assert requests.put(f"{url}/{name}", auth=AUTH, json=current).status_code == 202

    unauthorized = requests.get(url, auth=("local", "wrong"))
    assert unauthorized.status_code == 401 and unauthorized.headers["WWW-Authenticate"].startswith("Basic")
    assert unauthorized.json()["errors"][0]["status"] == "401"
    assert requests.delete(f"{url}/{name}", auth=AUTH).status_code == 202


def test_list_pages_filters_and_next_url(local_service):  # type: ignore[no-untyped-def]
    url = local_service.url + statements_path()
    label = unique("batch")
    for _ in range(3):
        body = {"name": unique("listed"), "metadata": {"labels": {"batch": label}},
                "spec": {"statement": "SELECT 1", "stopped": True}}
        assert requests.post(url, auth=AUTH, json=body).status_code == 201
    first = requests.get(url, auth=AUTH, params={"page_size": 2, "label_selector": f"batch={label}"}).json()
    assert len(first["data"]) == 2 and first["metadata"]["next"].startswith(url + "?")
    second = requests.get(first["metadata"]["next"], auth=AUTH).json()
    assert len(second["data"]) == 1 and not second["metadata"]["next"]
    listed = client_for(local_service.url).list_statements(label_selector={"batch": label})
    assert len(listed) == 3
    assert requests.get(url, auth=AUTH, params={"page_size": 101}).status_code == 400


def test_topics_and_subjects(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("topic-ddl"), "CREATE TABLE doomed (k STRING, PRIMARY KEY (k) NOT ENFORCED) "
                                     "DISTRIBUTED BY HASH(k) INTO 4 BUCKETS")
    topic = next(t for t in client.list_topics() if t.topic_name == "doomed")
    assert topic.partitions_count == 4
    base = local_service.url
    subjects = requests.get(f"{base}/subjects", auth=AUTH).json()
    assert {"doomed-key", "doomed-value"} <= set(subjects)
    early = requests.delete(f"{base}/subjects/doomed-key", auth=AUTH, params={"permanent": "true"})
    assert early.status_code == 404 and early.json()["error_code"] == 40405
    assert client.delete_subject("doomed-key") == [1]
    assert "doomed-key" not in requests.get(f"{base}/subjects", auth=AUTH).json()
    assert client.delete_topic("doomed") is True
    gone = requests.delete(f"{base}/kafka/v3/clusters/lkc-local/topics/doomed", auth=AUTH)
    assert gone.status_code == 404 and gone.json() == {
        "error_code": 40403, "message": "This server does not host this topic-partition."}
    assert client.delete_topic("doomed") is False


def test_compute_pools(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    assert "lfcp-local" in {p.id for p in client.list_compute_pools()}
    pool = client.create_compute_pool("local-extra", max_cfu=10, timeout=30)
    assert pool.status.phase == "PROVISIONED" and pool.id.startswith("lfcp-")
    assert client.get_compute_pool(pool.id).spec.display_name == "local-extra"


def test_our_metrics_client_reads_the_local_metrics_api(local_service) -> None:  # type: ignore[no-untyped-def]
    """`statements` and the health sensor read per-statement counts with ConfluentClient.statement_metrics:
    the local Metrics API's per-minute points must give it the current totals."""
    client = client_for(local_service.url)
    run(client, unique("mc-ddl"), "CREATE TABLE mc_src (id INT)")
    run(client, unique("mc-ddl"), "CREATE TABLE mc_sink (id INT)")
    run(client, unique("mc-seed"), "INSERT INTO mc_src VALUES (1), (2), (3)")
    name = unique("mc-copy")
    run(client, name, "INSERT INTO mc_sink SELECT id FROM mc_src WHERE id > 1", "RUNNING")
    quiesce(local_service.url)
    counts = client.statement_metrics()[name]
    assert (counts.records_in, counts.records_out, counts.pending_records) == (3, 2, 0)
