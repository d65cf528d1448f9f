"""Environment configuration, compatible with shift_left's ``config.yaml``.

One file per target environment (dev, stage, prod). The file is the one
shift_left reads (sections kafka, registry, confluent_cloud, flink, app);
unknown keys are kept, since shift_left configs carry many.

Secrets come from environment variables, with shift_left's names:

==============================  ==========================================
SL_FLINK_API_KEY / _SECRET      flink.api_key / flink.api_secret
SL_CONFLUENT_CLOUD_API_KEY/...  confluent_cloud.api_key / api_secret
SL_KAFKA_API_KEY / _SECRET      kafka.api_key / api_secret (and sasl.*)
SL_REGISTRY_API_KEY / _SECRET   registry.registry_key_name / _secret
==============================  ==========================================

shift_left defines no variable for Schema Registry; ``SL_REGISTRY_*``
follows its ``SL_<SECTION>_API_KEY`` pattern. Values in the file are still
accepted (shift_left compatibility) but the variables win and are the way.
Secrets are ``SecretStr``: they never show in repr, str or dumps.

Per-environment choices this project adds (all optional, under ``app``):

* ``app.schema_context`` -- the Schema Registry context (``.flink-dev``) put
  in every deployed CREATE TABLE whose key/value format uses the registry,
  as ``key/value.<format>.schema-context`` (shift_left's schema-context
  rule; deploy/rewrite.py). The git files are not rewritten.
* ``app.table_prefix`` is refused unless empty: shift_left applies no table
  prefix (its names come from the pipelines folder; environments differ by
  cluster and schema context), and a prefix this project would not apply
  must not be accepted silently. shift_left's ``kafka.src_topic_prefix`` is
  kept as data only: its meaning in shift_left (rewriting *external* source
  topics to ``<prefix>.<env>.<topic>`` by regex) is specific to its own SQL
  modifier and is not applied here.

The environment's name is ``kafka.cluster_type`` (dev, stage, prod).

Optional ``health`` section (the health sensor's ``statement_lag`` and
``statement_stalled`` checks), with per-table overrides under ``tables``::

    health:
      max_pending_records: 10000   # lag: red above this many records not read yet
      growing_observations: 5      # lag: red when pending grew at each of the last 5 sensor ticks
      stalled_minutes: 10          # stalled: red when no record came out for 10 minutes while records came in
      tables:
        fct_order: {max_pending_records: 500}
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from shift_left_dagster.project.errors import ConfigFileError

CONFIG_FILE_ENV = "CONFIG_FILE"
DEFAULT_CONFIG_FILE = "config.yaml"

# (section, key) -> environment variable: shift_left's ENV_VAR_MAPPING plus SR.
SECRET_ENV_VARS: dict[tuple[str, str], str] = {
    ("kafka", "api_key"): "SL_KAFKA_API_KEY",
    ("kafka", "api_secret"): "SL_KAFKA_API_SECRET",
    ("kafka", "sasl.username"): "SL_KAFKA_API_KEY",
    ("kafka", "sasl.password"): "SL_KAFKA_API_SECRET",
    ("confluent_cloud", "api_key"): "SL_CONFLUENT_CLOUD_API_KEY",
    ("confluent_cloud", "api_secret"): "SL_CONFLUENT_CLOUD_API_SECRET",
    ("flink", "api_key"): "SL_FLINK_API_KEY",
    ("flink", "api_secret"): "SL_FLINK_API_SECRET",
    ("registry", "registry_key_name"): "SL_REGISTRY_API_KEY",
    ("registry", "registry_key_secret"): "SL_REGISTRY_API_SECRET",
}

# The embedded local service: fixed identities so every run agrees on them.
LOCAL_ORGANIZATION_ID = "00000000-0000-4000-8000-000000000000"
LOCAL_ENVIRONMENT_ID = "env-local"
LOCAL_CLUSTER_ID = "lkc-local"
LOCAL_COMPUTE_POOL_ID = "lfcp-local"
LOCAL_BASE_URL = "http://127.0.0.1:8084"
LOCAL_API_KEY = "local"
LOCAL_API_SECRET = "local"
LOCAL_API_KEY_ENV = "SHIFT_LEFT_LOCAL_API_KEY"
LOCAL_API_SECRET_ENV = "SHIFT_LEFT_LOCAL_API_SECRET"


def local_credentials() -> tuple[str, str]:
    """The key/secret pair of the local service (the environment overrides the fixed local pair)."""
    return os.environ.get(LOCAL_API_KEY_ENV, LOCAL_API_KEY), os.environ.get(LOCAL_API_SECRET_ENV, LOCAL_API_SECRET)

_SECTIONS = ("kafka", "registry", "confluent_cloud", "flink", "app")
# shift_left template placeholders: "<TO_FILL>", "env-<TO_FILL>", "<kafka-api-key>", "<>.confluent.cloud",
# "<no-key". Not looked for under app, whose values may be SQL ("a <> b").
_PLACEHOLDER = re.compile(r"<TO_FILL>|^<[^<>\s]*(>|$)")
_SECRET_KEY = re.compile(r"secret|password|token|credential", re.IGNORECASE)


class _Section(BaseModel):
    """Keeps unknown keys; an unknown key that looks secret is masked as SecretStr."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @model_validator(mode="after")
    def _mask_unknown_secrets(self) -> _Section:
        extra = self.__pydantic_extra__ or {}
        for key, value in extra.items():
            if _SECRET_KEY.search(key) and isinstance(value, str):
                extra[key] = SecretStr(value)
        return self


class KafkaSection(_Section):
    bootstrap_servers: str | None = Field(default=None, alias="bootstrap.servers")
    cluster_id: str | None = None
    cluster_type: str = "dev"
    pkafka_cluster: str | None = None
    rest_endpoint: str | None = None
    src_topic_prefix: str = "clone"
    reject_topics_prefixes: list[str] = Field(default_factory=list)
    api_key: str | None = None
    api_secret: SecretStr | None = None
    sasl_username: str | None = Field(default=None, alias="sasl.username")
    sasl_password: SecretStr | None = Field(default=None, alias="sasl.password")

    @field_validator("cluster_type")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", value):
            raise ValueError("must be an environment name such as dev, stage or prod")
        return value


class RegistrySection(_Section):
    url: str | None = None
    registry_key_name: str | None = None
    registry_key_secret: SecretStr | None = None


class ConfluentCloudSection(_Section):
    environment_id: str
    organization_id: str
    region: str
    provider: str
    base_api: str = "api.confluent.cloud/org/v2"
    telemetry_api: str = "api.telemetry.confluent.cloud"  # the Metrics API (records in/out, pending records)
    page_size: int = Field(default=100, ge=1, le=100)
    # shift_left defaults url_scope to "private"; a private URL does not resolve
    # outside private networking, so the safe reading is public unless stated.
    url_scope: Literal["public", "private"] = "public"
    api_key: str | None = None
    api_secret: SecretStr | None = None

    @field_validator("provider")
    @classmethod
    def _lower_provider(cls, value: str) -> str:
        return value.lower()


class FlinkSection(_Section):
    flink_url: str | None = None
    compute_pool_id: str | None = None
    catalog_name: str
    database_name: str
    max_cfu: int = Field(default=10, ge=1)
    max_cfu_percent_before_allocation: float = 0.8
    api_key: str | None = None
    api_secret: SecretStr | None = None


class AppSection(_Section):
    products: list[str] = Field(default_factory=list)
    accepted_common_products: list[str] = Field(default_factory=lambda: ["common", "seeds"])
    default_pk: str = Field(default="__db", alias="default_PK")
    timezone: str = "America/Los_Angeles"
    logging: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    report_output_dir: str = "./reports"
    table_prefix: str = ""
    schema_context: str | None = None
    project_name: str | None = None  # the project's identity: its lease, labels, housekeeping scope

    @field_validator("table_prefix")
    @classmethod
    def _no_prefix(cls, value: str) -> str:
        if value:
            raise ValueError("is not applied (shift_left has no table prefix: table names come from the "
                             "pipelines folder); remove it, and tell environments apart with kafka.cluster_type "
                             "and app.schema_context")
        return value

    @field_validator("project_name")
    @classmethod
    def _names_statements(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", value):
            raise ValueError("must be lowercase letters, digits and '-' (at most 40), e.g. sales: it names the "
                             "project's lease statement and labels its statements")
        return value

    @field_validator("schema_context")
    @classmethod
    def _dotted_context(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\.[A-Za-z0-9_.-]*", value):
            raise ValueError("must start with '.', e.g. .flink-dev")
        return value


class HealthThresholds(BaseModel):
    """When a running statement counts as behind (`statement_lag`) or stalled (`statement_stalled`)."""

    max_pending_records: int = Field(default=10_000, ge=0)
    growing_observations: int = Field(default=5, ge=2)
    stalled_minutes: float = Field(default=10.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        return _only_thresholds(data, cls.model_fields)


class HealthOverride(BaseModel):
    """One table's thresholds that differ from the section's."""

    max_pending_records: int | None = Field(default=None, ge=0)
    growing_observations: int | None = Field(default=None, ge=2)
    stalled_minutes: float | None = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        return _only_thresholds(data, cls.model_fields)


class HealthSection(HealthThresholds):
    """The thresholds for every table, and per-table overrides (`tables: {name: {field: value}}`)."""

    tables: dict[str, HealthOverride] = Field(default_factory=dict)

    def for_table(self, table: str) -> HealthThresholds:
        override = self.tables.get(table, HealthOverride())
        return HealthThresholds.model_validate({**self.model_dump(exclude={"tables"}),
                                                **override.model_dump(exclude_none=True)})


def _only_thresholds(data: Any, fields: Mapping[str, Any]) -> Any:
    """A misspelt threshold would silently keep the default: refused, naming it."""
    if isinstance(data, dict):
        known = list(HealthThresholds.model_fields)
        unknown = [str(k) for k in data if k not in fields]
        if unknown:
            raise ValueError(f"unknown field {', '.join(unknown)} (known: {', '.join(known)})")
    return data


class FlinkProjectConfig(BaseModel):
    """One target environment: where statements run, with which names and options."""

    model_config = ConfigDict(extra="allow")

    kafka: KafkaSection = Field(default_factory=KafkaSection)
    registry: RegistrySection = Field(default_factory=RegistrySection)
    confluent_cloud: ConfluentCloudSection
    flink: FlinkSection
    app: AppSection = Field(default_factory=AppSection)
    health: HealthSection = Field(default_factory=HealthSection)

    @property
    def env_name(self) -> str:
        return self.kafka.cluster_type

    @property
    def flink_base_url(self) -> str:
        """``flink.flink_url``, else ``https://flink.{region}.{provider}[.private].confluent.cloud``."""
        if self.flink.flink_url:
            return _origin(self.flink.flink_url)
        scope = ".private" if self.confluent_cloud.url_scope == "private" else ""
        cc = self.confluent_cloud
        return f"https://flink.{cc.region}.{cc.provider}{scope}.confluent.cloud"

    @property
    def cloud_api_url(self) -> str:
        """Origin of ``confluent_cloud.base_api`` (shift_left stores ``api.confluent.cloud/org/v2``)."""
        return _origin(self.confluent_cloud.base_api)

    @property
    def telemetry_url(self) -> str:
        """Origin of ``confluent_cloud.telemetry_api``: Confluent's Metrics API, with the Cloud API key."""
        return _origin(self.confluent_cloud.telemetry_api)

    @property
    def kafka_rest_url(self) -> str | None:
        """``kafka.rest_endpoint``, else as shift_left: ``https://{pkafka_cluster}.{region}.{provider}.confluent.cloud``."""
        if self.kafka.rest_endpoint:
            return _origin(self.kafka.rest_endpoint)
        if self.kafka.pkafka_cluster:
            cc = self.confluent_cloud
            return f"https://{self.kafka.pkafka_cluster}.{cc.region}.{cc.provider}.confluent.cloud"
        return None

    @property
    def registry_url(self) -> str | None:
        return _origin(self.registry.url) if self.registry.url else None

    def statement_properties(self) -> dict[str, str]:
        """Properties every statement of this environment gets: catalog = env, database = cluster."""
        return {"sql.current-catalog": self.flink.catalog_name, "sql.current-database": self.flink.database_name}


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None,
                secrets: Mapping[tuple[str, str], str] | None = None) -> FlinkProjectConfig:
    """Read, override with ``SL_*`` secrets, and validate one environment's config file.

    ``path`` defaults to ``$CONFIG_FILE``, then ``./config.yaml`` (as shift_left).
    Raises ConfigFileError naming the file and every bad or missing field.
    """
    env = os.environ if environ is None else environ
    file = Path(path) if path is not None else Path(env.get(CONFIG_FILE_ENV) or DEFAULT_CONFIG_FILE)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigFileError(file, ["file not found (set CONFIG_FILE or pass a path)"]) from None
    except yaml.YAMLError as exc:
        raise ConfigFileError(file, [f"not valid YAML: {_yaml_problem(exc)}"]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigFileError(file, ["top level must be a mapping of sections"])
    return parse_config(raw, env, source=file, secrets=secrets)


def parse_config(
    raw: Mapping[str, Any], environ: Mapping[str, str], source: Path | str = DEFAULT_CONFIG_FILE,
    secrets: Mapping[tuple[str, str], str] | None = None,
) -> FlinkProjectConfig:
    """Validate an already-read config mapping (see load_config). `secrets`, keyed (section, key) as
    SECRET_ENV_VARS, win over the environment: what a Dagster resource was given explicitly."""
    data: dict[str, Any] = {key: value for key, value in raw.items()}
    placeholders: set[str] = set()
    for section in _SECTIONS:
        content = data.get(section)
        if content is None:
            content = {}
        if isinstance(content, dict) and section != "app":
            content = dict(content)
            for key, value in list(content.items()):
                if isinstance(value, str) and _PLACEHOLDER.search(value):
                    placeholders.add(f"{section}.{key}")
                    del content[key]
        data[section] = content
    for (section, key), var in SECRET_ENV_VARS.items():
        value = (secrets or {}).get((section, key)) or environ.get(var)
        if value and isinstance(data[section], dict):
            data[section][key] = value
    try:
        return FlinkProjectConfig.model_validate(data)
    except ValidationError as exc:
        # from None: pydantic's own text echoes input values, which may be secrets.
        raise ConfigFileError(source, [_describe(err, placeholders) for err in exc.errors()]) from None


def local_defaults(base_url: str = LOCAL_BASE_URL) -> FlinkProjectConfig:
    """Config of the embedded local service: every API on ``base_url``, fixed ids and key."""
    key, secret = local_credentials()
    return FlinkProjectConfig.model_validate(
        {
            "kafka": {"cluster_id": LOCAL_CLUSTER_ID, "cluster_type": "local", "rest_endpoint": base_url,
                      "api_key": key, "api_secret": secret},
            "registry": {"url": base_url, "registry_key_name": key, "registry_key_secret": secret},
            "confluent_cloud": {"environment_id": LOCAL_ENVIRONMENT_ID, "organization_id": LOCAL_ORGANIZATION_ID,
                                "region": "local", "provider": "local", "base_api": base_url,
                                "telemetry_api": base_url,
                                "api_key": key, "api_secret": secret},
            "flink": {"flink_url": base_url, "compute_pool_id": LOCAL_COMPUTE_POOL_ID,
                      "catalog_name": LOCAL_ENVIRONMENT_ID, "database_name": LOCAL_CLUSTER_ID,
                      "api_key": key, "api_secret": secret},
        }
    )


_MESSAGES = {
    "missing": "field required",
    "int_parsing": "not an integer",
    "int_type": "not an integer",
    "int_from_float": "not an integer",
    "float_parsing": "not a number",
    "float_type": "not a number",
    "bool_parsing": "not a boolean",
    "bool_type": "not a boolean",
    "string_type": "not a string",
    "list_type": "not a list",
    "dict_type": "not a mapping",
    "model_type": "not a mapping",
    "model_attributes_type": "not a mapping",
}


def _yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's message spans 6-8 lines (context, quoted source, carets): keep where and what, on one line."""
    if not isinstance(error, yaml.MarkedYAMLError) or error.problem_mark is None:
        return " ".join(str(error).split())
    mark = error.problem_mark
    started = (f" ({error.context} from line {error.context_mark.line + 1})"
               if error.context and error.context_mark is not None else "")
    return f"line {mark.line + 1}, column {mark.column + 1}: {error.problem}{started}"


def _describe(error: Any, placeholders: set[str]) -> str:
    """One readable problem: dotted field path and a message that never echoes the value."""
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing" and where in placeholders:
        return f"{where}: placeholder value must be replaced"
    message = _MESSAGES.get(error["type"]) or str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}"


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL or bare host (https when no scheme is given)."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    return f"{parts.scheme}://{parts.netloc}"
