"""An INSERT ... VALUES of plain literals is typed in Python and written without Spark analysing it
(literal_rows.py): the same records as Spark's path writes, NOT NULL still enforced. Expected values
are written out in plain Python."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from shift_left_dagster.local import jobs as jobs_module
from shift_left_dagster.local.catalog import TableId
from shift_left_dagster.local.jobs import Jobs
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from tests.integration.support import client_for, run, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]

COLUMNS = ("(name STRING, n INT, big BIGINT, amount DECIMAL(10, 2), ok BOOLEAN, seen_at TIMESTAMP(3), "
           "event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO 1 BUCKETS")
VALUES = ("('it''s', -7, 3000000000, 12.5, TRUE, TIMESTAMP '2026-01-01 00:05:00.125', TIMESTAMP '2026-01-02 10:00:00'),"
          " (NULL, 0, NULL, 3, FALSE, NULL, TIMESTAMP '2026-01-03 00:00:00')")
EXPECTED = [
    ("it's", -7, 3000000000, Decimal("12.50"), True, datetime(2026, 1, 1, 0, 5, 0, 125000),
     datetime(2026, 1, 2, 10, tzinfo=UTC), datetime(2026, 1, 2, 10, tzinfo=UTC), 0),
    (None, 0, None, Decimal("3.00"), False, None, datetime(2026, 1, 3, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC),
     0),
]


@pytest.fixture
def service(spark: SparkSession, tmp_path: Path) -> Iterator[InProcessService]:
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as started:
        yield started


def records(service: InProcessService, name: str) -> list[tuple[Any, ...]]:
    """A table's records in offset order: its columns, $rowtime (as UTC) and $op."""
    table = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                               name=name))
    assert table is not None
    rows = service.engine.logs.read(table).orderBy("$offset").toArrow().to_pylist()
    return [(r["name"], r["n"], r["big"], r["amount"], r["ok"], r["seen_at"], r["event_ts"], r["$rowtime"], r["$op"])
            for r in rows]


def test_plain_values_are_written_without_spark_analysing_them(service: InProcessService,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), f"CREATE TABLE lit_fast {COLUMNS}")
    bound: list[str] = []
    original = Jobs.bind
    monkeypatch.setattr(Jobs, "bind", lambda jobs, job, *args, **kwargs: bound.append(job.name) or original(
        jobs, job, *args, **kwargs))
    run(client, unique("seed"), f"INSERT INTO lit_fast VALUES {VALUES}")
    assert bound == []
    assert records(service, "lit_fast") == EXPECTED
    run(client, unique("seed"), "INSERT INTO lit_fast VALUES (UPPER('x'), 1 + 1, 1, 1, TRUE, NULL, NULL)")
    assert len(bound) == 1  # an expression: Spark computes it
    assert records(service, "lit_fast")[2][:7] == ("X", 2, 1, Decimal("1.00"), True, None, None)


def test_the_same_records_as_spark_writes(service: InProcessService, monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), f"CREATE TABLE lit_python {COLUMNS}")
    run(client, unique("ddl"), f"CREATE TABLE lit_spark {COLUMNS}")
    run(client, unique("seed"), f"INSERT INTO lit_python VALUES {VALUES}")
    monkeypatch.setattr(jobs_module, "literal_rows", lambda *args: None)
    run(client, unique("seed"), f"INSERT INTO lit_spark VALUES {VALUES}")
    assert records(service, "lit_python") == records(service, "lit_spark") == EXPECTED


def test_arrays_maps_and_rows_as_spark_writes_them(service: InProcessService, monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service.url)
    columns = ("(tags ARRAY<STRING>, counts ARRAY<INT>, prefs MAP<STRING, STRING>, device ROW<os STRING, version "
               "STRING>, event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO 1 BUCKETS")
    values = ("(ARRAY['a', NULL], ARRAY[1, -2], MAP['language', 'en', 'theme', 'dark'], ROW('web', '2026.1'), "
              "TIMESTAMP '2026-01-01 00:00:00'), (NULL, NULL, NULL, NULL, TIMESTAMP '2026-01-02 00:00:00')")
    run(client, unique("ddl"), f"CREATE TABLE lit_nested_python {columns}")
    run(client, unique("ddl"), f"CREATE TABLE lit_nested_spark {columns}")
    run(client, unique("seed"), f"INSERT INTO lit_nested_python VALUES {values}")
    monkeypatch.setattr(jobs_module, "literal_rows", lambda *args: None)
    run(client, unique("seed"), f"INSERT INTO lit_nested_spark VALUES {values}")

    def nested(name: str) -> list[tuple[Any, ...]]:
        table = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                                   name=name))
        assert table is not None
        rows = service.engine.logs.read(table).orderBy("$offset").toArrow().to_pylist()
        return [(r["tags"], r["counts"], r["prefs"], r["device"], r["$rowtime"]) for r in rows]

    assert nested("lit_nested_python") == nested("lit_nested_spark") == [
        (["a", None], [1, -2], [("language", "en"), ("theme", "dark")], {"os": "web", "version": "2026.1"},
         datetime(2026, 1, 1, tzinfo=UTC)),
        (None, None, None, None, datetime(2026, 1, 2, tzinfo=UTC))]


def test_a_row_without_its_time_gets_the_time_it_is_written(service: InProcessService) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), f"CREATE TABLE lit_now {COLUMNS}")
    before = datetime.now(UTC)
    run(client, unique("seed"), "INSERT INTO lit_now (name, n) VALUES ('a', 1)")
    (row,) = records(service, "lit_now")
    assert row[:7] == ("a", 1, None, None, None, None, None) and before <= row[7] <= datetime.now(UTC)


def test_a_null_key_still_fails_in_flink_terms(service: InProcessService) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), "CREATE TABLE lit_keyed (id STRING, v INT, PRIMARY KEY (id) NOT ENFORCED) "
                               "DISTRIBUTED BY HASH(id) INTO 1 BUCKETS")
    failed = run(client, unique("seed"), "INSERT INTO lit_keyed VALUES (NULL, 1)", "FAILED")
    assert "Column 'id' is NOT NULL, however, a null value is being written into it." in (failed.status.detail or "")
