"""Schema Registry subjects and versions (reference §4 and the registry's REST API): paths, bodies,
soft/permanent deletes and `{error_code, message}` errors."""

from __future__ import annotations

import json

import pytest

from tests.integration.conformance import Api, kafka_error

pytestmark = pytest.mark.service

V2 = json.dumps({"type": "record", "name": "sr_topic_value", "fields": [
    {"name": "v", "type": ["null", "string"], "default": None},
    {"name": "extra", "type": ["null", "long"], "default": None}]})


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    api = Api(local_service.url)
    body = api.run("CREATE TABLE sr_topic (k STRING, v STRING, n INT NOT NULL, PRIMARY KEY (k) NOT ENFORCED)")
    assert body["status"]["phase"] == "COMPLETED"
    return api


def test_a_table_subject_has_version_one_with_its_avro_schema(api: Api) -> None:
    assert api.call("GET", "/subjects/sr_topic-value/versions").json() == [1]
    latest = api.call("GET", "/subjects/sr_topic-value/versions/latest")
    assert latest.status_code == 200
    body = latest.json()
    assert body["subject"] == "sr_topic-value" and body["version"] == 1 and isinstance(body["id"], int)
    schema = json.loads(body["schema"])  # the schema is a JSON document inside a string
    assert schema["type"] == "record"
    # value.fields-include defaults to except-key: the key column is in the key subject only
    assert [f["name"] for f in schema["fields"]] == ["v", "n"]
    assert next(f for f in schema["fields"] if f["name"] == "n")["type"] == "int"
    key = json.loads(api.call("GET", "/subjects/sr_topic-key/versions/1").json()["schema"])
    assert [f["name"] for f in key["fields"]] == ["k"]
    assert api.call("GET", "/subjects/sr_topic-value/versions/-1").json() == body  # -1 means latest
    assert json.loads(body["schema"]) == api.call("GET", "/subjects/sr_topic-value/versions/1/schema").json()
    assert api.call("GET", f"/schemas/ids/{body['id']}").json() == {"schema": body["schema"]}


def test_register_lists_and_is_idempotent(api: Api) -> None:
    first = api.call("POST", "/subjects/sr_topic-value/versions", json={"schema": V2})
    assert first.status_code == 200 and isinstance(first.json()["id"], int)
    again = api.call("POST", "/subjects/sr_topic-value/versions", json={"schema": V2, "schemaType": "AVRO"})
    assert again.json() == first.json()
    assert api.call("GET", "/subjects/sr_topic-value/versions").json() == [1, 2]
    assert api.call("GET", "/subjects/sr_topic-value/versions/latest").json()["version"] == 2
    fresh = api.call("POST", "/subjects/sr-free-subject/versions", json={"schema": V2})
    assert fresh.json() == first.json()  # the same schema has the same id under every subject
    assert "sr-free-subject" in api.call("GET", "/subjects").json()
    kafka_error(api.call("POST", "/subjects/sr-free-subject/versions", json={"schema": "{not json"}), 422, 42201)


def test_version_deletes_soft_then_permanent(api: Api) -> None:
    api.call("POST", "/subjects/sr-del/versions", json={"schema": json.dumps({"type": "string"})})
    api.call("POST", "/subjects/sr-del/versions", json={"schema": json.dumps({"type": "long"})})
    early = api.call("DELETE", "/subjects/sr-del/versions/2", params={"permanent": "true"})
    assert "not deleted first" in kafka_error(early, 404, 40407)
    soft = api.call("DELETE", "/subjects/sr-del/versions/2")
    assert soft.status_code == 200 and soft.json() == 2
    assert api.call("GET", "/subjects/sr-del/versions").json() == [1]
    assert api.call("GET", "/subjects/sr-del/versions", params={"deleted": "true"}).json() == [1, 2]
    kafka_error(api.call("DELETE", "/subjects/sr-del/versions/2"), 404, 40406)
    assert api.call("DELETE", "/subjects/sr-del/versions/2", params={"permanent": "true"}).json() == 2
    assert api.call("GET", "/subjects/sr-del/versions", params={"deleted": "true"}).json() == [1]


def test_subject_deletes_and_errors(api: Api) -> None:
    api.call("POST", "/subjects/sr-gone/versions", json={"schema": json.dumps({"type": "int"})})
    kafka_error(api.call("DELETE", "/subjects/sr-gone", params={"permanent": "true"}), 404, 40405)
    assert api.call("DELETE", "/subjects/sr-gone").json() == [1]
    assert "sr-gone" not in api.call("GET", "/subjects").json()
    assert "sr-gone" in api.call("GET", "/subjects", params={"deleted": "true"}).json()
    kafka_error(api.call("GET", "/subjects/sr-gone/versions"), 404, 40401)
    assert api.call("DELETE", "/subjects/sr-gone", params={"permanent": "true"}).json() == [1]
    kafka_error(api.call("GET", "/subjects/sr-gone/versions", params={"deleted": "true"}), 404, 40401)
    kafka_error(api.call("GET", "/subjects/no-such-subject/versions"), 404, 40401)
    kafka_error(api.call("GET", "/subjects/sr_topic-value/versions/99"), 404, 40402)
    kafka_error(api.call("GET", "/subjects/sr_topic-value/versions/abc"), 422, 42202)
    kafka_error(api.call("GET", "/subjects/sr_topic-value/versions/0"), 422, 42202)
    kafka_error(api.call("GET", "/schemas/ids/987654321"), 404, 40403)


def test_dropping_the_table_removes_its_subjects(api: Api) -> None:
    api.run("CREATE TABLE sr_dropped (k STRING)")
    assert api.call("GET", "/subjects/sr_dropped-value/versions").json() == [1]
    api.run("DROP TABLE sr_dropped")
    kafka_error(api.call("GET", "/subjects/sr_dropped-value/versions"), 404, 40401)


def test_a_subject_whose_every_version_is_soft_deleted_is_gone_until_asked_for(api: Api) -> None:
    """The registry's reference: a soft-deleted version is seen only with `deleted=true`; a subject
    with no live version is not listed, and its versions and `latest` answer 40401."""
    api.call("POST", "/subjects/sr-only/versions", json={"schema": json.dumps({"type": "double"})})
    assert api.call("DELETE", "/subjects/sr-only/versions/1").json() == 1
    assert "sr-only" not in api.call("GET", "/subjects").json()
    assert "sr-only" in api.call("GET", "/subjects", params={"deleted": "true"}).json()
    kafka_error(api.call("GET", "/subjects/sr-only/versions"), 404, 40401)
    kafka_error(api.call("GET", "/subjects/sr-only/versions/latest"), 404, 40401)
    assert api.call("GET", "/subjects/sr-only/versions", params={"deleted": "true"}).json() == [1]
    assert api.call("GET", "/subjects/sr-only/versions/1", params={"deleted": "true"}).json()["version"] == 1
    assert api.call("DELETE", "/subjects/sr-only/versions/1", params={"permanent": "true"}).json() == 1
    assert "sr-only" not in api.call("GET", "/subjects", params={"deleted": "true"}).json()
