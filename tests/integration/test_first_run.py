"""A statement's plain sinks are analysed once when it starts: over its first run's input, which is the
validation (a query Spark refuses still fails before it runs, in Flink's terms), and the run writes
those DataFrames without binding its query again. Expected rows are the inserted ones, in plain Python."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from shift_left_dagster.local.catalog import TableDef, TableId
from shift_left_dagster.local.jobs import Jobs
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.project.parsing import parse_statements
from tests.integration.support import client_for, quiesce, run, unique

pytestmark = [pytest.mark.spark, pytest.mark.service]


@pytest.fixture
def service(spark: SparkSession, tmp_path: Path) -> Iterator[InProcessService]:
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as started:
        yield started


def test_a_starting_statement_binds_its_query_once(service: InProcessService, monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), "CREATE TABLE once_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE once_out (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("seed"), "INSERT INTO once_in VALUES (1, 'a'), (2, 'b')")
    bound: list[bool] = []
    original = Jobs.bind
    monkeypatch.setattr(Jobs, "bind", lambda jobs, job, query, *args, **kwargs: bound.append(
        bool(kwargs.get("empty"))) or original(jobs, job, query, *args, **kwargs))
    run(client, unique("copy"), "INSERT INTO once_out SELECT id, UPPER(name) FROM once_in WHERE id > 0", "RUNNING")
    quiesce(service.url)
    assert bound == [False]  # over its first run's input, not over empty views and then again
    sink = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                              name="once_out"))
    assert sink is not None
    assert sorted((r["id"], r["name"]) for r in service.engine.jobs.views.state(sink).collect()) == [(1, "A"), (2, "B")]
    run(client, unique("more"), "INSERT INTO once_in VALUES (3, 'c')")
    quiesce(service.url)
    assert sorted(r["id"] for r in service.engine.jobs.views.state(sink).collect()) == [1, 2, 3]


def test_a_query_spark_refuses_still_fails_when_it_starts(service: InProcessService) -> None:
    client = client_for(service.url)
    run(client, unique("ddl"), "CREATE TABLE refused_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE refused_out (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    name = unique("refused")
    failed = run(client, name, "INSERT INTO refused_out SELECT id, UPPER(nope) FROM refused_in", "FAILED")
    detail = failed.status.detail or ""
    assert "nope" in detail and "SQLSTATE" not in detail
    exceptions = client.statement_exceptions(name)
    assert exceptions and exceptions[0].name == "org.apache.flink.table.api.ValidationException"


def _projections(frame: DataFrame) -> int:
    return str(frame._jdf.queryExecution().analyzed().toString()).count("Project [")


def test_a_result_is_shaped_in_one_projection_unless_a_name_repeats(service: InProcessService) -> None:
    """A query's columns named once are read by name into the sink's columns: one projection over the query.
    A name the query gives twice is renamed by position first, and both land in their sink columns."""
    client = client_for(service.url)
    run(client, unique("ddl"), "CREATE TABLE shaped_in (id BIGINT, name STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE shaped_out (a BIGINT, b STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("ddl"), "CREATE TABLE twice_out (a BIGINT, b BIGINT) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("seed"), "INSERT INTO shaped_in VALUES (1, 'a'), (2, 'b')")
    jobs = service.engine.jobs
    for sql, renamed in (("INSERT INTO shaped_out SELECT id, UPPER(name) AS name FROM shaped_in", False),
                         ("INSERT INTO twice_out SELECT id, id * 10 AS id FROM shaped_in", True)):
        statement = parse_statements(sql, "shaped.sql")[0]
        job = jobs.compile(unique("shaped"), statement, {}, starting=True)
        state = jobs.start(job, None)
        sink = job.sinks[0]
        query = jobs.bind(job, sink.query, state, jobs._upper(job, state), incremental=True)
        records = jobs.first_run(job, statement, state).records[0]
        assert _projections(records) == _projections(query) + (2 if renamed else 1)
    run(client, unique("shape"), "INSERT INTO shaped_out SELECT id, UPPER(name) AS name FROM shaped_in", "RUNNING")
    run(client, unique("twice"), "INSERT INTO twice_out SELECT id, id * 10 AS id FROM shaped_in", "RUNNING")
    quiesce(service.url)
    rows = {name: sorted(tuple(r)[:2] for r in jobs.views.state(_table(service, name)).collect())
            for name in ("shaped_out", "twice_out")}
    assert rows == {"shaped_out": [(1, "A"), (2, "B")], "twice_out": [(1, 10), (2, 20)]}


def _table(service: InProcessService, name: str) -> TableDef:
    table = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                               name=name))
    assert table is not None
    return table
