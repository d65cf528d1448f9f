"""ConfluentClient against mocked HTTP (responses): paths, bodies, auth, paging, retries, errors,
secrets."""

from __future__ import annotations

import base64
import json
import logging
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from pydantic import SecretStr
from responses import matchers

from shift_left_dagster.confluent.client import (
    ApiEndpoint,
    ClientSettings,
    ConfluentClient,
    PollPolicy,
    RetryPolicy,
    bind_to_data_dir,
)
from shift_left_dagster.confluent.errors import (
    AuthError,
    BadRequest,
    ConfigError,
    Conflict,
    ConfluentError,
    ConnectionFailed,
    NotFound,
    ProvisioningFailed,
    RateLimited,
    ServerError,
    StatementFailed,
    TimeoutWaiting,
    WrongService,
)
from shift_left_dagster.confluent.models import Op, Phase
from shift_left_dagster.project.config import load_config, local_defaults

Mock = responses.RequestsMock
ORG = "7c2b2c1e-0000-4000-8000-000000000001"
ENV = "env-abc123"
FLINK = "https://flink.us-east-1.aws.confluent.cloud"
CLOUD = "https://api.confluent.cloud"
KAFKA = "https://pkc-12345.us-east-1.aws.confluent.cloud"
SR = "https://psrc-12345.us-east-1.aws.confluent.cloud"
STMTS = f"{FLINK}/sql/v1/organizations/{ORG}/environments/{ENV}/statements"
POOLS = f"{CLOUD}/fcpm/v2/compute-pools"
TOPICS = f"{KAFKA}/kafka/v3/clusters/lkc-1/topics"
PROPS = {"sql.current-catalog": "my_env", "sql.current-database": "my_cluster"}


def basic(key: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{key}:{secret}".encode()).decode()


FLINK_AUTH = {"Authorization": basic("FKEY", "fsecret")}
CLOUD_AUTH = {"Authorization": basic("CKEY", "csecret")}
KAFKA_AUTH = {"Authorization": basic("KKEY", "ksecret")}
SR_AUTH = {"Authorization": basic("SKEY", "ssecret")}


class FakeTime:
    """Clock and sleep in one: sleeping advances the clock, and every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def make_settings(**overrides: Any) -> ClientSettings:
    values: dict[str, Any] = dict(
        organization_id=ORG,
        environment_id=ENV,
        compute_pool_id="lfcp-1",
        cloud_provider="aws",
        region="us-east-1",
        kafka_cluster_id="lkc-1",
        statement_properties=PROPS,
        page_size=2,
        flink=ApiEndpoint(base_url=FLINK, api_key="FKEY", api_secret=SecretStr("fsecret")),
        cloud=ApiEndpoint(base_url=CLOUD, api_key="CKEY", api_secret=SecretStr("csecret")),
        kafka=ApiEndpoint(base_url=KAFKA, api_key="KKEY", api_secret=SecretStr("ksecret")),
        schema_registry=ApiEndpoint(base_url=SR, api_key="SKEY", api_secret=SecretStr("ssecret")),
        retry=RetryPolicy(max_attempts=4, backoff_base=0.01, backoff_cap=0.02),
    )
    values.update(overrides)
    return ClientSettings(**values)


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def client(fake_time: FakeTime) -> ConfluentClient:
    return ConfluentClient(make_settings(), sleep=fake_time.sleep, clock=fake_time.clock, rng=random.Random(7))


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def statement(name: str = "dev-p1-dml-orders", phase: str = "RUNNING", rv: str = "1", **status: Any) -> dict[str, Any]:
    return {
        "api_version": "sql/v1",
        "kind": "Statement",
        "name": name,
        "organization_id": ORG,
        "environment_id": ENV,
        "metadata": {
            "self": f"{STMTS}/{name}",
            "created_at": "2023-11-15T08:34:12Z",
            "updated_at": "2023-11-15T08:35:20Z",
            "uid": "8b9c49bb-7351-416d-98d5-d5f29f6de980",
            "resource_version": rv,
            "labels": {"app": "x"},
        },
        "spec": {
            "statement": "INSERT INTO t SELECT * FROM s;",
            "properties": PROPS,
            "compute_pool_id": "lfcp-1",
            "principal": "sa-1",
            "stopped": phase in ("STOPPING", "STOPPED"),
            "scaling": {"baseline_cfu": 2},  # a field newer than our models: must survive GET -> PUT
        },
        "status": {"phase": phase, "detail": "", **status},
    }


def cloud_error(status: int, detail: str) -> dict[str, Any]:
    return {"errors": [{"id": "abc", "status": str(status), "detail": detail, "source": {}}]}


# --- statements ------------------------------------------------------------------------


def test_create_statement_posts_the_documented_body_with_flink_auth(client: ConfluentClient, rsps: Mock) -> None:
    expected = {
        "name": "dev-p1-dml-orders",
        "organization_id": ORG,
        "environment_id": ENV,
        "metadata": {"labels": {"app": "pipeline-x"}},
        "spec": {
            "statement": "INSERT INTO t SELECT * FROM s;",
            "properties": {**PROPS, "sql.local-time-zone": "UTC"},
            "compute_pool_id": "lfcp-1",
            "principal": "sa-1",
            "stopped": False,
        },
    }
    rsps.post(STMTS, status=201, json=statement(phase="PENDING"),
              match=[matchers.json_params_matcher(expected, strict_match=True), matchers.header_matcher(FLINK_AUTH)])
    created = client.create_statement("dev-p1-dml-orders", "INSERT INTO t SELECT * FROM s;",
                                      properties={"sql.local-time-zone": "UTC"}, principal="sa-1",
                                      labels={"app": "pipeline-x"})
    assert created.phase == Phase.PENDING and created.spec.compute_pool_id == "lfcp-1"


def test_create_rejects_invalid_names_before_any_request(client: ConfluentClient, rsps: Mock) -> None:
    with pytest.raises(ValueError, match="invalid statement name"):
        client.create_statement("Bad_Name", "SELECT 1")
    with pytest.raises(ValueError):
        client.create_statement("a" * 73, "SELECT 1")
    assert len(rsps.calls) == 0


@pytest.mark.parametrize("name", ["..", ".", "a/b", "../etc", "a..b", "Bad_Name", ""])
def test_by_name_calls_refuse_names_no_statement_can_have(client: ConfluentClient, rsps: responses.RequestsMock,
                                                          name: str) -> None:
    for call in (client.get_statement, client.delete_statement, client.stop_statement, client.statement_results):
        with pytest.raises(ValueError, match="invalid statement name"):
            call(name)
    assert len(rsps.calls) == 0  # '..' would otherwise be normalised into the list path


def test_get_statement_parses_status_and_keeps_unknown_fields(client: ConfluentClient, rsps: Mock) -> None:
    body = statement(phase="SOME_FUTURE_PHASE", traits={"sql_kind": "INSERT_INTO", "is_bounded": False, "schema": {}},
                     latest_offsets={"orders": "partition:0,offset:10;partition:1,offset:123"}, brand_new={"x": 1})
    rsps.get(f"{STMTS}/dev-p1-dml-orders", json=body, match=[matchers.header_matcher(FLINK_AUTH)])
    got = client.get_statement("dev-p1-dml-orders")
    assert got.phase == "SOME_FUTURE_PHASE" and not got.is_terminal
    assert got.status.traits is not None and got.status.traits.sql_kind == "INSERT_INTO"
    assert got.latest_offsets == {"orders": {0: 10, 1: 123}}
    assert got.to_request_body()["spec"]["scaling"] == {"baseline_cfu": 2}
    assert got.to_request_body()["status"]["brand_new"] == {"x": 1}


def test_list_statements_follows_three_pages_with_filters(client: ConfluentClient, rsps: Mock) -> None:
    base = {"spec.compute_pool_id": "lfcp-1", "label_selector": "app=x,team=y", "page_size": "2"}
    pages = [
        (None, ["a", "b"], f"{STMTS}?page_size=2&page_token=T1"),
        ("T1", ["c", "d"], f"{STMTS}?page_token=T2"),
        ("T2", ["e"], ""),
    ]
    for token, names, next_url in pages:
        query = {**base, **({"page_token": token} if token else {})}
        rsps.get(STMTS, json={"api_version": "sql/v1", "kind": "StatementList",
                              "metadata": {"self": STMTS, "next": next_url},
                              "data": [statement(name) for name in names]},
                 match=[matchers.query_param_matcher(query), matchers.header_matcher(FLINK_AUTH)])
    listed = client.list_statements(compute_pool_id="lfcp-1", label_selector={"app": "x", "team": "y"})
    assert [s.name for s in listed] == ["a", "b", "c", "d", "e"]
    assert len(rsps.calls) == 3


def test_delete_statement_waits_until_get_answers_404(client: ConfluentClient, rsps: responses.RequestsMock,
                                                      fake_time: FakeTime) -> None:
    url = f"{STMTS}/dev-p1-dml-orders"
    rsps.delete(url, status=202, match=[matchers.header_matcher(FLINK_AUTH)])
    rsps.get(url, json=statement(phase="DELETING"))
    rsps.get(url, status=404, json=cloud_error(404, "Statement resource=dev-p1-dml-orders does not exist"))
    client.delete_statement("dev-p1-dml-orders")
    assert [c.request.method for c in rsps.calls] == ["DELETE", "GET", "GET"]
    assert fake_time.sleeps == [0.3]


def test_delete_of_a_missing_statement_is_a_no_op(client: ConfluentClient, rsps: Mock) -> None:
    rsps.delete(f"{STMTS}/gone", status=404, json=cloud_error(404, "Statement resource=gone does not exist"))
    client.delete_statement("gone")
    assert len(rsps.calls) == 1


def test_stop_puts_whole_statement_with_resource_version_and_waits_for_stopped(
    client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    url = f"{STMTS}/dev-p1-dml-orders"
    running = statement(rv="7")
    expected_put = statement(rv="7")
    expected_put["spec"]["stopped"] = True
    rsps.get(url, json=running)
    rsps.put(url, status=202, match=[matchers.json_params_matcher(expected_put, strict_match=True),
                                     matchers.header_matcher(FLINK_AUTH)])
    rsps.get(url, json=statement(phase="STOPPING", rv="8"))
    rsps.get(url, json=statement(phase="STOPPED", rv="9", latest_offsets={"src": "partition:0,offset:42"}))
    stopped = client.stop_statement("dev-p1-dml-orders")
    assert stopped.phase == Phase.STOPPED and stopped.latest_offsets == {"src": {0: 42}}


def test_stop_rereads_and_retries_after_409_on_stale_resource_version(
    client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    url = f"{STMTS}/dev-p1-dml-orders"
    stale, fresh = statement(rv="3"), statement(rv="4")
    put_stale = statement(rv="3")
    put_stale["spec"]["stopped"] = True
    put_fresh = statement(rv="4")
    put_fresh["spec"]["stopped"] = True
    rsps.get(url, json=stale)
    rsps.put(url, status=409, json=cloud_error(409, "resource version mismatch"),
             match=[matchers.json_params_matcher(put_stale, strict_match=True)])
    rsps.get(url, json=fresh)
    rsps.put(url, status=202, match=[matchers.json_params_matcher(put_fresh, strict_match=True)])
    result = client.stop_statement("dev-p1-dml-orders", wait=False)
    assert result.metadata.resource_version == "4" and result.spec.stopped
    assert [c.request.method for c in rsps.calls] == ["GET", "PUT", "GET", "PUT"]


def test_stop_of_an_already_stopped_statement_sends_no_put(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", json=statement("s", phase="STOPPED"))
    rsps.get(f"{STMTS}/s", json=statement("s", phase="STOPPED"))
    assert client.stop_statement("s").phase == Phase.STOPPED
    assert [c.request.method for c in rsps.calls] == ["GET", "GET"]


def test_resume_can_move_pool_and_principal_and_waits_for_running(
    client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    url = f"{STMTS}/dev-p1-dml-orders"
    expected_put = statement(phase="STOPPED", rv="5")
    expected_put["spec"].update(stopped=False, compute_pool_id="lfcp-2", principal="sa-2")
    rsps.get(url, json=statement(phase="STOPPED", rv="5"))
    rsps.put(url, status=202, match=[matchers.json_params_matcher(expected_put, strict_match=True)])
    rsps.get(url, json=statement(phase="PENDING", rv="6"))
    rsps.get(url, json=statement(phase="RUNNING", rv="7"))
    resumed = client.resume_statement("dev-p1-dml-orders", compute_pool_id="lfcp-2", principal="sa-2")
    assert resumed.phase == Phase.RUNNING


def test_resume_refuses_to_move_a_running_statement(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", json=statement("s"))
    with pytest.raises(ValueError, match="not stopped"):
        client.resume_statement("s", compute_pool_id="lfcp-9")


def test_wait_for_phase_raises_statement_failed_with_detail(
    client: ConfluentClient, rsps: responses.RequestsMock, fake_time: FakeTime
) -> None:
    url = f"{STMTS}/s"
    detail = "The 'kafka.partitions' option is not supported anymore, use DISTRIBUTED INTO n BUCKETS"
    rsps.get(url, json=statement("s", phase="PENDING"))
    rsps.get(url, json=statement("s", phase="PENDING"))
    rsps.get(url, json={**statement("s"), "status": {"phase": "FAILED", "detail": detail}})
    with pytest.raises(StatementFailed) as info:
        client.wait_for_phase("s", {Phase.RUNNING, Phase.COMPLETED}, timeout=60)
    assert detail in str(info.value) and info.value.name == "s"
    assert fake_time.sleeps == [0.3, 0.3]


def test_failed_with_empty_detail_reports_the_newest_exception(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", json={**statement("s"), "status": {"phase": "FAILED", "detail": ""}})
    rsps.get(f"{STMTS}/s/exceptions", match=[matchers.header_matcher(FLINK_AUTH)], json={
        "api_version": "sql/v1", "kind": "StatementExceptionList", "metadata": {"self": "x"},
        "data": [{"kind": "StatementException", "name": "java.lang.RuntimeException",
                  "message": "Table 'src' not found", "timestamp": "2024-01-01T00:00:02Z"},
                 {"kind": "StatementException", "name": "x", "message": "older", "timestamp": "2024-01-01T00:00:01Z"}]})
    with pytest.raises(StatementFailed, match="Table 'src' not found") as info:
        client.wait_for_phase("s", {Phase.RUNNING})
    assert info.value.exception_message == "Table 'src' not found"


def test_wait_for_phase_times_out_naming_the_last_phase(
    client: ConfluentClient, rsps: responses.RequestsMock, fake_time: FakeTime
) -> None:
    for _ in range(4):
        rsps.get(f"{STMTS}/s", json=statement("s", phase="PENDING"))
    with pytest.raises(TimeoutWaiting, match="last phase seen: PENDING"):
        client.wait_for_phase("s", {Phase.RUNNING}, timeout=1.0)
    assert sum(fake_time.sleeps) == pytest.approx(1.0)


def test_poll_cadence_grows_and_is_capped() -> None:
    poll = PollPolicy()
    assert [poll.interval(n) for n in (0, 9, 10, 20, 1000)] == [0.3, 0.3, 0.6, pytest.approx(0.9), 3.0]


def test_results_follow_pages_until_next_is_empty(client: ConfluentClient, rsps: Mock) -> None:
    url = f"{STMTS}/s/results"
    rsps.get(url, match=[matchers.query_param_matcher({}), matchers.header_matcher(FLINK_AUTH)], json={
        "metadata": {"next": f"{url}?page_token=P1"},
        "results": {"data": [{"op": 0, "row": ["101", "Jay", None]}, {"row": ["102", "Ann", ["a", "b"]]}]}})
    rsps.get(url, match=[matchers.query_param_matcher({"page_token": "P1"})], json={
        "metadata": {"next": ""},
        "results": {"data": [{"op": 1, "row": ["101", "Jay", None]}, {"op": 2, "row": ["101", "Jo", None]},
                             {"op": 3, "row": ["102", "Ann", ["a", "b"]]}]}})
    rows = client.statement_results("s")
    assert [r.op for r in rows] == [Op.INSERT, Op.INSERT, Op.UPDATE_BEFORE, Op.UPDATE_AFTER, Op.DELETE]
    assert rows[1].as_dict(["id", "name", "tags"]) == {"id": "102", "name": "Ann", "tags": ["a", "b"]}


def test_results_of_a_running_unbounded_statement_stop_at_an_empty_page(
    client: ConfluentClient, rsps: responses.RequestsMock, fake_time: FakeTime
) -> None:
    url = f"{STMTS}/s/results"
    rsps.get(url, status=409, json=cloud_error(409, "Results for Statement=s not ready"))
    rsps.get(url, json={"metadata": {"next": f"{url}?page_token=P1"}, "results": {"data": [{"op": 0, "row": ["1"]}]}})
    rsps.get(url, match=[matchers.query_param_matcher({"page_token": "P1"})],
             json={"metadata": {"next": f"{url}?page_token=P2"}, "results": {"data": []}})
    rows = client.statement_results("s")
    assert [r.row for r in rows] == [["1"]]
    assert fake_time.sleeps == [0.3]  # one wait while results were not ready


def test_exceptions_are_listed_newest_first(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s/exceptions",
             json={"data": [{"name": "E", "message": "boom", "timestamp": "2024-01-01T00:00:00Z"}]})
    assert [e.message for e in client.statement_exceptions("s")] == ["boom"]


# --- compute pools, topics, subjects -------------------------------------------------------


def pool(pool_id: str, phase: str = "PROVISIONED") -> dict[str, Any]:
    return {"api_version": "fcpm/v2", "kind": "ComputePool", "id": pool_id,
            "metadata": {"self": f"{POOLS}/{pool_id}"},
            "spec": {"display_name": f"dev-{pool_id}", "cloud": "AWS", "region": "us-east-1", "max_cfu": 10,
                     "environment": {"id": ENV}},
            "status": {"phase": phase, "current_cfu": 0}}


def test_compute_pools_list_pages_with_environment_and_cloud_auth(client: ConfluentClient, rsps: Mock) -> None:
    base = {"environment": ENV, "spec.region": "us-east-1", "page_size": "2"}
    rsps.get(POOLS, match=[matchers.query_param_matcher(base), matchers.header_matcher(CLOUD_AUTH)],
             json={"kind": "ComputePoolList", "metadata": {"next": f"{POOLS}?environment={ENV}&page_token=N"},
                   "data": [pool("lfcp-1"), pool("lfcp-2")]})
    rsps.get(POOLS, match=[matchers.query_param_matcher({**base, "page_token": "N"})],
             json={"kind": "ClusterList", "metadata": {}, "data": [pool("lfcp-3")]})
    assert [p.id for p in client.list_compute_pools(region="us-east-1")] == ["lfcp-1", "lfcp-2", "lfcp-3"]


def test_get_compute_pool(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{POOLS}/lfcp-1", json=pool("lfcp-1"),
             match=[matchers.query_param_matcher({"environment": ENV}), matchers.header_matcher(CLOUD_AUTH)])
    assert client.get_compute_pool("lfcp-1").status.phase == "PROVISIONED"


def test_create_compute_pool_waits_until_provisioned(client: ConfluentClient, rsps: Mock) -> None:
    body = {"spec": {"display_name": "dev-p1", "cloud": "AWS", "region": "us-east-1", "max_cfu": 10,
                     "environment": {"id": ENV}}}
    rsps.post(POOLS, status=202, json=pool("lfcp-9", "PROVISIONING"),
              match=[matchers.json_params_matcher(body, strict_match=True), matchers.header_matcher(CLOUD_AUTH)])
    rsps.get(f"{POOLS}/lfcp-9", json=pool("lfcp-9", "PROVISIONING"))
    rsps.get(f"{POOLS}/lfcp-9", json=pool("lfcp-9", "PROVISIONED"))
    assert client.create_compute_pool("dev-p1", max_cfu=10).status.phase == "PROVISIONED"


def test_create_compute_pool_failed_phase_raises(client: ConfluentClient, rsps: Mock) -> None:
    rsps.post(POOLS, status=202, json=pool("lfcp-9", "PROVISIONING"))
    rsps.get(f"{POOLS}/lfcp-9", json=pool("lfcp-9", "FAILED"))
    with pytest.raises(ProvisioningFailed, match="dev-p1"):
        client.create_compute_pool("dev-p1", max_cfu=10)


def test_compute_pool_create_is_not_retried_after_503(client: ConfluentClient, rsps: Mock) -> None:
    rsps.post(POOLS, status=503, body="Service Unavailable")
    with pytest.raises(ServerError):
        client.create_compute_pool("dev-p1", max_cfu=10, wait=False)
    assert len(rsps.calls) == 1  # pool names are not unique: a blind retry could create two pools


def test_topics_list_and_delete_use_kafka_rest_and_its_key(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(TOPICS, match=[matchers.header_matcher(KAFKA_AUTH)], json={
        "kind": "KafkaTopicList", "metadata": {"self": TOPICS, "next": None},
        "data": [{"kind": "KafkaTopic", "cluster_id": "lkc-1", "topic_name": "orders", "is_internal": False,
                  "partitions_count": 6, "replication_factor": 3}]})
    rsps.delete(f"{TOPICS}/orders", status=204, match=[matchers.header_matcher(KAFKA_AUTH)])
    rsps.delete(f"{TOPICS}/missing", status=404,
                json={"error_code": 40403, "message": "This server does not host this topic-partition."})
    assert [t.topic_name for t in client.list_topics()] == ["orders"]
    assert client.delete_topic("orders") is True
    assert client.delete_topic("missing") is False


def test_subject_delete_is_soft_then_permanent_with_sr_key(client: ConfluentClient, rsps: Mock) -> None:
    url = f"{SR}/subjects/orders-value"
    rsps.delete(url, json=[1, 2], match=[matchers.query_param_matcher({}), matchers.header_matcher(SR_AUTH)])
    rsps.delete(url, json=[1, 2],
                match=[matchers.query_param_matcher({"permanent": "true"}), matchers.header_matcher(SR_AUTH)])
    assert client.delete_subject("orders-value") == [1, 2]
    assert [c.request.url for c in rsps.calls] == [url, f"{url}?permanent=true"]


def test_subject_already_soft_deleted_goes_on_to_permanent(client: ConfluentClient, rsps: Mock) -> None:
    url = f"{SR}/subjects/%3A.flink-dev%3Aorders-value"  # a context-qualified subject, percent-encoded
    rsps.delete(url, status=404, json={"error_code": 40404, "message": "Subject 'x' was soft deleted."},
                match=[matchers.query_param_matcher({})])
    rsps.delete(url, json=[3], match=[matchers.query_param_matcher({"permanent": "true"})])
    assert client.delete_subject(":.flink-dev:orders-value") == [3]


def test_unknown_subject_deletes_nothing(client: ConfluentClient, rsps: Mock) -> None:
    rsps.delete(f"{SR}/subjects/nope", status=404, json={"error_code": 40401, "message": "Subject 'nope' not found."})
    assert client.delete_subject("nope") == []


# --- transport: retries, errors, redirects -----------------------------------------------------


def test_429_honours_retry_after_then_succeeds(client: ConfluentClient, rsps: responses.RequestsMock,
                                               fake_time: FakeTime) -> None:
    rsps.get(f"{STMTS}/s", status=429, headers={"Retry-After": "7"}, body="<html>Too Many Requests</html>")
    rsps.get(f"{STMTS}/s", json=statement("s"))
    assert client.get_statement("s").name == "s"
    assert fake_time.sleeps == [7.0]


def test_503_twice_then_success(client: ConfluentClient, rsps: responses.RequestsMock, fake_time: FakeTime) -> None:
    rsps.get(f"{STMTS}/s", status=503, body="unavailable")
    rsps.get(f"{STMTS}/s", status=503, body="unavailable")
    rsps.get(f"{STMTS}/s", json=statement("s"))
    assert client.get_statement("s").name == "s"
    assert len(rsps.calls) == 3
    assert len(fake_time.sleeps) == 2 and all(0 <= s <= 0.02 for s in fake_time.sleeps)


def test_connection_error_is_retried_for_get(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", body=requests.ConnectionError("reset by peer"))
    rsps.get(f"{STMTS}/s", json=statement("s"))
    assert client.get_statement("s").name == "s"


def test_connection_errors_exhausted_raise_connection_failed(client: ConfluentClient, rsps: Mock) -> None:
    for _ in range(4):
        rsps.get(f"{STMTS}/s", body=requests.ConnectionError("refused"))
    with pytest.raises(ConnectionFailed, match="after 4 attempt"):
        client.get_statement("s")


def test_401_raises_auth_error_without_retry(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", status=401, json=cloud_error(401, "invalid API key"),
             headers={"WWW-Authenticate": 'Basic error="invalid_key"', "X-Request-Id": "req-1"})
    with pytest.raises(AuthError) as info:
        client.get_statement("s")
    assert len(rsps.calls) == 1
    message = str(info.value)
    assert "GET /sql/v1/organizations" in message and "HTTP 401" in message and "invalid API key" in message
    assert "req-1" in message


def test_retries_exhausted_raise_server_error_and_rate_limited(client: ConfluentClient, rsps: Mock) -> None:
    for _ in range(4):
        rsps.get(f"{STMTS}/a", status=504, body="gateway timeout")
    for _ in range(4):
        rsps.get(f"{STMTS}/b", status=429, headers={"Retry-After": "0"}, body="")
    with pytest.raises(ServerError, match="HTTP 504: gateway timeout"):
        client.get_statement("a")
    with pytest.raises(RateLimited):
        client.get_statement("b")
    assert len(rsps.calls) == 8


def test_status_codes_map_to_typed_errors(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/a", status=404, json=cloud_error(404, "Statement resource=a does not exist"))
    rsps.post(STMTS, status=422, json={"errors": [{"title": "Unprocessable", "code": "invalid_input"}]})
    with pytest.raises(NotFound, match="Statement resource=a does not exist"):
        client.get_statement("a")
    with pytest.raises(BadRequest, match="HTTP 422: Unprocessable") as info:
        client.create_statement("a", "SELECT 1")
    assert info.value.code == "invalid_input"


def test_create_retried_after_503_returns_the_statement_the_first_attempt_created(
    client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    rsps.post(STMTS, status=503, body="unavailable")
    rsps.post(STMTS, status=409, json=cloud_error(409, "Statement name already exists"))
    rsps.get(f"{STMTS}/dev-p1-dml-orders", json=statement(phase="PENDING"))
    got = client.create_statement("dev-p1-dml-orders", "INSERT INTO t SELECT * FROM s;")
    assert got.phase == Phase.PENDING
    assert [c.request.method for c in rsps.calls] == ["POST", "POST", "GET"]


def test_create_409_on_first_attempt_is_a_real_conflict(client: ConfluentClient, rsps: Mock) -> None:
    rsps.post(STMTS, status=409, json=cloud_error(409, "Statement name already exists"))
    with pytest.raises(Conflict, match="already exists"):
        client.create_statement("dev-p1-dml-orders", "INSERT INTO t SELECT * FROM s;")
    assert len(rsps.calls) == 1


def test_create_409_after_retry_for_another_sql_is_still_a_conflict(client: ConfluentClient, rsps: Mock) -> None:
    rsps.post(STMTS, status=502, body="bad gateway")
    rsps.post(STMTS, status=409, json=cloud_error(409, "Statement name already exists"))
    rsps.get(f"{STMTS}/dev-p1-dml-orders", json=statement(phase="RUNNING"))
    with pytest.raises(Conflict):
        client.create_statement("dev-p1-dml-orders", "INSERT INTO other SELECT 1;")


def test_redirect_to_another_confluent_host_keeps_authorization(client: ConfluentClient, rsps: Mock) -> None:
    other = "https://flink.pr1jy6.us-east-1.aws.confluent.cloud"
    rsps.get(f"{STMTS}/s", status=307, headers={"Location": f"{other}/sql/v1/x/s"})
    rsps.get(f"{other}/sql/v1/x/s", json=statement("s"), match=[matchers.header_matcher(FLINK_AUTH)])
    assert client.get_statement("s").name == "s"
    assert rsps.calls[1].request.headers["Authorization"] == FLINK_AUTH["Authorization"]


def test_redirect_to_a_foreign_host_drops_authorization(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", status=302, headers={"Location": "https://evil.example.com/steal"})
    rsps.get("https://evil.example.com/steal", json=statement("s"))
    client.get_statement("s")
    assert "Authorization" in rsps.calls[0].request.headers
    assert "Authorization" not in rsps.calls[1].request.headers


def test_redirect_to_plain_http_confluent_host_drops_authorization(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", status=301, headers={"Location": "http://flink.other.confluent.cloud/s"})
    rsps.get("http://flink.other.confluent.cloud/s", json=statement("s"))
    client.get_statement("s")
    assert "Authorization" not in rsps.calls[1].request.headers


def test_redirect_loop_stops_after_five_hops(client: ConfluentClient, rsps: Mock) -> None:
    rsps.get(f"{STMTS}/s", status=302, headers={"Location": f"{STMTS}/s"})
    with pytest.raises(ConfluentError, match="more than 5 redirects"):
        client.get_statement("s")
    assert len(rsps.calls) == 6


def test_local_service_host_is_trusted_for_redirects(fake_time: FakeTime, rsps: Mock) -> None:
    local = "http://127.0.0.1:8084"
    flink = ApiEndpoint(base_url=local, api_key="FKEY", api_secret=SecretStr("fsecret"))
    client = ConfluentClient(make_settings(flink=flink),
                             sleep=fake_time.sleep, clock=fake_time.clock)
    path = f"/sql/v1/organizations/{ORG}/environments/{ENV}/statements"
    rsps.get(f"{local}{path}/s", status=308, headers={"Location": f"{path}/s2"})
    rsps.get(f"{local}{path}/s2", json=statement("s2"), match=[matchers.header_matcher(FLINK_AUTH)])
    assert client.get_statement("s").name == "s2"


# --- ~/.netrc never replaces the configured key ----------------------------------------------


NETRC_AUTH = basic("NETRC-KEY", "netrc-secret")


@pytest.fixture
def netrc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME whose ~/.netrc has entries for the Flink host, another Confluent host, a foreign host and loopback."""
    netrc = tmp_path / ".netrc"
    hosts = ["flink.us-east-1.aws.confluent.cloud", "flink.pr1jy6.us-east-1.aws.confluent.cloud", "evil.example.com",
             "127.0.0.1"]
    netrc.write_text("".join(f"machine {host}\n  login NETRC-KEY\n  password netrc-secret\n" for host in hosts))
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    return netrc


def test_netrc_entry_for_the_confluent_host_does_not_replace_the_flink_key(
    netrc_home: Path, client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    rsps.get(f"{STMTS}/s", json=statement("s"))
    rsps.get(f"{STMTS}/s", json=statement("s"))
    requests.Session().get(f"{STMTS}/s")  # the entry is live: a request without auth= picks it up
    assert rsps.calls[0].request.headers["Authorization"] == NETRC_AUTH
    assert client.get_statement("s").name == "s"
    assert rsps.calls[1].request.headers["Authorization"] == FLINK_AUTH["Authorization"]


def test_netrc_entry_of_a_redirect_target_is_never_applied(
    netrc_home: Path, client: ConfluentClient, rsps: responses.RequestsMock
) -> None:
    other = "https://flink.pr1jy6.us-east-1.aws.confluent.cloud"
    rsps.get(f"{STMTS}/a", status=307, headers={"Location": f"{other}/sql/v1/x/a"})
    rsps.get(f"{other}/sql/v1/x/a", json=statement("a"))
    rsps.get(f"{STMTS}/b", status=302, headers={"Location": "https://evil.example.com/steal"})
    rsps.get("https://evil.example.com/steal", json=statement("b"))
    client.get_statement("a")
    client.get_statement("b")
    assert [c.request.headers.get("Authorization") for c in rsps.calls] == [
        FLINK_AUTH["Authorization"], FLINK_AUTH["Authorization"], FLINK_AUTH["Authorization"], None]


class _RecordingHandler(BaseHTTPRequestHandler):
    """Answers every GET with a statement (or a same-origin redirect for /redirect), recording Authorization."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append(self.headers.get("Authorization"))
        if self.path.endswith("/redirect"):
            self.send_response(307)
            self.send_header("Location", self.path.replace("/redirect", "/s"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps(statement("s")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


def test_netrc_entry_for_a_real_loopback_service_does_not_replace_the_key(netrc_home: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RecordingHandler)
    _RecordingHandler.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        settings = make_settings(flink=ApiEndpoint(base_url=base, api_key="FKEY", api_secret=SecretStr("fsecret")))
        with ConfluentClient(settings) as local:
            assert local.get_statement("s").name == "s"
            assert local.get_statement("redirect").name == "s"
        requests.get(f"{base}/plain", timeout=5)  # control: without auth= requests sends the netrc entry
    finally:
        server.shutdown()
        server.server_close()
    assert _RecordingHandler.seen == [FLINK_AUTH["Authorization"]] * 3 + [NETRC_AUTH]


def test_a_client_bound_to_a_data_folder_refuses_another_folders_service(fake_time: FakeTime,
                                                                         rsps: Mock) -> None:
    local = "http://127.0.0.1:8084"
    path = f"/sql/v1/organizations/{ORG}/environments/{ENV}/statements"
    endpoint = ApiEndpoint(base_url=local, api_key="FKEY", api_secret=SecretStr("fsecret"))
    rsps.get(f"{local}/local/v1/health", json={"status": "ok", "pid": 41, "data_dir": "/projects/a/.data"})
    foreign = ConfluentClient(make_settings(flink=endpoint, service_data_dir="/projects/b/.data"),
                              sleep=fake_time.sleep, clock=fake_time.clock)
    with pytest.raises(WrongService,
                       match="data folder /projects/a/.data, not the one of data folder /projects/b/.data"):
        foreign.list_statements()
    assert [c.request.url for c in rsps.calls] == [f"{local}/local/v1/health"]  # no statement was read

    rsps.get(f"{local}/local/v1/health", json={"status": "ok", "pid": 41, "data_dir": "/projects/a/.data"})
    rsps.get(f"{local}{path}/s", json=statement("s"))
    rsps.get(f"{local}{path}/s", json=statement("s"))
    own = ConfluentClient(make_settings(flink=endpoint, service_data_dir="/projects/a/.data"),
                          sleep=fake_time.sleep, clock=fake_time.clock)
    assert own.get_statement("s").name == own.get_statement("s").name == "s"
    assert len(rsps.calls) == 4  # the health was read once for both calls


def test_a_local_config_bound_to_its_folder_makes_bound_clients(tmp_path: Path) -> None:
    config = bind_to_data_dir(local_defaults("http://127.0.0.1:8084"), tmp_path / "data")
    assert ClientSettings.from_config(config).service_data_dir == str((tmp_path / "data").resolve())
    assert ClientSettings.from_config(local_defaults("http://127.0.0.1:8084")).service_data_dir is None


def test_a_bound_client_refuses_a_url_that_is_not_a_local_service(fake_time: FakeTime,
                                                                   rsps: Mock) -> None:
    endpoint = ApiEndpoint(base_url=FLINK, api_key="FKEY", api_secret=SecretStr("fsecret"))
    rsps.get(f"{FLINK}/local/v1/health", status=404, json=cloud_error(404, "not found"))
    client = ConfluentClient(make_settings(flink=endpoint, service_data_dir="/projects/b/.data"),
                             sleep=fake_time.sleep, clock=fake_time.clock)
    with pytest.raises(WrongService, match="is no local service"):
        client.get_statement("s")


def test_unconfigured_api_names_the_missing_settings(fake_time: FakeTime, rsps: Mock) -> None:
    client = ConfluentClient(make_settings(flink=ApiEndpoint(base_url=FLINK, api_key="FKEY"),
                                           schema_registry=ApiEndpoint(), kafka_cluster_id=None))
    with pytest.raises(ConfigError, match="Flink SQL API is not configured: missing SL_FLINK_API_SECRET"):
        client.get_statement("s")
    with pytest.raises(ConfigError, match=r"registry\.url, SL_REGISTRY_API_KEY, SL_REGISTRY_API_SECRET"):
        client.delete_subject("x")
    with pytest.raises(ConfigError, match=r"kafka\.cluster_id"):
        client.list_topics()
    assert len(rsps.calls) == 0


# --- secrets ---------------------------------------------------------------------------------


SECRETS = {
    "SL_FLINK_API_SECRET": "flink-S3CRET-zq81",
    "SL_CONFLUENT_CLOUD_API_SECRET": "cloud-S3CRET-zq82",
    "SL_KAFKA_API_SECRET": "kafka-S3CRET-zq83",
    "SL_REGISTRY_API_SECRET": "sr-S3CRET-zq84",
}
FILE_SECRET = "file-S3CRET-zq85"


def test_secrets_never_leak(tmp_path: Path, caplog: pytest.LogCaptureFixture, rsps: Mock) -> None:
    caplog.set_level(logging.DEBUG)
    env = {**SECRETS, "SL_FLINK_API_KEY": "FKEY", "SL_CONFLUENT_CLOUD_API_KEY": "CKEY",
           "SL_KAFKA_API_KEY": "KKEY", "SL_REGISTRY_API_KEY": "SKEY"}
    config_file = tmp_path / "config.yaml"
    config_file.write_text(f"""
kafka: {{cluster_id: lkc-1, cluster_type: dev, pkafka_cluster: pkc-1,
         "sasl.password": {FILE_SECRET}, oauth_token: {FILE_SECRET}}}
registry: {{url: "{SR}", registry_key_secret: {FILE_SECRET}}}
confluent_cloud: {{environment_id: {ENV}, organization_id: {ORG}, region: us-east-1, provider: aws}}
flink: {{compute_pool_id: lfcp-1, catalog_name: my_env, database_name: my_cluster}}
""")
    cfg = load_config(config_file, environ=env)
    time = FakeTime()
    client = ConfluentClient.from_config(cfg, sleep=time.sleep, clock=time.clock)
    errors: list[Exception] = []

    rsps.get(f"{STMTS}/s", status=401, json=cloud_error(401, "invalid API key"))
    with pytest.raises(AuthError) as auth:
        client.get_statement("s")
    errors.append(auth.value)
    rsps.get(f"{STMTS}/f", json={**statement("f"), "status": {"phase": "FAILED", "detail": "bad SQL"}})
    with pytest.raises(StatementFailed) as failed:
        client.wait_for_phase("f", {Phase.RUNNING})
    errors.append(failed.value)

    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text(f"flink: {{api_secret: [{FILE_SECRET}], max_cfu: lots}}\n")
    with pytest.raises(ValueError) as config_error:
        load_config(bad_file, environ=env)
    errors.append(config_error.value)

    secrets = [*SECRETS.values(), FILE_SECRET]
    encoded = [base64.b64encode(f"FKEY:{SECRETS['SL_FLINK_API_SECRET']}".encode()).decode()]
    texts = [caplog.text, repr(cfg), str(cfg), str(cfg.model_dump()), cfg.model_dump_json(), repr(client), str(client),
             repr(client.settings), client.settings.model_dump_json()]
    texts += [str(e) for e in errors] + [repr(e) for e in errors]
    for text in texts:
        for secret in secrets + encoded:
            assert secret not in text
    # and the client really did use the secret from the environment
    assert rsps.calls[0].request.headers["Authorization"] == basic("FKEY", SECRETS["SL_FLINK_API_SECRET"])
    assert cfg.kafka.sasl_password is not None
    assert cfg.kafka.sasl_password.get_secret_value() == SECRETS["SL_KAFKA_API_SECRET"]  # the variable wins
    assert isinstance((cfg.kafka.model_extra or {})["oauth_token"], SecretStr)  # unknown secret-like keys are masked


# --- a deployment stopped while Confluent Cloud keeps a statement PENDING (no CFU free) ----------------


def test_a_stopped_executor_gives_up_a_wait_on_a_pending_statement_at_once(rsps: Mock) -> None:
    """On Confluent Cloud a statement can stay PENDING for as long as its pool has no CFU free; a
    terminated run must not wait the step's 600 s timeout (issue 27): stop() ends the wait at its next
    poll, the step is reported as interrupted and the steps not started never start."""
    from shift_left_dagster.deploy.executor import DeploymentStopped, PlanExecutor
    from shift_left_dagster.deploy.plan import DeploymentPlan, PlanOptions
    from shift_left_dagster.deploy.steps import DeployStep, PoolRef

    client = ConfluentClient(make_settings(poll=PollPolicy(initial=0.05, step=0, cap=0.05)))
    name = "dev-p1-drop-orders"  # the step's first statement: DROP TABLE IF EXISTS before its DDL
    rsps.add(responses.DELETE, f"{STMTS}/{name}", status=404, json=cloud_error(404, "not found"))
    rsps.add(responses.POST, STMTS, json=statement(name, "PENDING"))
    rsps.add(responses.GET, f"{STMTS}/{name}", json=statement(name, "PENDING"))  # forever
    steps = [DeployStep(index=i, action="deploy", reason="test", table=t, physical_table=t,
                        ddl_statement=f"dev-p1-ddl-{t}", drop_statement=name, pool=PoolRef(id="lfcp-1"),
                        ddl_sql="CREATE TABLE x",
                        validate_first=False, depends_on=[0] if i else [])
             for i, t in enumerate(["orders", "later"])]
    executor = PlanExecutor(client, timeout=600)
    stopper = threading.Timer(0.5, executor.stop)
    stopper.start()
    started = time.monotonic()
    with pytest.raises(DeploymentStopped) as stopped:
        list(executor.run(DeploymentPlan(targets=["orders"], options=PlanOptions(), steps=steps)))
    assert time.monotonic() - started < 5
    assert (stopped.value.finished, stopped.value.interrupted, stopped.value.not_started) == ([], [0], [1])
    assert "steps none ran, 0 were interrupted, 1 did not start" in str(stopped.value)
