"""Metrics API (v2, dataset `cloud`) from Confluent's reference (api.telemetry.confluent.cloud/docs): the
descriptors endpoints (`MetricDescriptor`: name, description, type, unit, lifecycle_stage, exportable,
resources, labels; `ResourceDescriptor`: type, description, labels), task-level Flink metrics grouped by
`metric.flink_task.id` as Confluent's own tools query them, and one point per `granularity` bucket of the
requested `intervals` (buckets aligned to UTC boundaries, `ALL` one bucket), each the last value in it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from shift_left_dagster.local.metrics import Sample, history, record
from tests.integration.conformance import Api, error_item
from tests.integration.support import quiesce

pytestmark = pytest.mark.service

FLINK = "io.confluent.flink/"
ALL_TIME = "2024-01-01T00:00:00Z/2100-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    return Api(local_service.url)


def query(api: Api, metric: str, statement: str, status: int = 200, **extra: object) -> dict:
    body = {"aggregations": [{"metric": FLINK + metric}], "granularity": "PT1M", "intervals": [ALL_TIME],
            "filter": {"op": "AND", "filters": [{"field": "resource.flink_statement.name", "op": "EQ",
                                                 "value": statement}]}, **extra}
    response = api.call("POST", "/v2/metrics/cloud/query", json=body)
    assert response.status_code == status, response.text
    return response.json()


def test_descriptors_list_the_served_metrics_and_resources(api: Api) -> None:
    response = api.call("GET", "/v2/metrics/cloud/descriptors/metrics")
    assert response.status_code == 200
    body = response.json()
    assert body["meta"]["pagination"]["page_size"] >= 1
    by_name = {d["name"]: d for d in body["data"]}
    for descriptor in by_name.values():  # the fields the reference marks required
        assert {"name", "description", "type", "unit", "lifecycle_stage", "exportable", "resources", "labels"} \
            <= descriptor.keys()
        assert descriptor["type"] in ("GAUGE_INT64", "GAUGE_DOUBLE", "COUNTER_INT64", "COUNTER_DOUBLE")
        assert all(label["key"] and label["description"] for label in descriptor["labels"])
    for name in ("num_records_in", "num_records_out", "pending_records", "current_input_watermark_milliseconds",
                 "task/num_records_in", "task/num_records_out"):
        assert FLINK + name in by_name, name
    assert "flink_task.id" in [label["key"] for label in by_name[FLINK + "task/num_records_in"]["labels"]]
    assert "flink_statement" in by_name[FLINK + "num_records_in"]["resources"]
    filtered = api.call("GET", "/v2/metrics/cloud/descriptors/metrics", params={"resource_type": "kafka"})
    assert filtered.json()["data"] == []
    resources = api.call("GET", "/v2/metrics/cloud/descriptors/resources").json()["data"]
    statement = next(r for r in resources if r["type"] == "flink_statement")
    assert statement["description"] and [label["key"] for label in statement["labels"]] == ["flink_statement.name"]
    error_item(api.call("GET", "/v2/metrics/nope/descriptors/metrics"), 404)


@pytest.fixture(scope="module")
def running(api: Api, local_service) -> str:  # type: ignore[no-untyped-def]
    """A running filter over 4 records that wrote 3 (the statement test below stops it: it runs last)."""
    for sql in ("CREATE TABLE metric_src (id INT)", "CREATE TABLE metric_sink (id INT)",
                "INSERT INTO metric_src VALUES (1), (2), (3), (4)"):
        api.run(sql)
    name = api.create("INSERT INTO metric_sink SELECT id FROM metric_src WHERE id > 1")
    api.wait(name, {"RUNNING"})
    quiesce(local_service.url)
    return name


def test_task_metrics_grouped_by_task_id_name_the_task_graph(api: Api, running: str, local_service) -> None:  # type: ignore[no-untyped-def]
    name = running
    graph = json.loads(api.call("GET", f"{api.statements}/{name}/task-graph").json()["Graph"])
    ids = {t["task_name"]: t["task_id"] for t in graph["tasks"]}
    source, sink = ids["Source: metric_src"], next(i for n, i in ids.items() if n.endswith("Sink: metric_sink"))

    def by_task(metric: str) -> dict[str, float]:
        body = query(api, metric, name, group_by=["metric.flink_task.id"], format="GROUPED")
        return {group["metric.flink_task.id"]: group["points"][-1]["value"] for group in body["data"]}

    assert by_task("task/num_records_in") == {source: 4.0, sink: 4.0}
    assert by_task("task/num_records_out") == {source: 4.0, sink: 3.0}
    assert by_task("num_records_in") == {source: 4.0}  # what Confluent's tools sum per statement
    assert by_task("num_records_out") == {sink: 3.0}
    # a label the metric does not carry, and a granularity or interval the API does not know: 400
    assert "group_by" in error_item(api.call("POST", "/v2/metrics/cloud/query", json={
        "aggregations": [{"metric": FLINK + "task/num_records_in"}], "granularity": "PT1M", "intervals": [ALL_TIME],
        "group_by": ["metric.table_name"]}), 400)["detail"]
    for wrong in ({"granularity": "PT2M"}, {"intervals": ["yesterday"]}, {"intervals": []},
                  {"format": "GROUPED"}):
        query(api, "num_records_in", name, status=400, **wrong)
    # the sampler keeps a history: a sample of this statement is recorded within seconds
    deadline = time.monotonic() + 30
    while not [s for _, s in history(local_service.engine.store, datetime.now(UTC) - timedelta(minutes=2),
                                     datetime.now(UTC)) if s.statement == name]:
        assert time.monotonic() < deadline, "no metric sample was recorded"
        time.sleep(0.5)


def test_watermarks_of_an_event_time_statement(api: Api, local_service) -> None:  # type: ignore[no-untyped-def]
    api.run("CREATE TABLE wm_src (id INT, ts TIMESTAMP_LTZ(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
            "DISTRIBUTED INTO 1 BUCKETS")
    api.run("CREATE TABLE wm_out (window_end TIMESTAMP(3), n BIGINT)")
    api.run("INSERT INTO wm_src VALUES (1, TO_TIMESTAMP_LTZ(1700000001000, 3)), "
            "(2, TO_TIMESTAMP_LTZ(1700000005000, 3))")
    name = api.create("INSERT INTO wm_out SELECT window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE wm_src, DESCRIPTOR(ts), "
                      "INTERVAL '1' SECOND)) GROUP BY window_start, window_end")
    api.wait(name, {"RUNNING"})
    quiesce(local_service.url)
    watermark_in = query(api, "current_input_watermark_milliseconds", name, group_by=["metric.table_name"])["data"]
    assert (watermark_in[-1]["metric.table_name"], watermark_in[-1]["value"]) == ("wm_src", 1700000004000.0)
    watermark_out = query(api, "current_output_watermark_milliseconds", name)["data"]
    assert watermark_out[-1]["value"] == 1700000004000.0  # one input: the operators emit its watermark


def test_one_point_per_granularity_bucket(api: Api, local_service) -> None:  # type: ignore[no-untyped-def]
    base = (datetime.now(UTC) - timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)  # kept history

    def at(minute: int, value: int, second: int = 0) -> None:
        sample = Sample(statement="hist", compute_pool_id="lfcp-local", metric="num_records_in", table="t",
                        value=value)
        record(local_service.engine.store, [sample], base + timedelta(minutes=minute, seconds=second))

    def stamp(minute: int) -> str:
        return (base + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")

    at(0, 1)
    at(0, 2, second=30)  # the last value of a minute wins
    at(1, 5)
    at(7, 9)
    interval = {"intervals": [f"{stamp(0)}/{stamp(10)}"]}
    flat = query(api, "num_records_in", "hist", **interval)["data"]
    assert [(p["timestamp"], p["value"]) for p in flat] == [(stamp(0), 2.0), (stamp(1), 5.0), (stamp(7), 9.0)]
    five = query(api, "num_records_in", "hist", granularity="PT5M", **interval)["data"]
    assert [(p["timestamp"], p["value"]) for p in five] == [(stamp(0), 5.0), (stamp(5), 9.0)]
    whole = query(api, "num_records_in", "hist", granularity="ALL", **interval)["data"]
    assert [(p["timestamp"], p["value"]) for p in whole] == [(stamp(0), 9.0)]
    later = query(api, "num_records_in", "hist", intervals=[f"{stamp(5)}/PT1H"])["data"]
    assert [p["value"] for p in later] == [9.0]  # <start>/<duration>
    grouped = query(api, "num_records_in", "hist", group_by=["metric.table_name"], format="GROUPED", **interval)
    assert [len(g["points"]) for g in grouped["data"]] == [3] and grouped["data"][0]["metric.table_name"] == "t"


def test_statement_metrics(api: Api, running: str) -> None:
    name = running
    # one point per minute the statement ran (a query straddling a minute has two): the last is now's value
    records_in = query(api, "num_records_in", name)
    assert records_in["data"][-1]["value"] == 4.0 and records_in["data"][-1]["timestamp"]
    assert query(api, "num_records_out", name)["data"][-1]["value"] == 3.0
    assert query(api, "pending_records", name)["data"][-1]["value"] == 0.0
    # an interval a client ends at its own now (Confluent's MCP server asks the last 5 minutes so) has now's value
    stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    assert query(api, "num_records_in", name, intervals=[f"PT5M/{stamp}"])["data"][-1]["value"] == 4.0

    api.call("PATCH", f"{api.statements}/{name}", json=[{"op": "replace", "path": "/spec/stopped", "value": True}])
    api.wait(name, {"STOPPED"})
    api.run("INSERT INTO metric_src VALUES (5), (6)")
    # shift_left's query: grouped by table, GROUPED format
    grouped = query(api, "pending_records", name, group_by=["metric.table_name"], format="GROUPED")
    assert [g["metric.table_name"] for g in grouped["data"]] == ["metric_src"]
    assert grouped["data"][0]["points"][-1]["value"] == 2.0
    by_statement = query(api, "num_records_in", name, group_by=["resource.flink_statement.name"])
    assert by_statement["data"][0]["resource.flink_statement.name"] == name
    assert "io.confluent.flink/nope" in query(api, "nope", name, status=400)["errors"][0]["detail"]
