"""A batch whose records share one `$rowtime` keeps it once (storage.py): a bulk load, and a stateless
statement over it, write no per-record time, and every record still reads as written: each batch's own
time where batches of several times are read together, and the time of writing for a batch of its own
(INSERT ... VALUES). Expected times are the ones the test wrote (plain Python)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.storage import DRIVER_ROWS
from tests.integration.support import client_for, quiesce, run, stored_table, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]
ROWS = DRIVER_ROWS + 20_000  # a run over more than the driver writes: Spark writes its batch


@pytest.fixture
def service(spark: SparkSession, tmp_path: Path) -> Iterator[InProcessService]:
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as started:
        yield started


def load(service: InProcessService, spark: SparkSession, start: int, at: datetime) -> None:
    """ROWS records (ids from `start`) straight into `timed_in`'s log as one batch, all at `at`."""
    engine = service.engine
    records = spark.range(start, start + ROWS).select(
        F.col("id"), F.concat(F.lit("n"), F.col("id").cast("string")).alias("name"),
        F.lit(at).alias("$rowtime"), F.lit(0).cast("tinyint").alias("$op"))
    batch = engine.logs.write(stored_table(service, "timed_in"), records, producer=None)
    assert batch is not None and batch.time is not None
    engine.store.append_batches([batch])


def times(service: InProcessService, name: str) -> dict[int, datetime]:
    rows = service.engine.jobs.views.state(stored_table(service, name)).select("id", "`$rowtime`").collect()
    return {r["id"]: r["$rowtime"].replace(tzinfo=UTC) for r in rows}


def test_a_stateless_statement_over_a_batch_of_one_time_writes_it_once(service: InProcessService,
                                                                       spark: SparkSession) -> None:
    client = client_for(service.url)
    for name in ("timed_in", "timed_out"):
        run(client, unique("ddl"), f"CREATE TABLE {name} (id BIGINT, name STRING) DISTRIBUTED INTO 2 BUCKETS")
    first, second = datetime(2025, 3, 1, 8, 0, 0, 250000), datetime(2025, 3, 1, 9, 30, 0, 500000)  # UTC
    load(service, spark, 0, first.replace(tzinfo=None))
    run(client, unique("copy"), "INSERT INTO timed_out SELECT id, UPPER(name) FROM timed_in WHERE id % 2 = 0",
        "RUNNING")
    quiesce(service.url)
    sink = stored_table(service, "timed_out")
    (written,) = service.engine.store.batches(sink.uid)
    assert written.time is not None
    assert all("$rowtime" not in pq.read_schema(service.data_dir / f).names for f in written.files)
    expected = {i: first.replace(tzinfo=UTC) for i in range(0, ROWS, 2)}
    assert times(service, "timed_out") == expected
    load(service, spark, ROWS, second.replace(tzinfo=None))  # another time: read beside the first
    quiesce(service.url)
    expected |= {i: second.replace(tzinfo=UTC) for i in range(ROWS, 2 * ROWS, 2)}
    assert times(service, "timed_out") == expected
    before = datetime.now(UTC)
    run(client, unique("one"), f"INSERT INTO timed_in VALUES ({2 * ROWS}, 'v')")  # a batch with its column
    quiesce(service.url)
    found = times(service, "timed_out")
    assert {i: t for i, t in found.items() if i != 2 * ROWS} == expected
    assert before <= found[2 * ROWS] <= datetime.now(UTC)
