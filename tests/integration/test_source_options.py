"""Source options ('scan.*') are checked when a statement reads the table, not at CREATE.

Flink stores a CREATE TABLE's options in the catalog unchecked; the connector
parses them when a query reads the table (Apache Flink 2.3, probed with the
filesystem connector: CREATE TABLE ... 'source.monitor-interval' =
'lastest-offset' is accepted, `SELECT * FROM s` fails with "Unable to create a
source for reading table ... Invalid value for option 'source.monitor-interval'").
shift_left 0.1.52's unit-test harness appends `'scan.bounded.mode'= 'lastest-offset'`
(sic) to every DDL it runs, so refusing it at CREATE stopped that harness.
"""

from __future__ import annotations

import pytest

from tests.integration.support import client_for, run, unique

pytestmark = pytest.mark.service


@pytest.mark.parametrize(("options", "option", "value"), [
    ("'scan.bounded.mode'= 'lastest-offset'", "scan.bounded.mode", "lastest-offset"),  # as shift_left writes it
    ("'scan.startup.mode' = 'earliest'", "scan.startup.mode", "earliest"),
    ("'scan.startup.mode' = 'timestamp'", "scan.startup.timestamp-millis", None),
])
def test_a_source_option_is_accepted_at_create_and_fails_the_statement_that_reads_it(
        local_service, options: str, option: str, value: str | None):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    table = f"so_{unique('t').replace('-', '_')}"
    run(client, unique("so-ddl"), f"CREATE TABLE {table} (a INT) WITH ({options})")  # COMPLETED, not FAILED
    run(client, unique("so-ins"), f"INSERT INTO {table} VALUES (1), (2)")  # writing reads no source option

    name = unique("so-read")
    client.create_statement(name, f"SELECT * FROM {table}", properties={"sql.snapshot.mode": "now"})
    statement = client.wait_for_phase(name, {"FAILED", "COMPLETED"}, timeout=60)
    detail = statement.status.detail or ""
    assert statement.status.phase == "FAILED", detail
    assert f"'{table}'" in detail and f"'{option}'" in detail, detail
    assert value is None or f"'{value}'" in detail, detail


def shift_left_table(client) -> str:  # type: ignore[no-untyped-def]
    """A table with the option as shift_left's harness appends it, holding one row (7)."""
    table = f"so_{unique('t').replace('-', '_')}"
    run(client, unique("so-ddl"), f"CREATE TABLE {table} (a INT) WITH ('scan.bounded.mode'= 'lastest-offset')")
    run(client, unique("so-ins"), f"INSERT INTO {table} VALUES (7)")
    return table


def test_a_hint_replacing_the_bad_option_reads_the_table(local_service):  # type: ignore[no-untyped-def]
    """Only the options in effect are checked: a hint overriding the table's value makes it readable."""
    client = client_for(local_service.url)
    table = shift_left_table(client)
    name = unique("so-read")
    client.create_statement(name, f"SELECT a FROM {table} /*+ OPTIONS('scan.bounded.mode'='latest-offset') */")
    client.wait_for_phase(name, {"COMPLETED"}, timeout=60)
    assert [r.row for r in client.statement_results(name)] == [["7"]]


def test_a_continuous_insert_reading_the_table_fails_too(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    table = shift_left_table(client)
    run(client, unique("so-ddl"), f"CREATE TABLE {table}_out (a INT)")
    name = unique("so-dml")
    client.create_statement(name, f"INSERT INTO {table}_out SELECT a FROM {table}")
    statement = client.wait_for_phase(name, {"FAILED", "RUNNING"}, timeout=60)
    assert statement.status.phase == "FAILED", statement.status.detail
    assert f"reading table '{table}'" in (statement.status.detail or ""), statement.status.detail
    assert "'scan.bounded.mode': 'lastest-offset'" in (statement.status.detail or ""), statement.status.detail
