"""Event-time operators other than window aggregations hold a row until the watermark passes its time,
as Flink's do: an OVER aggregate ordered by the time attribute, a keep-first deduplication
(ROW_NUMBER ... ORDER BY time ASC = 1), an event-time temporal join (the probe row), and SESSION
window aggregations, which emit each session once the watermark passes its end - 1 ms.

Each insert is one run (the test quiesces after it). The default watermark is the highest $rowtime
read minus 1 ms; expected rows are computed here in plain Python from the rows inserted.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from shift_left_dagster.confluent.client import ConfluentClient
from tests.integration.support import client_for, quiesce, run, select, unique

pytestmark = pytest.mark.service

DAY = "2026-03-01"
Insert = Callable[..., None]
MS = timedelta(milliseconds=1)


@pytest.fixture(scope="module")
def client(local_service) -> ConfluentClient:  # type: ignore[no-untyped-def]
    return client_for(local_service.url)


@pytest.fixture
def insert(local_service, client: ConfluentClient) -> Insert:  # type: ignore[no-untyped-def]
    """INSERT rows into a table, then let every running statement process them (one run each)."""

    def insert_rows(table: str, *rows: str) -> None:
        run(client, unique("eto-insert"), f"INSERT INTO {table} VALUES {', '.join(rows)}")
        assert quiesce(local_service.url)["quiet"]

    return insert_rows


def at(clock: str) -> str:
    return f"TIMESTAMP '{DAY} {clock}'"


def time_of(clock: str) -> datetime:
    return datetime.fromisoformat(f"{DAY} {clock}")


def deploy(client: ConfluentClient, sql: str) -> None:
    name = unique("eto-job")
    client.create_statement(name, sql)
    client.wait_for_phase(name, {"RUNNING"}, timeout=120)


def ddl(client: ConfluentClient, sql: str) -> None:
    run(client, unique("eto-ddl"), sql)


def over_rows(rows: list[tuple[str, int, str]], watermark: datetime) -> list[tuple[str, int, int, int]]:
    """(account, amount, SUM, COUNT) over the hour up to each row, for the rows at or below the watermark."""
    out = []
    for account, amount, clock in rows:
        if time_of(clock) > watermark:
            continue
        frame = [a for k, a, c in rows if k == account and time_of(clock) - timedelta(hours=1) <= time_of(c)
                 <= time_of(clock)]
        out.append((account, amount, sum(frame), len(frame)))
    return sorted(out)


def test_an_over_aggregate_emits_a_row_once_the_watermark_passes_its_time(client: ConfluentClient,
                                                                          insert: Insert) -> None:
    ddl(client, "CREATE TABLE eto_deposits (account STRING, amount INT, ts TIMESTAMP_LTZ(3) METADATA FROM "
                "'timestamp') DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eto_running (account STRING, amount INT, total INT, n BIGINT) DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, "INSERT INTO eto_running SELECT account, amount, SUM(amount) OVER w, COUNT(*) OVER w "
                   "FROM eto_deposits WINDOW w AS (PARTITION BY account ORDER BY $rowtime "
                   "RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)")
    rows: list[tuple[str, int, str]] = []

    def sink() -> list[tuple[str, int, int, int]]:
        return sorted((a, int(m), int(t), int(n)) for a, m, t, n in select(client, "SELECT * FROM eto_running"))

    rows += [("a", 10, "09:00:00"), ("a", 20, "09:30:00")]
    insert("eto_deposits", *(f"('{a}', {m}, {at(c)})" for a, m, c in rows[-2:]))
    assert sink() == over_rows(rows, time_of("09:30:00") - MS)  # the 09:30 row waits for the watermark
    rows += [("b", 5, "10:15:00")]
    insert("eto_deposits", f"('b', 5, {at('10:15:00')})")
    assert sink() == over_rows(rows, time_of("10:15:00") - MS)
    assert len(sink()) == 2


def test_keep_first_deduplication_emits_a_key_once_the_watermark_passes_its_row(client: ConfluentClient,
                                                                                insert: Insert) -> None:
    ddl(client, "CREATE TABLE eto_signups (email STRING, plan STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eto_first (email STRING, plan STRING, PRIMARY KEY (email) NOT ENFORCED) "
                "DISTRIBUTED BY HASH(email) INTO 1 BUCKETS WITH ('changelog.mode' = 'upsert')")
    deploy(client, "INSERT INTO eto_first SELECT email, plan FROM (SELECT email, plan, ROW_NUMBER() OVER "
                   "(PARTITION BY email ORDER BY $rowtime ASC) AS rn FROM eto_signups) WHERE rn = 1")
    insert("eto_signups", f"('a', 'free', {at('09:00:00')})", f"('b', 'pro', {at('09:20:00')})")
    assert select(client, "SELECT * FROM eto_first") == [("a", "free")]  # b at the watermark + 1 ms: held
    insert("eto_signups", f"('b', 'team', {at('09:30:00')})", f"('c', 'free', {at('09:40:00')})")
    assert select(client, "SELECT * FROM eto_first") == [("a", "free"), ("b", "pro")]


def test_an_event_time_temporal_join_emits_a_probe_row_once_the_watermark_passes_it(client: ConfluentClient,
                                                                                    insert: Insert) -> None:
    ddl(client, "CREATE TABLE eto_rates (currency STRING, rate DECIMAL(6, 2), valid_from TIMESTAMP_LTZ(3) METADATA "
                "FROM 'timestamp', PRIMARY KEY (currency) NOT ENFORCED, WATERMARK FOR valid_from AS valid_from) "
                "DISTRIBUTED BY HASH(currency) INTO 1 BUCKETS WITH ('changelog.mode' = 'upsert')")
    ddl(client, "CREATE TABLE eto_trades (id STRING, currency STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eto_priced (id STRING, rate DECIMAL(6, 2)) DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, "INSERT INTO eto_priced SELECT t.id, r.rate FROM eto_trades AS t "
                   "JOIN eto_rates FOR SYSTEM_TIME AS OF t.`$rowtime` AS r ON t.currency = r.currency")

    def sink() -> list[tuple[str, str]]:
        return [(i, str(r)) for i, r in select(client, "SELECT * FROM eto_priced")]

    insert("eto_rates", f"('USD', 0.90, {at('09:00:00')})")
    insert("eto_trades", f"('t1', 'USD', {at('10:00:00')})", f"('t2', 'USD', {at('11:00:00')})")
    assert sink() == [("t1", "0.90")]  # t2 is above the watermark (11:00 - 1 ms): held
    insert("eto_rates", f"('USD', 0.95, {at('10:30:00')})")
    assert sink() == [("t1", "0.90")]
    insert("eto_trades", f"('t3', 'USD', {at('12:00:00')})")
    assert sink() == [("t1", "0.90"), ("t2", "0.95")]  # t2 joins the version valid at its time


def sessions(clicks: list[tuple[str, str]], gap: timedelta, watermark: datetime) -> list[tuple[str, str, str, int]]:
    """(user, start, end, clicks) of each user's sessions that ended by the watermark (end - 1 ms <= it)."""
    out = []
    for user in sorted({u for u, _ in clicks}):
        times = sorted(time_of(c) for u, c in clicks if u == user)
        groups: list[list[datetime]] = []
        for t in times:
            if groups and t - groups[-1][-1] <= gap:  # windows [t, t + gap) that touch merge
                groups[-1].append(t)
            else:
                groups.append([t])
        for group in groups:
            end = group[-1] + gap
            if end - MS <= watermark:
                out.append((user, group[0].strftime("%H:%M"), end.strftime("%H:%M"), len(group)))
    return sorted(out)


def test_session_windows_per_key_emit_each_session_once_the_watermark_passes_its_end(client: ConfluentClient,
                                                                                     insert: Insert) -> None:
    ddl(client, "CREATE TABLE eto_clicks (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eto_sessions (u STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT) "
                "DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, "INSERT INTO eto_sessions SELECT u, window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE "
                   "eto_clicks PARTITION BY u, DESCRIPTOR($rowtime), INTERVAL '10' MINUTE)) "
                   "GROUP BY u, window_start, window_end")

    def sink() -> list[tuple[str, str, str, int]]:
        return sorted((u, s[11:16], e[11:16], int(n)) for u, s, e, n in select(client, "SELECT * FROM eto_sessions"))

    clicks = [("u1", "10:00:00"), ("u2", "10:03:00"), ("u1", "10:10:00"), ("u1", "10:25:00")]
    insert("eto_clicks", *(f"('{u}', {at(c)})" for u, c in clicks))
    gap = timedelta(minutes=10)
    assert sink() == sessions(clicks, gap, time_of("10:25:00") - MS) == [("u1", "10:00", "10:20", 2),
                                                                           ("u2", "10:03", "10:13", 1)]
    clicks += [("u2", "10:40:00")]
    insert("eto_clicks", f"('u2', {at('10:40:00')})")
    assert sink() == sessions(clicks, gap, time_of("10:40:00") - MS)
    assert ("u1", "10:25", "10:35", 1) in sink()
