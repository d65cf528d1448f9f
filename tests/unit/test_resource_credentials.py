"""Secrets given to the Dagster resource as EnvVars reach the client, and never the run's events or logs.

Confluent Cloud itself cannot run here: `responses` stands in for it and
checks the exact request (Basic auth with the Flink key) the op sends.
"""

from __future__ import annotations

import base64
from pathlib import Path

import responses
from dagster import AssetSelection, DagsterInstance, EnvVar, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project"
KEY, SECRET = "FLINKKEY4242", "s3cr3t-VALUE-never-shown"
CONFIG = """
kafka: {cluster_id: lkc-1, cluster_type: dev}
confluent_cloud: {environment_id: env-1, region: us-east-1, provider: aws,
                  organization_id: 11111111-0000-4000-8000-000000000001}
flink: {compute_pool_id: lfcp-1, catalog_name: env-1, database_name: lkc-1}
"""
STATEMENTS = ("https://flink.us-east-1.aws.confluent.cloud/sql/v1/organizations/"
              "11111111-0000-4000-8000-000000000001/environments/env-1/statements")


@responses.activate
def test_cloud_secrets_are_used_and_never_shown(tmp_path, monkeypatch, caplog):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("TEST_FLINK_KEY", KEY)
    monkeypatch.setenv("TEST_FLINK_SECRET", SECRET)
    responses.get(STATEMENTS, status=401, json={"errors": [{"status": "401", "detail": "invalid API key"}]},
                  headers={"WWW-Authenticate": 'Basic error="invalid_key"'})
    # The first request takes the project's deployment lease (a statement): refused the same way.
    responses.post(STATEMENTS, status=401, json={"errors": [{"status": "401", "detail": "invalid API key"}]},
                   headers={"WWW-Authenticate": 'Basic error="invalid_key"'})
    resource = ConfluentFlinkResource(mode="cloud", config_file=str(config),
                                      flink_api_key=EnvVar("TEST_FLINK_KEY"),
                                      flink_api_secret=EnvVar("TEST_FLINK_SECRET"))
    instance = DagsterInstance.ephemeral()
    result = materialize(build_flink_assets(FlinkProject(SAMPLE / "pipelines")),
                         selection=AssetSelection.assets("src_table_3"),
                         resources=flink_resources(resource), instance=instance, raise_on_error=False)

    assert not result.success
    (call,) = responses.calls  # an auth error is not retried
    assert call.request.headers["Authorization"] == "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
    records = instance.all_logs(result.run_id)
    shown = "\n".join(str(r) for r in records) + caplog.text + repr(resource)
    assert "invalid API key" in shown  # the failure itself is explained
    assert SECRET not in shown
    assert base64.b64encode(f"{KEY}:{SECRET}".encode()).decode() not in shown
