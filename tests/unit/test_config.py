"""Environment config: shift_left config.yaml compatibility, env-var secrets, errors, derived URLs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shift_left_dagster.confluent.client import ClientSettings
from shift_left_dagster.project.config import (
    LOCAL_ORGANIZATION_ID,
    ConfigFileError,
    FlinkProjectConfig,
    load_config,
    local_defaults,
    parse_config,
)

# shift_left's config_tmpl.yaml, filled in (plus its many keys we do not model).
SHIFT_LEFT_CONFIG = """
kafka:
  bootstrap.servers: pkc-1.us-west-2.aws.confluent.cloud:9092
  cluster_id: lkc-jq9kq
  pkafka_cluster: pkc-gwq2v
  api_key: <kafka-api-key>
  api_secret: <kafka-api-key_secret>
  security.protocol: SASL_SSL
  sasl.mechanism: PLAIN
  session.timeout.ms: 5000
  reject_topics_prefixes: ["clone","dim_","src_"]
  cluster_type: stage
  src_topic_prefix: clone
registry:
  url: https://psrc-1.us-west-2.aws.confluent.cloud
confluent_cloud:
  base_api: api.confluent.cloud/org/v2
  environment_id: env-123
  region: us-west-2
  provider: AWS
  organization_id: 5b8c0a3e-0000-4000-8000-000000000002
  page_size: 100
flink:
  compute_pool_id: lfcp-xyz
  catalog_name: stage-env
  database_name: stage-cluster
  max_cfu: 20
  max_cfu_percent_before_allocation: .8
app:
  delta_max_time_in_min: 15
  report_output_dir: ./reports
  default_PK: __db
  timezone: America/Los_Angeles
  logging: INFO
  products: ["p1", "p2", "p3"]
  accepted_common_products: ['common', 'seeds']
  sql_content_modifier: shift_left.core.utils.table_worker.ReplaceEnvInSqlContent
  data_limit_where_condition: "where a <> b"
  schema_context: .flink-stage
"""


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_loads_a_shift_left_config_and_keeps_unknown_keys(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, SHIFT_LEFT_CONFIG), environ={})
    assert cfg.env_name == "stage"
    assert cfg.kafka.bootstrap_servers == "pkc-1.us-west-2.aws.confluent.cloud:9092"
    assert cfg.kafka.reject_topics_prefixes == ["clone", "dim_", "src_"]
    assert (cfg.kafka.model_extra or {})["security.protocol"] == "SASL_SSL"
    assert (cfg.app.model_extra or {})["sql_content_modifier"].endswith("ReplaceEnvInSqlContent")
    # app values are never placeholders
    assert (cfg.app.model_extra or {})["data_limit_where_condition"] == "where a <> b"
    assert cfg.confluent_cloud.provider == "aws" and cfg.flink.max_cfu == 20 and cfg.app.default_pk == "__db"
    # template placeholders for secrets mean "not set here"
    assert cfg.kafka.api_key is None and cfg.kafka.api_secret is None


def test_secrets_come_from_sl_environment_variables_and_win_over_the_file(tmp_path: Path) -> None:
    text = SHIFT_LEFT_CONFIG.replace("  max_cfu: 20", "  max_cfu: 20\n  api_key: FILEKEY\n  api_secret: file-secret")
    env = {"SL_FLINK_API_KEY": "ENVKEY", "SL_FLINK_API_SECRET": "env-secret",
           "SL_CONFLUENT_CLOUD_API_KEY": "CC", "SL_CONFLUENT_CLOUD_API_SECRET": "cc-secret",
           "SL_KAFKA_API_KEY": "KK", "SL_KAFKA_API_SECRET": "kk-secret",
           "SL_REGISTRY_API_KEY": "SR", "SL_REGISTRY_API_SECRET": "sr-secret"}
    cfg = load_config(write(tmp_path, text), environ=env)
    assert cfg.flink.api_key == "ENVKEY" and cfg.flink.api_secret is not None
    assert cfg.flink.api_secret.get_secret_value() == "env-secret"
    assert cfg.kafka.sasl_password is not None and cfg.kafka.sasl_password.get_secret_value() == "kk-secret"
    assert cfg.registry.registry_key_secret is not None
    assert cfg.registry.registry_key_secret.get_secret_value() == "sr-secret"
    # without the variables, the file's values are accepted (shift_left compatibility)
    from_file = load_config(write(tmp_path, text), environ={})
    assert from_file.flink.api_secret is not None and from_file.flink.api_secret.get_secret_value() == "file-secret"


def test_config_file_variable_selects_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, SHIFT_LEFT_CONFIG, "prod.yaml")
    assert load_config(environ={"CONFIG_FILE": str(path)}).flink.catalog_name == "stage-env"


def test_every_problem_is_reported_at_once_naming_the_file(tmp_path: Path) -> None:
    text = """
kafka: {cluster_type: "dev env"}
confluent_cloud: {organization_id: <TO_FILL>, region: us-east-1, provider: aws, page_size: 500, url_scope: vpn}
flink: {catalog_name: c, database_name: d, max_cfu: ten}
app: {logging: LOUD, products: p1, schema_context: flink-dev}
"""
    with pytest.raises(ConfigFileError) as info:
        load_config(write(tmp_path, text), environ={})
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'config.yaml'}: ")
    for expected in (
        "confluent_cloud.environment_id: field required",
        "confluent_cloud.organization_id: placeholder value must be replaced",
        "confluent_cloud.page_size: Input should be less than or equal to 100",
        "confluent_cloud.url_scope: Input should be 'public' or 'private'",
        "flink.max_cfu: not an integer",
        "kafka.cluster_type: must be an environment name",
        "app.logging: Input should be",
        "app.products: not a list",
        "app.schema_context: must start with '.'",
    ):
        assert expected in message
    assert len(info.value.problems) == 9


def test_error_format_is_file_then_field_path_and_message() -> None:
    raw = {"confluent_cloud": {"organization_id": "o", "region": "r", "provider": "aws"},
           "flink": {"catalog_name": "c", "database_name": "d", "max_cfu": "x"}}
    with pytest.raises(ConfigFileError) as info:
        parse_config(raw, environ={}, source="config.yaml")
    assert str(info.value) == ("config.yaml: confluent_cloud.environment_id: field required; "
                               "flink.max_cfu: not an integer")


def test_missing_sections_report_their_required_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as info:
        load_config(write(tmp_path, "app: {products: [p1]}\n"), environ={})
    assert {p.split(":")[0] for p in info.value.problems} == {
        "confluent_cloud.environment_id", "confluent_cloud.organization_id", "confluent_cloud.region",
        "confluent_cloud.provider", "flink.catalog_name", "flink.database_name"}


def test_unreadable_files_are_reported_with_their_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="nope.yaml: file not found"):
        load_config(tmp_path / "nope.yaml", environ={})
    with pytest.raises(ConfigFileError, match="not valid YAML"):
        load_config(write(tmp_path, "kafka: [unclosed\n"), environ={})
    with pytest.raises(ConfigFileError, match="top level must be a mapping"):
        load_config(write(tmp_path, "- a\n- b\n"), environ={})


def base(**sections: dict[str, object]) -> FlinkProjectConfig:
    raw: dict[str, dict[str, object]] = {
        "confluent_cloud": {"environment_id": "env-1", "organization_id": "o", "region": "us-east-2",
                            "provider": "AWS"},
        "flink": {"catalog_name": "c", "database_name": "d"},
    }
    for name, values in sections.items():
        raw[name] = {**raw.get(name, {}), **values}
    return parse_config(raw, environ={})


def test_flink_url_is_derived_from_region_and_provider() -> None:
    assert base().flink_base_url == "https://flink.us-east-2.aws.confluent.cloud"
    private = base(confluent_cloud={"url_scope": "private"})
    assert private.flink_base_url == "https://flink.us-east-2.aws.private.confluent.cloud"
    explicit = base(flink={"flink_url": "flink.pr1jy6.us-east-2.aws.confluent.cloud"})
    assert explicit.flink_base_url == "https://flink.pr1jy6.us-east-2.aws.confluent.cloud"
    template = base(flink={"flink_url": "<>.confluent.cloud"})  # shift_left's template placeholder: derive
    assert template.flink_base_url == "https://flink.us-east-2.aws.confluent.cloud"


def test_other_api_urls() -> None:
    cfg = base(kafka={"pkafka_cluster": "pkc-9"}, registry={"url": "https://psrc-1.us-east-2.aws.confluent.cloud/"})
    assert cfg.cloud_api_url == "https://api.confluent.cloud"
    assert cfg.kafka_rest_url == "https://pkc-9.us-east-2.aws.confluent.cloud"
    assert cfg.registry_url == "https://psrc-1.us-east-2.aws.confluent.cloud"
    assert base(kafka={"rest_endpoint": "https://pkc-1.x.confluent.cloud:443"}).kafka_rest_url == "https://pkc-1.x.confluent.cloud:443"
    assert base().kafka_rest_url is None and base().registry_url is None


def test_environment_naming_options() -> None:
    cfg = base(kafka={"cluster_type": "prod"}, app={"schema_context": ".flink-prod"})
    assert cfg.env_name == "prod" and cfg.app.schema_context == ".flink-prod"
    assert base().app.schema_context is None and base().env_name == "dev"
    assert cfg.statement_properties() == {"sql.current-catalog": "c", "sql.current-database": "d"}
    with pytest.raises(ConfigFileError, match="app.table_prefix: is not applied"):
        base(app={"table_prefix": "stg_"})
    assert base(app={"table_prefix": ""}).app.table_prefix == ""  # shift_left files may carry it empty
    with pytest.raises(ConfigFileError, match="app.schema_context: must start with"):
        base(app={"schema_context": "flink-dev"})


def test_local_defaults_point_every_api_at_the_local_service() -> None:
    cfg = local_defaults("http://127.0.0.1:9999")
    assert cfg.confluent_cloud.environment_id == "env-local"
    assert cfg.confluent_cloud.organization_id == LOCAL_ORGANIZATION_ID == "00000000-0000-4000-8000-000000000000"
    assert (cfg.kafka.cluster_id, cfg.flink.compute_pool_id) == ("lkc-local", "lfcp-local")
    assert (cfg.flink.catalog_name, cfg.flink.database_name) == ("env-local", "lkc-local")
    settings = ClientSettings.from_config(cfg)
    urls = {settings.flink.base_url, settings.cloud.base_url, settings.kafka.base_url,
            settings.schema_registry.base_url}
    assert urls == {"http://127.0.0.1:9999"}


def test_client_settings_from_a_cloud_config(tmp_path: Path) -> None:
    env = {"SL_FLINK_API_KEY": "FK", "SL_FLINK_API_SECRET": "fs"}
    settings = ClientSettings.from_config(load_config(write(tmp_path, SHIFT_LEFT_CONFIG), environ=env))
    assert settings.flink.base_url == "https://flink.us-west-2.aws.confluent.cloud"
    assert settings.flink.api_secret is not None and settings.flink.api_secret.get_secret_value() == "fs"
    assert settings.cloud.base_url == "https://api.confluent.cloud" and settings.cloud.api_key is None
    assert settings.kafka.base_url == "https://pkc-gwq2v.us-west-2.aws.confluent.cloud"
    assert settings.statement_properties == {"sql.current-catalog": "stage-env",
                                             "sql.current-database": "stage-cluster"}
    assert (settings.compute_pool_id, settings.kafka_cluster_id) == ("lfcp-xyz", "lkc-jq9kq")


def test_template_yaml_parses_as_documented() -> None:
    # guard: the fixture above is real YAML with the dotted keys shift_left uses
    assert "bootstrap.servers" in yaml.safe_load(SHIFT_LEFT_CONFIG)["kafka"]


def test_health_thresholds_default_and_per_table_overrides() -> None:
    raw = yaml.safe_load(SHIFT_LEFT_CONFIG)
    assert parse_config(raw, {}).health.for_table("fct_order").model_dump() == {
        "max_pending_records": 10000, "growing_observations": 5, "stalled_minutes": 10.0}
    raw["health"] = {"max_pending_records": 50, "tables": {"fct_order": {"stalled_minutes": 2}}}
    health = parse_config(raw, {}).health
    assert health.for_table("fct_order").model_dump() == {
        "max_pending_records": 50, "growing_observations": 5, "stalled_minutes": 2.0}
    assert health.for_table("src_orders").stalled_minutes == 10.0


@pytest.mark.parametrize(("section", "message"), [
    ({"max_pending_records": "many"}, "cfg.yaml: health.max_pending_records: not an integer"),
    ({"growing_observations": 1}, "cfg.yaml: health.growing_observations: Input should be greater than or equal to 2"),
    ({"tables": {"fct_order": {"stalled_minute": 3}}},
     "cfg.yaml: health.tables.fct_order: unknown field stalled_minute (known: max_pending_records, "
     "growing_observations, stalled_minutes)"),
])
def test_a_bad_health_threshold_is_one_line_naming_the_field(section: dict, message: str) -> None:
    raw = {**yaml.safe_load(SHIFT_LEFT_CONFIG), "health": section}
    with pytest.raises(ConfigFileError) as info:
        parse_config(raw, {}, source="cfg.yaml")
    assert str(info.value) == message
