"""The sample flink_project/config.yaml is accepted by shift_left 0.1.52's validation and by our loader.

The required fields below are those shift_left's `app_config.validate_config`
checks (0.1.51/0.1.52: kafka, confluent_cloud with cloud_region, cloud_provider
and service_account_id, flink, app), its ENV_VAR_MAPPING for keys, and its
placeholder list.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from shift_left_dagster.project.config import load_config

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project" / "config.yaml"
SHIFT_LEFT_REQUIRED = {
    "kafka": ["bootstrap.servers", "cluster_type", "cluster_id"],
    "confluent_cloud": ["environment_id", "cloud_region", "cloud_provider", "organization_id", "service_account_id"],
    "flink": ["catalog_name", "database_name", "compute_pool_id"],
    "app": ["accepted_common_products", "sql_content_modifier", "dml_naming_convention_modifier",
            "compute_pool_naming_convention_modifier"],
}
SHIFT_LEFT_NUMERIC_APP = ["delta_max_time_in_min", "max_cfu", "max_cfu_percent_before_allocation", "cache_ttl"]
PLACEHOLDERS = {"<TO_FILL>", "<kafka-api-key>", "<kafka-api-key_secret>", "<no-api-key>", "<no-key"}
# ENV_VAR_MAPPING entries that are not keys or secrets: the file itself must give them
IDS_FROM_FILE = ["kafka.cluster_id", "flink.compute_pool_id", "flink.catalog_name", "flink.database_name",
                 "confluent_cloud.cloud_provider", "confluent_cloud.cloud_region", "confluent_cloud.organization_id",
                 "confluent_cloud.environment_id", "confluent_cloud.service_account_id"]


def _strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def test_shift_left_validation_accepts_the_sample() -> None:
    config = yaml.safe_load(SAMPLE.read_text())
    missing = [f"{section}.{field}" for section, fields in SHIFT_LEFT_REQUIRED.items()
               for field in fields if not (config.get(section) or {}).get(field)]
    assert missing == []
    app = config["app"]
    assert all(isinstance(app[f], (int, float)) for f in SHIFT_LEFT_NUMERIC_APP if app.get(f) is not None)
    assert isinstance(app["accepted_common_products"], list)
    assert app.get("logging", "INFO") in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    assert not PLACEHOLDERS & set(_strings(config))
    unset = [path for path in IDS_FROM_FILE if not config[path.split(".")[0]].get(path.split(".")[1])]
    assert unset == []


def test_our_loader_accepts_the_sample_with_both_spellings() -> None:
    config = yaml.safe_load(SAMPLE.read_text())
    cloud = config["confluent_cloud"]
    assert (cloud["region"], cloud["provider"]) == (cloud["cloud_region"], cloud["cloud_provider"])
    loaded = load_config(SAMPLE, environ={})
    assert loaded.confluent_cloud.region == cloud["cloud_region"]
    assert loaded.confluent_cloud.environment_id == "env-local"
    assert loaded.kafka.rest_endpoint == "http://127.0.0.1:8084"  # Kafka REST resolves to the local service
    assert (loaded.registry.url or "").startswith("http://127.0.0.1:8084")
