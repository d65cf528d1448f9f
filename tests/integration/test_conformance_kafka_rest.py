"""Kafka REST v3 writes, from Confluent's API reference: create a topic (`POST .../topics`: 201 with the
KafkaTopic, 400 error 40002 for a topic that exists) and produce a record (`POST .../topics/{t}/records`:
a delivery report with `error_code` 200, partition and offset), JSON values as Confluent Cloud takes them
and AVRO / JSONSCHEMA data through a registered schema id or subject as the REST Proxy v3 does. A produced
record lands in the table's log: queries and running statements read it."""

from __future__ import annotations

import base64
import json
import time

import pytest

from shift_left_dagster.project.config import LOCAL_CLUSTER_ID
from tests.integration.conformance import Api, kafka_error
from tests.integration.support import quiesce

pytestmark = pytest.mark.service

TOPICS = f"/kafka/v3/clusters/{LOCAL_CLUSTER_ID}/topics"
AVRO = {"type": "record", "name": "rest_avro_value", "fields": [
    {"name": "id", "type": "int"}, {"name": "name", "type": ["null", "string"], "default": None}]}
JSON_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
               "required": ["id"]}


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    return Api(local_service.url)


def produce(api: Api, topic: str, value: dict, key: dict | None = None, status: int = 200) -> dict:
    body = {"value": value, **({"key": key} if key else {})}
    response = api.call("POST", f"{TOPICS}/{topic}/records", json=body)
    assert response.status_code == status, response.text
    return response.json()


def test_create_topic_then_errors(api: Api) -> None:
    created = api.call("POST", TOPICS, json={"topic_name": "rest_created", "partitions_count": 3,
                                             "configs": [{"name": "retention.ms", "value": "3600000"}]})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["kind"] == "KafkaTopic" and body["topic_name"] == "rest_created" and body["partitions_count"] == 3
    assert api.call("GET", f"{TOPICS}/rest_created").json()["partitions_count"] == 3
    assert "rest_created" in [t["topic_name"] for t in api.call("GET", TOPICS).json()["data"]]
    assert api.call("GET", f"{TOPICS}/rest_created/configs/retention.ms").json()["value"] == "3600000"
    assert "already exists" in kafka_error(api.call("POST", TOPICS, json={"topic_name": "rest_created"}), 400, 40002)
    kafka_error(api.call("POST", TOPICS, json={"topic_name": "bad name!"}), 400, 40002)
    kafka_error(api.call("POST", TOPICS, json={"partitions_count": 1}), 400, 400)  # topic_name is required
    kafka_error(api.call("POST", "/kafka/v3/clusters/lkc-nope/topics", json={"topic_name": "x"}), 404, 40402)
    dry = api.call("POST", TOPICS, json={"topic_name": "rest_dry", "validate_only": True})
    assert dry.status_code == 201
    kafka_error(api.call("GET", f"{TOPICS}/rest_dry"), 404, 40403)


def test_produce_json_to_a_topic_without_schema_lands_in_its_val_bytes(api: Api) -> None:
    api.call("POST", TOPICS, json={"topic_name": "rest_raw_bytes", "partitions_count": 1})
    report = produce(api, "rest_raw_bytes", {"type": "JSON", "data": {"a": 1}}, key={"type": "STRING", "data": "k1"})
    assert report["error_code"] == 200 and report["topic_name"] == "rest_raw_bytes"
    assert report["cluster_id"] == LOCAL_CLUSTER_ID and report["partition_id"] == 0 and report["offset"] == 0
    assert report["value"] == {"type": "JSON", "size": len(b'{"a": 1}')} and report["timestamp"]
    assert produce(api, "rest_raw_bytes", {"type": "JSON", "data": {"a": 2}})["offset"] == 1
    kafka_error(api.call("GET", "/subjects/rest_raw_bytes-value/versions"), 404, 40401)  # no schema, no subject
    _, rows = api.query("SELECT CAST(key AS STRING), CAST(val AS STRING) FROM rest_raw_bytes")
    assert rows == [["k1", '{"a": 1}'], [None, '{"a": 2}']]


def test_streaming_mode_answers_one_delivery_report_per_record_in_order(api: Api) -> None:
    """The reference's streaming mode: records sent as concatenated JSON, a delivery report for each, in
    order, each with its own error_code (HTTP 200 as long as the request was taken)."""
    api.run("CREATE TABLE rest_stream (id INT NOT NULL, label STRING)")
    body = "".join(json.dumps({"value": {"type": "JSON", "data": data}}) + "\n"
                   for data in ({"id": 1, "label": "a"}, {"label": "no id"}, {"id": 2}))
    response = api.call("POST", f"{TOPICS}/rest_stream/records", data=body,
                        headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    decoder, reports, at = json.JSONDecoder(), [], 0
    text = response.text
    while text[at:].strip():
        report, at = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
        reports.append(report)
    assert [r["error_code"] for r in reports] == [200, 400, 200]
    assert "id" in reports[1]["message"] and [r["offset"] for r in (reports[0], reports[2])] in ([0, 1], [0, 0])
    _, rows = api.query("SELECT id, label FROM rest_stream")
    assert sorted(rows, key=str) == [["1", "a"], ["2", None]]


def test_produce_json_into_a_table_and_its_errors(api: Api) -> None:
    api.run("CREATE TABLE rest_orders (id INT NOT NULL, name STRING, amount DECIMAL(10, 2), "
            "ts TIMESTAMP_LTZ(3), PRIMARY KEY (id) NOT ENFORCED)")
    report = produce(api, "rest_orders", {"type": "JSON", "data": {"Name": "a", "amount": "12.50",  # any case
                                                                    "ts": "2024-05-01T10:00:00Z"}},
                     key={"type": "JSON", "data": {"id": 7}})
    assert report["error_code"] == 200 and 0 <= report["partition_id"] < 6
    _, rows = api.query("SELECT id, name, amount, CAST(ts AS STRING) FROM rest_orders")
    assert rows == [["7", "a", "12.50", "2024-05-01 10:00:00.000"]]
    assert "'nope'" in kafka_error(api.call("POST", f"{TOPICS}/rest_orders/records", json={
        "value": {"type": "JSON", "data": {"nope": 1}}}), 400, 400)
    assert "'id'" in kafka_error(api.call("POST", f"{TOPICS}/rest_orders/records", json={
        "value": {"type": "JSON", "data": {"id": "x"}}}), 400, 400)
    assert "id" in kafka_error(api.call("POST", f"{TOPICS}/rest_orders/records", json={
        "value": {"type": "JSON", "data": {"name": "no key"}}}), 400, 400)  # the NOT NULL key is missing
    kafka_error(api.call("POST", f"{TOPICS}/no_such_topic/records", json={"value": {"data": {}}}), 404, 40403)
    assert "partition_id" in kafka_error(api.call("POST", f"{TOPICS}/rest_orders/records", json={
        "partition_id": 1, "value": {"type": "JSON", "data": {"id": 8}}}), 400, 400)  # not served: said so
    kafka_error(api.call("POST", f"{TOPICS}/rest_orders/records", data="{not json"), 400, 400)


def test_avro_and_json_schema_values_through_the_registry(api: Api) -> None:
    schema_id = api.call("POST", "/subjects/rest_avro-value/versions", json={"schema": json.dumps(AVRO)}).json()["id"]
    assert api.call("POST", TOPICS, json={"topic_name": "rest_avro"}).status_code == 201
    # the topic's table takes its columns from the value subject's schema
    union = {"string": "x"}  # the Avro JSON encoding of a union's branch
    produce(api, "rest_avro", {"type": "AVRO", "subject": "rest_avro-value", "data": {"id": 1, "name": union}})
    produce(api, "rest_avro", {"type": "AVRO", "schema_id": schema_id, "data": {"id": 2}})
    # Confluent Cloud's way (its produce API takes no schema): BINARY data in the Schema Registry wire format,
    # magic byte 0, the schema id, then Avro binary: id 3 is zig-zag 0x06, union branch 1 is 0x02, "wire" is
    # its length (zig-zag 0x08) and its bytes
    wire = bytes([0]) + schema_id.to_bytes(4, "big") + b"\x06\x02\x08wire"
    produce(api, "rest_avro", {"type": "BINARY", "data": base64.b64encode(wire).decode()})
    _, rows = api.query("SELECT id, name FROM rest_avro")
    assert sorted(rows) == [["1", "x"], ["2", None], ["3", "wire"]]
    not_wire = base64.b64encode(b"plain bytes").decode()
    assert "wire format" in kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "BINARY", "data": not_wire}}), 400, 400)
    unknown = base64.b64encode(bytes([0]) + (987654321).to_bytes(4, "big") + b"\x06").decode()
    kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "BINARY", "data": unknown}}), 404, 40403)
    assert "'extra'" in kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "AVRO", "schema_id": schema_id, "data": {"id": 3, "extra": 1}}}), 400, 400)
    assert "'id'" in kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "AVRO", "schema_id": schema_id, "data": {"name": "no id"}}}), 400, 400)
    kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "AVRO", "schema_id": 987654321, "data": {"id": 4}}}), 404, 40403)
    kafka_error(api.call("POST", f"{TOPICS}/rest_avro/records", json={
        "value": {"type": "AVRO", "subject": "no-such-subject", "data": {"id": 4}}}), 404, 40401)

    js = api.call("POST", "/subjects/rest_js-value/versions",
                  json={"schema": json.dumps(JSON_SCHEMA), "schemaType": "JSON"}).json()["id"]
    api.call("POST", TOPICS, json={"topic_name": "rest_js"})
    produce(api, "rest_js", {"type": "JSONSCHEMA", "schema_id": js, "data": {"id": 5, "note": "n"}})
    assert "is AVRO" in kafka_error(api.call("POST", f"{TOPICS}/rest_js/records", json={
        "value": {"type": "JSONSCHEMA", "schema_id": schema_id, "data": {"id": 5}}}), 400, 400)
    wire_json = bytes([0]) + js.to_bytes(4, "big") + json.dumps({"id": 6, "note": "w"}).encode()
    produce(api, "rest_js", {"type": "BINARY", "data": base64.b64encode(wire_json).decode()})
    _, rows = api.query("SELECT id, note FROM rest_js")
    assert sorted(rows) == [["5", "n"], ["6", "w"]]


def test_a_running_statement_reads_a_produced_record_within_a_second(api: Api, local_service) -> None:  # type: ignore[no-untyped-def]
    """The must-show: a raw topic seeded by REST produce is read by a running statement at once."""
    api.run("CREATE TABLE rest_feed (id INT, label STRING)")
    api.run("CREATE TABLE rest_feed_copy (id INT, label STRING)")
    name = api.create("INSERT INTO rest_feed_copy SELECT * FROM rest_feed")
    api.wait(name, {"RUNNING"})
    quiesce(local_service.url)  # the statement's first runs are done: it waits for input
    figures = []
    for i in range(4):  # the first is the statement's first run over records (Spark plans and compiles it)
        produce(api, "rest_feed", {"type": "JSON", "data": {"id": i, "label": f"r{i}"}})
        produced = time.monotonic()
        while records_in(api, name) < i + 1:
            assert time.monotonic() - produced < 30, "the running statement never read the produced record"
            time.sleep(0.05)
        figures.append(time.monotonic() - produced)
    print(f"produce -> read by a running statement: first {figures[0]:.3f} s, then "
          f"{', '.join(f'{f:.3f}' for f in figures[1:])} s")
    # within a second once running; the 2-core machine is shared: the best of three must be, the median
    # within a margin
    warm = sorted(figures[1:])
    assert warm[0] < 1.0 and warm[1] < 2.0, figures
    _, rows = api.query("SELECT id, label FROM rest_feed_copy")
    assert sorted(rows) == [["0", "r0"], ["1", "r1"], ["2", "r2"], ["3", "r3"]]


def records_in(api: Api, statement: str) -> float:
    query = {"aggregations": [{"metric": "io.confluent.flink/num_records_in"}], "granularity": "PT1M",
             "filter": {"field": "resource.flink_statement.name", "op": "EQ", "value": statement},
             "intervals": ["2024-01-01T00:00:00Z/2100-01-01T00:00:00Z"]}
    data = api.call("POST", "/v2/metrics/cloud/query", json=query).json()["data"]
    return max((p["value"] for p in data), default=0.0)
