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
# A heap of 1 GB from the start: grown from its default (~365 MB here) the serial collector stopped every
# job for 5 ms every 90 ms and for a full collection (~150 ms) every ~9 s of 1 M-row runs; at 1 GB the
# young collections are a third as many and the old generation fills in minutes, not seconds (the
# live set stays ~70 MB). Metaspace starts at 256 MB: loading Spark's classes cost four full
# collections (~0.3 s) while the service started.
FAST_START_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m -Xms1g "
                           "-XX:MetaspaceSize=256m")


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
