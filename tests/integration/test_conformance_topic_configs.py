"""Kafka REST v3 topic configs (reference §4, §6 kafka.* options): list, get, alter, and error bodies."""

from __future__ import annotations

import pytest

from shift_left_dagster.project.config import LOCAL_CLUSTER_ID
from tests.integration.conformance import Api, kafka_error

pytestmark = pytest.mark.service
TOPICS = f"/kafka/v3/clusters/{LOCAL_CLUSTER_ID}/topics"


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    api = Api(local_service.url)
    body = api.run("CREATE TABLE cfg_topic (k STRING) WITH ('kafka.retention.time' = '1 d', "
                   "'kafka.cleanup-policy' = 'compact')")
    assert body["status"]["phase"] == "COMPLETED"
    return api


def configs(api: Api) -> dict[str, dict]:
    response = api.call("GET", f"{TOPICS}/cfg_topic/configs")
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "KafkaTopicConfigList" and body["metadata"]["self"].endswith("/cfg_topic/configs")
    return {c["name"]: c for c in body["data"]}


def test_configs_reflect_the_table_options(api: Api) -> None:
    found = configs(api)
    retention = found["retention.ms"]
    assert retention["kind"] == "KafkaTopicConfig" and retention["topic_name"] == "cfg_topic"
    assert retention["cluster_id"] == LOCAL_CLUSTER_ID
    assert retention["value"] == str(24 * 3600 * 1000) and retention["is_default"] is False
    assert found["cleanup.policy"]["value"] == "compact"
    assert found["retention.bytes"]["is_default"] is True and found["retention.bytes"]["source"] == "DEFAULT_CONFIG"
    one = api.call("GET", f"{TOPICS}/cfg_topic/configs/retention.ms")
    assert one.status_code == 200 and one.json()["value"] == retention["value"]


def test_alter_sets_and_resets(api: Api) -> None:
    altered = api.call("POST", f"{TOPICS}/cfg_topic/configs:alter", json={"data": [
        {"name": "retention.ms", "value": "3600000"}, {"name": "max.message.bytes", "value": "1048576"}]})
    assert altered.status_code == 204 and not altered.content
    found = configs(api)
    assert found["retention.ms"]["value"] == "3600000"
    assert found["max.message.bytes"]["value"] == "1048576" and found["max.message.bytes"]["is_default"] is False
    reset = api.call("POST", f"{TOPICS}/cfg_topic/configs:alter",
                     json={"data": [{"name": "max.message.bytes", "operation": "DELETE"}]})
    assert reset.status_code == 204 and configs(api)["max.message.bytes"]["is_default"] is True
    assert api.call("PUT", f"{TOPICS}/cfg_topic/configs/segment.ms", json={"value": "1000"}).status_code == 204
    assert configs(api)["segment.ms"]["value"] == "1000"


def test_errors(api: Api) -> None:
    kafka_error(api.call("GET", f"{TOPICS}/no_such_topic/configs"), 404, 40403)
    kafka_error(api.call("GET", "/kafka/v3/clusters/lkc-nope/topics/cfg_topic/configs"), 404, 40402)
    kafka_error(api.call("POST", f"{TOPICS}/cfg_topic/configs:alter",
                         json={"data": [{"name": "no.such.config", "value": "1"}]}), 400, 40002)
    kafka_error(api.call("GET", f"{TOPICS}/cfg_topic/configs/no.such.config"), 404, 40404)
