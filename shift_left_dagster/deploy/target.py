"""Which Flink service a deployment talks to: Confluent Cloud when credentials exist, else the local one.

The one place that decides it, for the CLI and the Dagster resource alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import requests

from shift_left_dagster.confluent.client import ConfluentClient, bind_to_data_dir
from shift_left_dagster.local.health import require_folder
from shift_left_dagster.project.config import FlinkProjectConfig, load_config, local_credentials, local_defaults

Mode = Literal["auto", "local", "cloud"]


def resolve_mode(mode: Mode, environ: Mapping[str, str], flink_api_key: str | None = None
                 ) -> Literal["local", "cloud"]:
    """auto: cloud when a Flink API key is configured (given, or SL_FLINK_API_KEY), else the local service."""
    if mode != "auto":
        return mode
    return "cloud" if flink_api_key or environ.get("SL_FLINK_API_KEY") else "local"


def target_config(
    config_file: str | Path | None = None,
    *,
    mode: Mode = "auto",
    environ: Mapping[str, str] | None = None,
    local_data_dir: str | None = None,
    local_url: str | None = None,
    secrets: Mapping[tuple[str, str], str] | None = None,
) -> FlinkProjectConfig:
    """The environment config to deploy with; in local mode, starts the local service if needed.

    `local_url` points at a local service that is already running (tests, a shared one); with
    `local_data_dir` too, it must be that folder's service. A local config is bound to its data
    folder: its client refuses a service answering for another folder.
    """
    environ = os.environ if environ is None else environ
    path = config_file or environ.get("CONFIG_FILE")
    if resolve_mode(mode, environ, (secrets or {}).get(("flink", "api_key"))) == "local":
        # A config file named in local mode is still read: a broken one is an error, never ignored, and
        # its per-environment choices (app.*, kafka.reject_topics_prefixes) apply to the local service too.
        chosen = load_config(Path(path), environ, secrets) if path else None
        return _with_choices(_local_target(local_url, local_data_dir), chosen)
    return load_config(Path(path) if path else None, environ, secrets)


def _local_target(local_url: str | None, local_data_dir: str | None) -> FlinkProjectConfig:
    if local_url:
        if not local_data_dir:
            return local_defaults(local_url)
        require_folder(local_url, local_data_dir)  # OtherFolderService names both folders
        return bind_to_data_dir(local_defaults(local_url), local_data_dir)
    from shift_left_dagster.local.process import ensure_running  # Spark only when local

    info = ensure_running(local_data_dir)
    return bind_to_data_dir(local_defaults(info.url), info.data_dir)


def _with_choices(local: FlinkProjectConfig, chosen: FlinkProjectConfig | None) -> FlinkProjectConfig:
    if chosen is not None:
        local.app = chosen.app
        local.kafka.reject_topics_prefixes = list(chosen.kafka.reject_topics_prefixes)
        local.health = chosen.health
    return local


def connect(config: FlinkProjectConfig) -> ConfluentClient:
    return ConfluentClient.from_config(config)


def local_data_dir(local_url: str | None, data_dir: str | None) -> str:
    """Where a local service keeps its data: as configured, else as the running service says, else
    where `ensure_running` starts one."""
    if data_dir:
        return data_dir
    if local_url:
        answer = requests.get(f"{local_url}/local/v1/health", auth=local_credentials(), timeout=10)
        answer.raise_for_status()
        return answer.json()["data_dir"]
    from shift_left_dagster.local.process import ensure_running

    return ensure_running(None).data_dir
