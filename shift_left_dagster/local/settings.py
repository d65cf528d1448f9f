"""Where the local service keeps its data, who it is, and which key it accepts.

Identities are fixed (project.config's LOCAL_* constants) so every run, test
and Dagster resource agrees on them without any set-up.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from shift_left_dagster.project.config import (
    LOCAL_CLUSTER_ID,
    LOCAL_COMPUTE_POOL_ID,
    LOCAL_ENVIRONMENT_ID,
    LOCAL_ORGANIZATION_ID,
    local_credentials,
)

DATA_DIR_ENV = "SHIFT_LEFT_LOCAL_DATA"
DEFAULT_DATA_DIR = Path(".shift_left_dagster") / "local"
DEFAULT_PORT = 8084
HOST = "127.0.0.1"  # never another interface: the service has no TLS and a fixed default key
SPARK_JAVA_OPTIONS_ENV = "SHIFT_LEFT_SPARK_JAVA_OPTIONS"
# C1 only, to start fast; its code cache defaults to 48 MB, which a long-running service fills with the
# classes Spark generates per query, and then the JVM stops compiling (all later code interpreted).
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"


class Identity(BaseModel):
    """The ids the service answers to; catalog = environment, database = cluster."""

    organization_id: str = LOCAL_ORGANIZATION_ID
    environment_id: str = LOCAL_ENVIRONMENT_ID
    cluster_id: str = LOCAL_CLUSTER_ID
    compute_pool_id: str = LOCAL_COMPUTE_POOL_ID


IDENTITY = Identity()


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """--data-dir, else $SHIFT_LEFT_LOCAL_DATA, else .shift_left_dagster/local under the working dir."""
    chosen = data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    return Path(chosen).expanduser().resolve()


def credentials() -> tuple[str, str]:
    """The one key/secret pair the service accepts (env overrides the fixed local pair)."""
    return local_credentials()
