"""The one SparkSession of a process (the local service, or a test session).

Started lazily, configured for a small machine: local[*], few shuffle
partitions, no UI, a JVM tuned to start fast, UTC session time zone.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.functions import builtin

from shift_left_dagster.local.settings import FAST_START_JAVA_OPTIONS, SPARK_JAVA_OPTIONS_ENV

SPARK_MASTER_ENV = "SHIFT_LEFT_SPARK_MASTER"

# Interpreted expressions, no generated Java: for a query over a few rows, compiling its code (Janino,
# then the JIT) costs more than the code saves. Both confs are read when a query is planned and run.
_NO_CODEGEN = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}

_lock = threading.Lock()
_session: SparkSession | None = None


def get_spark() -> SparkSession:
    """The process's SparkSession, created on first use."""
    global _session
    with _lock:
        if _session is None:
            _session = _build()
        return _session


def _build() -> SparkSession:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the JVM's own address choice, before any config
    # Python workers run this interpreter, not the first `python3` on the PATH: PySpark refuses a worker of
    # another minor version (a 3.12 venv on a machine whose python3 is 3.11).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    java_options = os.environ.get(SPARK_JAVA_OPTIONS_ENV, FAST_START_JAVA_OPTIONS)
    builder = (
        SparkSession.builder.master(os.environ.get(SPARK_MASTER_ENV, "local[*]"))
        .appName("shift-left-dagster-local")
        .config("spark.ui.enabled", "false")
        # Nothing of ours listens beyond this machine: the driver's ports bind to loopback too.
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", java_options)
        # Table logs are many small batch folders: list them on the driver, never in a job.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        .config("spark.sql.parquet.compression.codec", "snappy")
        # One file per write task: a batch's partition is one file (storage.py names them by task).
        .config("spark.sql.files.maxRecordsPerFile", "0")
        # Times as the driver's pyarrow writes them (INT64 microseconds), not the legacy INT96.
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        # Spark's vectorized reader of nested columns fails (ArrayIndexOutOfBoundsException) on a file the
        # driver's pyarrow wrote with an ARRAY column holding NULL, [] and [NULL, NULL] once a query applies
        # a lambda to it (transform): nested columns are read row by row, flat ones stay vectorized.
        .config("spark.sql.parquet.enableNestedColumnVectorizedReader", "false")
        # No Python call site captured on every Column call (several JVM round trips each, every run
        # builds hundreds): the engine reports failures in Flink's terms, never with our call sites.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
    )
    _look_up_functions_once()
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # PySpark logs every failed query with its JVM stack; the engine reports failures on the statement.
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return session


def _look_up_functions_once() -> None:
    """`F.col`, `F.lit`, `F.when`... find Spark's `functions` class, then the function, by reflection
    before each call: three JVM round trips where one does, and a run builds thousands of columns.
    The functions are static: each one found is kept, per JVM gateway."""
    original = builtin._get_jvm_function
    if getattr(original, "keeps_found", False):
        return
    found: dict[tuple[int, str], Callable[..., Any]] = {}

    def look_up(name: str, sc: SparkContext) -> Callable[..., Any]:
        key = (id(sc._gateway), name)
        if key not in found:
            found[key] = original(name, sc)
        return found[key]

    look_up.keeps_found = True  # type: ignore[attr-defined]
    builtin._get_jvm_function = look_up


@contextmanager
def without_codegen(spark: SparkSession) -> Iterator[None]:
    """Queries run inside the block are planned and run without code generation (same results)."""
    saved = {key: spark.conf.get(key) for key in _NO_CODEGEN}
    for key, value in _NO_CODEGEN.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, kept in saved.items():
            if kept is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, kept)


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """No rows of `schema`, as a local relation: built in the JVM for a classic session, where
    `createDataFrame([])` goes through a Python RDD (about 15 ms; every statement binds its sources
    empty once, to be analysed); a Spark Connect session (checks) makes a local relation of it."""
    try:
        session, jvm = spark._jsparkSession, spark._jvm
    except AttributeError:  # Spark Connect: no JVM here
        return spark.createDataFrame([], schema)
    assert jvm is not None
    return DataFrame(session.createDataFrame(jvm.java.util.ArrayList(), session.parseDataType(schema.json())), spark)


def integer_rows(spark: SparkSession, rows: Sequence[tuple[int, ...]], columns: Sequence[tuple[str, str]]) -> DataFrame:
    """Rows of integers as a local relation (an inline VALUES table, `columns` its (name, Spark type)):
    Spark holds them on the driver, where `createDataFrame` of a Python list is a Python RDD, whose every
    query starts a Python worker and more Spark jobs."""
    if not rows:
        schema = T.StructType.fromDDL(", ".join(f"`{n}` {t}" for n, t in columns))
        assert isinstance(schema, T.StructType)
        return empty_frame(spark, schema)
    values = ", ".join(f"({', '.join(str(int(v)) for v in row)})" for row in rows)
    names = ", ".join(f"CAST(col{i + 1} AS {t}) AS `{n}`" for i, (n, t) in enumerate(columns))
    return spark.sql(f"SELECT {names} FROM VALUES {values}")


# Logical operators that keep each input partition's rows in order, one partition after another.
_ORDER_KEEPING = {"Project", "Filter", "Generate", "Union", "LogicalRelation", "LocalRelation", "Range"}


def in_row_order(frame: DataFrame) -> DataFrame | None:
    """`frame` over its optimized plan when Spark computes it row by row from its scans, in each scan's
    order: that plan only scans, filters, projects, unnests and unions (no shuffle, sort, join or window);
    None when it does not, or can not tell (a Spark Connect session). Whatever is built on the result (the
    batch's placing, its write) is analysed and optimized over that flat plan instead of the query over
    its views again: ~15 ms less per run of a stateless statement. A plan of only those operators
    optimizes to itself."""
    try:
        plan = frame._jdf.queryExecution().optimizedPlan()
    except AttributeError:
        return None

    def keeps(node: Any) -> bool:
        children = node.children()
        return node.nodeName() in _ORDER_KEEPING and all(keeps(children.apply(i)) for i in range(children.size()))

    if not keeps(plan):
        return None
    session = frame.sparkSession
    return DataFrame(_datasets(session).ofRows(session._jsparkSession, plan), session)


@cache
def _datasets(session: SparkSession) -> Any:
    """Spark's Dataset class in the session's JVM (looked up once: each package on its path is a round trip)."""
    assert session._jvm is not None
    return session._jvm.org.apache.spark.sql.classic.Dataset


def is_local_relation(frame: DataFrame) -> bool:
    """Whether Spark holds `frame`'s rows on the driver once optimized (VALUES and what is computed from
    them alone): collecting them runs no job. False when it can not tell (a Spark Connect session)."""
    try:
        return bool(frame._jdf.queryExecution().optimizedPlan().nodeName() == "LocalRelation")
    except AttributeError:
        return False


# --- Spark Connect: the service's Spark offered to the checks of other processes -----------------

CONNECT_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"


def start_connect_server(spark: SparkSession, host: str, port: int) -> int:
    """Start a Spark Connect server inside `spark`'s JVM on `host:port` (exactly that port) and return
    the port it listens on. Clients authenticate with the token the JVM found in its environment
    (SPARK_CONNECT_AUTHENTICATE_TOKEN, set before Spark started): no secret in Spark's configuration."""
    assert spark._jvm is not None
    conf = spark._jsc.sc().conf()  # the running context's own conf, which the server reads at start
    conf.set("spark.connect.grpc.binding.address", host)
    conf.set("spark.connect.grpc.binding.port", str(port))
    conf.set("spark.connect.grpc.port.maxRetries", "0")
    service = _connect_service(spark)
    service.start(spark._jsc.sc())
    return int(service.localPort())


def stop_connect_server(spark: SparkSession) -> None:
    """Stop the Connect server `start_connect_server` started (its sessions end; Spark keeps running)."""
    assert spark._jvm is not None
    none = spark._jvm.scala.Option.apply(None)
    _connect_service(spark).stop(none, none)


def _connect_service(spark: SparkSession) -> Any:
    package = spark._jvm.org.apache.spark.sql.connect.service  # type: ignore[union-attr]
    return getattr(getattr(package, CONNECT_SERVICE.rsplit(".", 1)[1]), "MODULE$")
