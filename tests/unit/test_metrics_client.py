"""ConfluentClient.statement_metrics against a mocked Metrics API: the exact queries we send to
Confluent Cloud (URL, auth, body) and how the answers become per-statement counts."""

from __future__ import annotations

import base64
import json

import responses
from pydantic import SecretStr

from shift_left_dagster.confluent.client import ApiEndpoint, ClientSettings, ConfluentClient
from shift_left_dagster.project.config import load_config

TELEMETRY = "https://api.telemetry.confluent.cloud/v2/metrics/cloud/query"


def settings() -> ClientSettings:
    return ClientSettings(organization_id="org-1", environment_id="env-1", compute_pool_id="lfcp-1",
                          telemetry=ApiEndpoint(base_url="https://api.telemetry.confluent.cloud", api_key="CKEY",
                                                api_secret=SecretStr("csecret")))


@responses.activate
def test_one_query_per_metric_grouped_by_statement_latest_point_wins() -> None:
    answers = {
        "io.confluent.flink/num_records_in": [
            {"resource.flink_statement.name": "a", "timestamp": "2026-11-23T10:00:00Z", "value": 5.0},
            {"resource.flink_statement.name": "a", "timestamp": "2026-11-23T10:01:00Z", "value": 7.0},
            {"resource.flink_statement.name": "b", "timestamp": "2026-11-23T10:01:00Z", "value": 1.0}],
        "io.confluent.flink/num_records_out": [
            {"resource.flink_statement.name": "a", "timestamp": "2026-11-23T10:01:00Z", "value": 3.0}],
        "io.confluent.flink/pending_records": [],
    }
    sent: list[dict] = []

    def answer(request):  # type: ignore[no-untyped-def]
        body = json.loads(request.body)
        sent.append(body)
        return 200, {}, json.dumps({"data": answers[body["aggregations"][0]["metric"]]})

    responses.add_callback(responses.POST, TELEMETRY, callback=answer)
    found = ConfluentClient(settings()).statement_metrics()
    assert {name: m.model_dump() for name, m in found.items()} == {
        "a": {"records_in": 7, "records_out": 3, "pending_records": 0},
        "b": {"records_in": 1, "records_out": 0, "pending_records": 0},
    }
    assert [b["aggregations"] for b in sent] == [[{"metric": "io.confluent.flink/num_records_in"}],
                                                  [{"metric": "io.confluent.flink/num_records_out"}],
                                                  [{"metric": "io.confluent.flink/pending_records"}]]
    for body in sent:
        assert body["filter"] == {"field": "resource.compute_pool.id", "op": "EQ", "value": "lfcp-1"}
        assert body["group_by"] == ["resource.flink_statement.name"] and body["granularity"] == "PT1M"
        assert len(body["intervals"]) == 1 and "/" in body["intervals"][0]
    expected_auth = "Basic " + base64.b64encode(b"CKEY:csecret").decode()
    assert all(call.request.headers["Authorization"] == expected_auth for call in responses.calls)


def test_the_telemetry_endpoint_comes_from_the_config(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "config.yaml"
    config.write_text("confluent_cloud:\n  environment_id: env-1\n  organization_id: org-1\n  region: us-east-1\n"
                      "  provider: aws\n  telemetry_api: api.telemetry.example.com\n"
                      "flink:\n  compute_pool_id: lfcp-1\n  catalog_name: env\n  database_name: cluster\n")
    loaded = ClientSettings.from_config(load_config(config))
    assert loaded.telemetry.base_url == "https://api.telemetry.example.com"
    assert ClientSettings().telemetry.base_url == "https://api.telemetry.confluent.cloud"
