"""The Spark a check runs on when none is configured: one already running, never a JVM of its own
when the local service offers its Spark.

In order: this process's classic Spark when it has one (the local service's own process, a test
session: a process holds a classic context or Connect sessions, never both) or when
SHIFT_LEFT_SPARK_MASTER names the master to start; else the Spark of the local service whose data
the checks read, through the Spark Connect server it offers (connect_offer.py); else a local
session of this process, started as the service starts its own.
"""

from __future__ import annotations

import atexit
import gc
import os
from functools import cache
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from shift_left_dagster.local.connect_offer import ConnectOffer, read_offer
from shift_left_dagster.local.spark import SPARK_MASTER_ENV, get_spark

# Sent when the session is created: the local engine's settings that change results or cost.
CONNECT_SESSION_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2"}
# Set by pyspark when a Connect session is created: from then on every session of the process is a
# Connect one (classic `getOrCreate()` included) until it is removed.
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"
_SWITCHED: set[int] = set()  # the Connect sessions whose creation switched the process's mode


def checks_session(local_service_dir: str | Path | None) -> SparkSession:
    """The session of the checks of one run (see the module docstring); `local_service_dir`: the data
    folder of the local service that is the run's target (None: the target is not the local service)."""
    offer = _service_offer(local_service_dir)
    if offer is None:
        return get_spark()
    builder = SparkSession.builder.remote(offer.url())
    for key, value in CONNECT_SESSION_CONF.items():
        builder = builder.config(key, value)
    _no_collection_at_exit()
    switched = CONNECT_MODE_ENV not in os.environ
    session = builder.getOrCreate()  # pyspark switches the whole process to Connect mode (CONNECT_MODE_ENV)
    if switched:
        _SWITCHED.add(id(session))
    return session


@cache
def _no_collection_at_exit() -> None:
    """The Connect client brings pandas, pyarrow and gRPC: the interpreter's last cycle collection over
    them costs about 0.4 s of CPU as the process exits (seconds on a busy machine) and frees nothing
    the operating system would not. Frozen at exit (atexit runs before it), that collection skips them."""
    atexit.register(gc.freeze)


def connects(local_service_dir: str | Path | None) -> bool:
    """Whether `checks_session` would open a Spark Connect session (and start no JVM)."""
    return _service_offer(local_service_dir) is not None


def _service_offer(local_service_dir: str | Path | None) -> ConnectOffer | None:
    if SparkContext._active_spark_context is not None or os.environ.get(SPARK_MASTER_ENV):
        return None
    return read_offer(local_service_dir) if local_service_dir else None


def end_session(spark: SparkSession) -> None:
    """Release a Spark Connect session on its server (its views, its cached plans); a classic session
    is this process's, kept for what runs next."""
    if is_connect(spark):
        spark.stop()
        if id(spark) in _SWITCHED:  # back to classic mode: a later get_spark() in this process gets a JVM again
            _SWITCHED.discard(id(spark))
            os.environ.pop(CONNECT_MODE_ENV, None)


def is_connect(spark: SparkSession) -> bool:
    return not hasattr(spark, "_jsc")
