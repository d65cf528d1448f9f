"""Paging, error shapes for unknown paths and wrong methods, results of FAILED statements, control-plane reads
(org/v2, cmk/v2) and the task graph, from the reference (§1, §2.4, §2.8, §2.10) and Confluent's API
documentation."""

from __future__ import annotations

import json

import pytest

from shift_left_dagster.project.config import LOCAL_CLUSTER_ID, LOCAL_ENVIRONMENT_ID
from tests.integration.conformance import Api, error_item, kafka_error

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    return Api(local_service.url)


def test_paging_returns_every_statement_exactly_once(api: Api) -> None:
    label = "paging-250"
    created = set()
    for i in range(250):
        body = {"name": f"page-{i:03d}", "metadata": {"labels": {"suite": label}},
                "spec": {"statement": "SELECT 1", "stopped": True}}
        assert api.call("POST", api.statements, json=body).status_code == 201
        created.add(body["name"])
    seen: list[str] = []
    url: str | None = api.statements
    params: dict | None = {"page_size": 100, "label_selector": f"suite={label}"}
    pages = 0
    while url:
        page = api.call("GET", url, params=params)
        assert page.status_code == 200
        body = page.json()
        assert body["kind"] == "StatementList" and body["api_version"] == "sql/v1"
        seen += [s["name"] for s in body["data"]]
        assert body["metadata"]["next"] != ""  # a URL, or null on the last page: never "" (not a URL)
        url, params, pages = body["metadata"]["next"], None, pages + 1
    assert sorted(seen) == sorted(created) and len(seen) == len(set(seen)) == 250
    assert pages == 3


@pytest.mark.parametrize("token", ["-1", "99999999999999999999999999", "abc", "1" * 300])
def test_bad_page_tokens_answer_400(api: Api, token: str) -> None:
    item = error_item(api.call("GET", api.statements, params={"page_token": token}), 400)
    assert len(item["detail"]) < 1000
    name = api.create("SELECT 1")
    api.wait(name)
    error_item(api.call("GET", f"{api.statements}/{name}/results", params={"page_token": token}), 400)


def test_unknown_paths_and_wrong_methods_answer_json(api: Api) -> None:
    error_item(api.call("GET", "/sql/v1/no/such/path"), 404)
    wrong = api.call("PATCH", api.statements)
    assert error_item(wrong, 405) and "GET" in wrong.headers["Allow"]
    # Kafka REST and Schema Registry paths answer their own {error_code, message} shape
    kafka_error(api.call("GET", f"/kafka/v3/clusters/{LOCAL_CLUSTER_ID}/nothing"), 404, 404)
    kafka_error(api.call("PUT", "/subjects"), 405, 405)


def test_results_of_a_failed_statement_say_it_failed(api: Api) -> None:
    body = api.run("SELECT * FROM platform_nowhere")
    assert body["status"]["phase"] == "FAILED"
    item = error_item(api.call("GET", f"{api.statements}/{body['name']}/results"), 400)
    assert "FAILED" in item["detail"] and "platform_nowhere" in item["detail"]


def test_details_never_repeat_a_huge_sql_text(api: Api) -> None:
    huge = "SELECT " + " + ".join(["no_such_column"] * 4000) + " FROM platform_nowhere WHERE"
    body = api.run(huge)
    assert body["status"]["phase"] == "FAILED" and len(body["status"]["detail"]) <= 2100
    bad_name = api.call("POST", api.statements, json={"name": "X" * 20000, "spec": {"statement": "SELECT 1"}})
    assert len(error_item(bad_name, 400)["detail"]) < 1000


def test_environments_and_clusters(api: Api) -> None:
    envs = api.call("GET", "/org/v2/environments")
    assert envs.status_code == 200 and envs.json()["kind"] == "EnvironmentList"
    # list metadata: `next` is omitted or a URL or null when there is no next page, never "" (not a URL)
    for listed in (envs, api.call("GET", "/cmk/v2/clusters", params={"environment": LOCAL_ENVIRONMENT_ID})):
        assert listed.json()["metadata"].get("next") is None, listed.json()["metadata"]
    env = envs.json()["data"][0]
    assert env["id"] == LOCAL_ENVIRONMENT_ID and env["kind"] == "Environment" and env["display_name"]
    assert api.call("GET", f"/org/v2/environments/{LOCAL_ENVIRONMENT_ID}").json() == env
    error_item(api.call("GET", "/org/v2/environments/env-nope"), 404)
    clusters = api.call("GET", "/cmk/v2/clusters", params={"environment": LOCAL_ENVIRONMENT_ID})
    assert clusters.status_code == 200 and clusters.json()["kind"] == "ClusterList"
    lkc = clusters.json()["data"][0]
    assert lkc["id"] == LOCAL_CLUSTER_ID and lkc["spec"]["environment"]["id"] == LOCAL_ENVIRONMENT_ID
    assert lkc["spec"]["http_endpoint"] == api.base  # Kafka REST is this service
    error_item(api.call("GET", "/cmk/v2/clusters"), 400)  # environment is required
    got = api.call("GET", f"/cmk/v2/clusters/{LOCAL_CLUSTER_ID}", params={"environment": LOCAL_ENVIRONMENT_ID})
    assert got.json()["id"] == LOCAL_CLUSTER_ID


def test_task_graph_of_a_running_statement(api: Api) -> None:
    for sql in ("CREATE TABLE graph_a (id INT)", "CREATE TABLE graph_b (id INT)",
                "CREATE TABLE graph_out (n BIGINT) WITH ('changelog.mode' = 'retract')"):  # an updating count
        api.run(sql)
    name = api.create("INSERT INTO graph_out SELECT COUNT(*) FROM graph_a JOIN graph_b ON graph_a.id = graph_b.id")
    api.wait(name, {"RUNNING"})
    response = api.call("GET", f"{api.statements}/{name}/task-graph")
    assert response.status_code == 200
    graph = json.loads(response.json()["Graph"])  # a JSON document inside a string, as the query profiler reads it
    tasks = {t["task_id"]: t for t in graph["tasks"]}
    sink = next(t for t in graph["tasks"] if "graph_out" in t["task_name"])
    assert sorted(tasks[i["task_id"]]["task_name"] for i in sink["input_tasks"]) == \
        ["Source: graph_a", "Source: graph_b"]
    assert all(op["operator_name"] and op["operator_id"] for t in graph["tasks"] for op in t["included_operators"])
    api.call("PATCH", f"{api.statements}/{name}", json=[{"op": "replace", "path": "/spec/stopped", "value": True}])
    api.wait(name, {"STOPPED"})
    error_item(api.call("GET", f"{api.statements}/{name}/task-graph"), 409)
    error_item(api.call("GET", f"{api.statements}/no-such-statement/task-graph"), 404)
