"""A round skips a running statement whose last run found nothing new while its tables show the same
definitions and end offsets (engine.py): it is not run again for nothing, and records appended to its
source, in any way, or a source altered, still reach it in the next round. Expected rows are the
records written, in plain Python."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import TableId
from shift_left_dagster.local.jobs import Jobs
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from tests.integration.support import client_for, quiesce, run, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]


@pytest.fixture
def service(spark: SparkSession, tmp_path: Path) -> Iterator[InProcessService]:
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as started:
        yield started


def test_an_idle_statement_is_skipped_and_still_reads_new_records(service: InProcessService,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service.url)
    engine = service.engine
    run(client, unique("ddl"), "CREATE TABLE idle_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE idle_out (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("copy"), "INSERT INTO idle_out SELECT id, UPPER(name) FROM idle_in", "RUNNING")
    quiesce(service.url)
    advanced: list[str] = []
    original = Jobs.advance
    monkeypatch.setattr(Jobs, "advance", lambda jobs, job, *args: advanced.append(job.name) or original(
        jobs, job, *args))
    quiesce(service.url)
    quiesce(service.url)
    assert advanced == []  # found nothing new before; its tables unchanged since

    source, sink = (engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                               name=name)) for name in ("idle_in", "idle_out"))
    assert source is not None and sink is not None

    def append() -> None:  # as a producer writes, beside any statement
        records = engine.jobs.spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, name STRING")
        batch = engine.logs.write(source, records.withColumn("$rowtime", F.current_timestamp())
                                  .withColumn("$op", F.lit(0).cast("tinyint")), producer=None)
        assert batch is not None
        engine.store.append_batches([batch])

    engine.on_engine_thread(append)
    quiesce(service.url)
    assert advanced  # its source's end offsets moved: run again
    assert sorted((r["id"], r["name"]) for r in engine.jobs.views.state(sink).collect()) == [(1, "A"), (2, "B")]

    advanced.clear()
    run(client, unique("insert"), "INSERT INTO idle_in VALUES (3, 'c')")
    quiesce(service.url)
    assert advanced
    assert sorted(r["id"] for r in engine.jobs.views.state(sink).collect()) == [1, 2, 3]

    advanced.clear()
    run(client, unique("alter"), "ALTER TABLE idle_in SET ('scan.startup.mode' = 'earliest-offset')")
    quiesce(service.url)
    assert advanced  # a table's definition changed: checked (and recompiled) again
