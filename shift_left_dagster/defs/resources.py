"""Dagster resources: the Confluent Flink service the assets deploy to."""

from __future__ import annotations

from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.deploy.target import connect, local_data_dir, resolve_mode, target_config
from shift_left_dagster.project.config import FlinkProjectConfig


class ConfluentFlinkResource(ConfigurableResource):
    """Confluent Cloud for Apache Flink, or the embedded local service when no credentials are set.

    Secrets are given as `EnvVar("SL_FLINK_API_KEY")` etc.; they reach the client
    as SecretStr and are never logged nor put in metadata.
    """

    mode: Literal["auto", "local", "cloud"] = Field(
        default="auto", description="auto: cloud when a Flink API key is set, else the local service"
    )
    config_file: str | None = Field(default=None, description="shift_left config.yaml (default: $CONFIG_FILE)")
    flink_api_key: str | None = None
    flink_api_secret: str | None = None
    cloud_api_key: str | None = None
    cloud_api_secret: str | None = None
    kafka_api_key: str | None = None
    kafka_api_secret: str | None = None
    registry_api_key: str | None = None
    registry_api_secret: str | None = None
    local_data_dir: str | None = Field(default=None, description="data folder of the local service")
    local_url: str | None = Field(default=None, description="a local service already running (else one is started)")
    seed_local_raw_topics: bool = Field(
        default=True, description="local mode: create missing raw topics from the project's seeds/ folder"
    )
    max_parallel: int = Field(default=4, description="plan steps run at once")
    statement_timeout_seconds: float = 600.0

    def _environ(self) -> dict[str, str]:
        import os

        pairs = {
            "SL_FLINK_API_KEY": self.flink_api_key,
            "SL_FLINK_API_SECRET": self.flink_api_secret,
            "SL_CONFLUENT_CLOUD_API_KEY": self.cloud_api_key,
            "SL_CONFLUENT_CLOUD_API_SECRET": self.cloud_api_secret,
            "SL_KAFKA_API_KEY": self.kafka_api_key,
            "SL_KAFKA_API_SECRET": self.kafka_api_secret,
            "SL_REGISTRY_API_KEY": self.registry_api_key,
            "SL_REGISTRY_API_SECRET": self.registry_api_secret,
        }
        return {**os.environ, **{k: v for k, v in pairs.items() if v}}

    @property
    def is_local(self) -> bool:
        return resolve_mode(self.mode, self._environ()) == "local"

    def get_local_data_dir(self) -> str:
        """The data folder of the local service this resource talks to (checks read sink files there)."""
        return local_data_dir(self.local_url, self.local_data_dir)

    def get_config(self) -> FlinkProjectConfig:
        return target_config(self.config_file, mode=self.mode, environ=self._environ(),
                             local_data_dir=self.local_data_dir, local_url=self.local_url)

    def get_client(self) -> ConfluentClient:
        return connect(self.get_config())
