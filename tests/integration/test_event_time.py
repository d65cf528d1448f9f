"""Event time as Flink has it: window TVF aggregations emit a window once, when the watermark
passes its end, as insert-only rows stamped window_end - 1 ms; records arriving for a window
already emitted are dropped.

The watermark is the declared WATERMARK (else the default on $rowtime, 1 ms of out-of-orderness),
per partition the highest event time read minus the delay, and across partitions the minimum
(a partition without new records is idle and left out, unless idleness is disabled).
Each test quiesces between inserts so that each insert is one run of the window statement.

The other event-time operators hold a row until the watermark passes its time, as Flink's do: an
OVER aggregate ordered by the time attribute, a keep-first deduplication (ROW_NUMBER ... ORDER BY
time ASC = 1), an event-time temporal join (the probe row), and SESSION windows, which emit each
session once the watermark passes its end - 1 ms. A late row (read once the operator's watermark
passed it) is dropped by the rule of Flink's operator, each written here as a plain function.
Expected rows are computed here in plain Python.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import StatementFailed
from shift_left_dagster.local.catalog import ColumnDef, TableDef, TableId
from shift_left_dagster.local.event_time import IDLE_TIMEOUT, WatermarkError, WatermarkSpec, idleness, watermark_spec
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
        run(client, unique("et-insert"), f"INSERT INTO {table} VALUES {', '.join(rows)}")
        assert quiesce(local_service.url)["quiet"]

    return insert_rows


def at(clock: str) -> str:
    return f"TIMESTAMP '{DAY} {clock}'"


def hourly(client: ConfluentClient, source: str, sink: str, window: str = "TUMBLE", sizes: str = "INTERVAL '1' HOUR",
           time: str = "$rowtime", properties: dict[str, str] | None = None) -> str:
    """A running window aggregation counting `source` rows per window into `sink`; its statement name."""
    run(client, unique("et-ddl"), f"CREATE TABLE {sink} (window_start TIMESTAMP(3), window_end TIMESTAMP(3), "
                                  f"n BIGINT) DISTRIBUTED INTO 1 BUCKETS")
    name = unique("et-window")
    client.create_statement(name, f"INSERT INTO {sink} SELECT window_start, window_end, COUNT(*) FROM TABLE("
                                  f"{window}(TABLE {source}, DESCRIPTOR({time}), {sizes})) "
                                  f"GROUP BY window_start, window_end", properties=properties)
    client.wait_for_phase(name, {"RUNNING"}, timeout=120)
    return name


def windows(client: ConfluentClient, sink: str) -> list[tuple[str, str, str]]:
    """(start, end, count) of the emitted windows, clock times only."""
    return [(s[11:16], e[11:16], n) for s, e, n in select(client, f"SELECT * FROM {sink}")]


def test_tumble_emits_a_window_once_the_watermark_passes_its_end(client: ConfluentClient, insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_clicks (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    hourly(client, "et_clicks", "et_clicks_hourly")
    insert("et_clicks", f"('a', {at('10:05:00')})", f"('b', {at('10:40:00')})")
    assert windows(client, "et_clicks_hourly") == []  # [10:00, 11:00) is still open
    insert("et_clicks", f"('c', {at('10:59:59.998')})")
    assert windows(client, "et_clicks_hourly") == []  # watermark 10:59:59.997: not yet
    insert("et_clicks", f"('d', {at('11:00:00')})")  # watermark 10:59:59.999 = window_end - 1 ms: it fires
    assert windows(client, "et_clicks_hourly") == [("10:00", "11:00", "3")]
    insert("et_clicks", f"('late', {at('10:50:00')})", f"('e', {at('11:20:00')})")  # late: its window was emitted
    assert windows(client, "et_clicks_hourly") == [("10:00", "11:00", "3")]
    insert("et_clicks", f"('f', {at('12:00:00')})")
    assert windows(client, "et_clicks_hourly") == [("10:00", "11:00", "3"), ("11:00", "12:00", "2")]
    stamped = select(client, "SELECT window_end, $rowtime FROM et_clicks_hourly")
    assert [(end[11:], rowtime[11:]) for end, rowtime in stamped] == [
        ("11:00:00.000", "10:59:59.999"), ("12:00:00.000", "11:59:59.999")]


def test_window_results_are_insert_only(client: ConfluentClient, insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_taps (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    hourly(client, "et_taps", "et_taps_hourly")
    changes = unique("et-changes")  # a continuous query over the sink: its changelog, op by op
    client.create_statement(changes, "SELECT window_end, n FROM et_taps_hourly")
    client.wait_for_phase(changes, {"RUNNING"}, timeout=60)
    insert("et_taps", f"('a', {at('10:05:00')})")
    insert("et_taps", f"('b', {at('10:10:00')})", f"('c', {at('11:10:00')})")
    insert("et_taps", f"('d', {at('11:20:00')})", f"('e', {at('12:10:00')})")
    rows = client.statement_results(changes)
    assert [(row.op, row.row[0][11:16], row.row[1]) for row in rows] == [(0, "11:00", "2"), (0, "12:00", "2")]
    client.delete_statement(changes)


def test_declared_watermark_delays_the_window(client: ConfluentClient, insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_reads (sensor STRING, ts TIMESTAMP(3), "
                                  "WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE) DISTRIBUTED INTO 1 BUCKETS")
    hourly(client, "et_reads", "et_reads_10m", sizes="INTERVAL '10' MINUTES", time="ts")
    insert("et_reads", f"('s', {at('10:01:00')})", f"('s', {at('10:12:00')})")
    assert windows(client, "et_reads_10m") == []  # watermark 10:07
    insert("et_reads", f"('s', {at('10:14:59.998')})")
    assert windows(client, "et_reads_10m") == []  # watermark 10:09:59.998
    insert("et_reads", f"('s', {at('10:14:59.999')})")  # watermark 10:09:59.999 = window_end - 1 ms: it fires
    assert windows(client, "et_reads_10m") == [("10:00", "10:10", "1")]
    insert("et_reads", f"('s', {at('10:08:00')})")  # within the delay of the highest time, but its window fired
    assert windows(client, "et_reads_10m") == [("10:00", "10:10", "1")]


def test_a_window_over_a_column_that_is_no_time_attribute_fails(client: ConfluentClient) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_plain (ts TIMESTAMP(3)) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("et-ddl"), "CREATE TABLE et_plain_counts (window_start TIMESTAMP(3), n BIGINT)")
    name = unique("et-window")
    client.create_statement(name, "INSERT INTO et_plain_counts SELECT window_start, COUNT(*) FROM TABLE(TUMBLE("
                                  "TABLE et_plain, DESCRIPTOR(ts), INTERVAL '1' HOUR)) "
                                  "GROUP BY window_start, window_end")
    with pytest.raises(StatementFailed, match="time attribute"):
        client.wait_for_phase(name, {"RUNNING"}, timeout=60)
    # a snapshot query runs in batch mode: any TIMESTAMP column windows
    assert select(client, "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE et_plain, DESCRIPTOR(ts), "
                          "INTERVAL '1' HOUR)) GROUP BY window_start, window_end") == []


@pytest.fixture(scope="module")
def two_keys(client: ConfluentClient) -> tuple[str, str]:
    """Two keys DISTRIBUTED BY HASH(k) INTO 2 BUCKETS puts in different partitions (0, then 1)."""
    run(client, unique("et-ddl"), "CREATE TABLE et_probe (k STRING, p INT METADATA FROM 'partition' VIRTUAL) "
                                  "DISTRIBUTED BY HASH(k) INTO 2 BUCKETS")
    run(client, unique("et-insert"), "INSERT INTO et_probe VALUES " + ", ".join(f"('{k}')" for k in "abcdefgh"))
    where = {p: k for k, p in select(client, "SELECT k, p FROM et_probe")}
    return where["0"], where["1"]


def test_the_watermark_is_the_minimum_across_partitions(client: ConfluentClient, insert: Insert,
                                                        two_keys: tuple[str, str]) -> None:
    first, second = two_keys
    run(client, unique("et-ddl"), "CREATE TABLE et_moves (k STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED BY HASH(k) INTO 2 BUCKETS")
    hourly(client, "et_moves", "et_moves_hourly")
    insert("et_moves", f"('{first}', {at('10:30:00')})", f"('{second}', {at('12:10:00')})")
    assert windows(client, "et_moves_hourly") == []  # min(10:30, 12:10) - 1 ms: [10:00, 11:00) is open
    insert("et_moves", f"('{first}', {at('11:05:00')})")  # the other partition is idle: left out
    assert windows(client, "et_moves_hourly") == [("10:00", "11:00", "1")]
    insert("et_moves", f"('{first}', {at('13:00:00')})", f"('{second}', {at('12:20:00')})")
    assert windows(client, "et_moves_hourly") == [("10:00", "11:00", "1"), ("11:00", "12:00", "1")]


def test_without_idleness_an_empty_partition_holds_the_watermark(client: ConfluentClient, insert: Insert,
                                                                  two_keys: tuple[str, str]) -> None:
    first, _second = two_keys
    run(client, unique("et-ddl"), "CREATE TABLE et_quiet (k STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED BY HASH(k) INTO 2 BUCKETS")
    hourly(client, "et_quiet", "et_quiet_idle")
    hourly(client, "et_quiet", "et_quiet_strict", properties={"sql.tables.scan.idle-timeout": "0"})
    insert("et_quiet", f"('{first}', {at('10:05:00')})", f"('{first}', {at('11:30:00')})")
    assert windows(client, "et_quiet_idle") == [("10:00", "11:00", "1")]
    assert windows(client, "et_quiet_strict") == []  # the other partition never had a record


def test_hop_and_cumulate_emit_each_window_at_its_end(client: ConfluentClient, insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_hits_src (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM "
                                  "'timestamp') DISTRIBUTED INTO 1 BUCKETS")
    hourly(client, "et_hits_src", "et_hits_hop", window="HOP", sizes="INTERVAL '15' MINUTES, INTERVAL '30' MINUTES")
    hourly(client, "et_hits_src", "et_hits_cumulate", window="CUMULATE",
           sizes="INTERVAL '20' MINUTES, INTERVAL '1' HOUR")
    insert("et_hits_src", f"('a', {at('10:05:00')})", f"('b', {at('10:20:00')})")
    assert windows(client, "et_hits_hop") == [("09:45", "10:15", "1")]
    assert windows(client, "et_hits_cumulate") == [("10:00", "10:20", "1")]
    insert("et_hits_src", f"('c', {at('10:45:00')})")
    assert windows(client, "et_hits_hop") == [("09:45", "10:15", "1"), ("10:00", "10:30", "2"),
                                              ("10:15", "10:45", "1")]
    assert windows(client, "et_hits_cumulate") == [("10:00", "10:20", "1"), ("10:00", "10:40", "2")]


def test_a_bounded_statement_emits_every_window_when_its_input_ends(client: ConfluentClient,
                                                                     insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_batch (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    insert("et_batch", f"('a', {at('10:05:00')})", f"('b', {at('11:40:00')})")
    run(client, unique("et-ddl"), "CREATE TABLE et_batch_hourly (window_start TIMESTAMP(3), "
                                  "window_end TIMESTAMP(3), n BIGINT) DISTRIBUTED INTO 1 BUCKETS")
    name = unique("et-window")
    client.create_statement(name, "INSERT INTO et_batch_hourly SELECT window_start, window_end, COUNT(*) "
                                  "FROM TABLE(TUMBLE(TABLE et_batch, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)) "
                                  "GROUP BY window_start, window_end",
                            properties={"sql.tables.scan.bounded.mode": "latest-offset"})
    client.wait_for_phase(name, {"COMPLETED"}, timeout=120)  # the end of its input: the watermark's maximum
    assert windows(client, "et_batch_hourly") == [("10:00", "11:00", "1"), ("11:00", "12:00", "1")]


def test_a_snapshot_query_sees_every_window(client: ConfluentClient, insert: Insert) -> None:
    run(client, unique("et-ddl"), "CREATE TABLE et_now (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    insert("et_now", f"('a', {at('10:05:00')})")
    assert select(client, "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE et_now, DESCRIPTOR($rowtime), "
                          "INTERVAL '1' HOUR)) GROUP BY window_start, window_end") == [(f"{DAY} 10:00:00.000", "1")]


@pytest.mark.parametrize(("watermark", "delay_ms"), [
    (None, 1),  # the local default on $rowtime
    ("ts", 0),
    ("ts - INTERVAL '5' SECOND", 5000),
    ("`ts` - INTERVAL '0.001' SECOND", 1),
    ("ts - INTERVAL '2' MINUTE", 120_000),
    ("ts - INTERVAL '600' SECOND(3)", 600_000),  # a declared leading precision
    ("SOURCE_WATERMARK()", 1),
])
def test_watermark_delays(watermark: str | None, delay_ms: int) -> None:
    table = TableDef(uid="u", id=TableId(catalog="c", database="d", name="t"),
                     columns=[ColumnDef(name="ts", type="TIMESTAMP(3)")],
                     watermark_column="ts" if watermark else None, watermark_expression=watermark)
    assert watermark_spec(table) == WatermarkSpec("ts" if watermark else "$rowtime", delay_ms)


def test_an_unsupported_watermark_expression_is_refused() -> None:
    table = TableDef(uid="u", id=TableId(catalog="c", database="d", name="t"),
                     columns=[ColumnDef(name="ts", type="TIMESTAMP(3)")], watermark_column="ts",
                     watermark_expression="CASE WHEN ts IS NULL THEN ts END")
    with pytest.raises(WatermarkError, match="not supported by the local service"):
        watermark_spec(table)


@pytest.mark.parametrize(("value", "on"), [(None, True), ("15 s", True), ("0", False), ("0 ms", False),
                                           ("0s", False)])
def test_idleness_is_disabled_by_a_zero_timeout(value: str | None, on: bool) -> None:
    assert idleness({IDLE_TIMEOUT: value} if value is not None else {}) is on


def time_of(clock: str) -> datetime:
    return datetime.fromisoformat(f"{DAY} {clock}")


def deploy(client: ConfluentClient, sql: str) -> None:
    name = unique("eto-job")
    client.create_statement(name, sql)
    client.wait_for_phase(name, {"RUNNING"}, timeout=120)


def ddl(client: ConfluentClient, sql: str) -> None:
    run(client, unique("eto-ddl"), sql)


def over_rows(rows: list[tuple[str, int, str]], watermark: datetime,
              span: timedelta | None = timedelta(hours=1)) -> list[tuple[str, int, int, int]]:
    """(account, amount, SUM, COUNT) over the `span` up to each row (None: every earlier row), for the
    rows at or below the watermark."""
    out = []
    for account, amount, clock in rows:
        if time_of(clock) > watermark:
            continue
        first = time_of(clock) - span if span is not None else datetime.min
        frame = [a for k, a, c in rows if k == account and first <= time_of(c) <= time_of(clock)]
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


def test_an_outer_interval_join_never_retracts_a_padded_row_it_emitted(client: ConfluentClient,
                                                                       insert: Insert) -> None:
    for table in ("eti_l", "eti_r"):
        ddl(client, f"CREATE TABLE {table} (k STRING, v STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
                    "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eti_sink (k STRING, rv STRING) DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, "INSERT INTO eti_sink SELECT l.k, r.v FROM eti_l AS l LEFT JOIN eti_r AS r ON l.k = r.k "
                   "AND r.ts BETWEEN l.ts AND l.ts + INTERVAL '10' MINUTE")
    insert("eti_l", f"('a', 'x', {at('10:00:00')})", f"('z', 'x', {at('12:00:00')})")
    assert select(client, "SELECT * FROM eti_sink") == [("a", None)]  # eti_r idle: 'a' expired at 10:10
    insert("eti_r", f"('a', 'late', {at('10:05:00')})")
    assert select(client, "SELECT * FROM eti_sink") == [("a", None)]  # the padded row stays


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


Row = tuple[str, int, str]  # (key, value, clock time)


def flink_accepts(runs: list[list[Row]], late: Callable[[Row, datetime, list[Row]], bool]) -> list[Row]:
    """The rows an event-time operator keeps, run by run: `late(row, watermark, kept)` judges each row
    against the watermark before its run (highest time read so far - 1 ms) and the rows kept so far."""
    kept: list[Row] = []
    watermark = datetime.min
    for rows in runs:
        kept += [row for row in rows if not late(row, watermark, kept)]
        watermark = max(watermark, max(time_of(c) for _, _, c in rows) - MS)
    return kept


def not_after_last_emitted(row: Row, watermark: datetime, kept: list[Row]) -> bool:
    """A bounded OVER (RowTime*BoundedPrecedingFunction): late when not later than the last row of
    its key that the watermark emitted (the key's last triggering timestamp)."""
    emitted = [time_of(c) for k, _, c in kept if k == row[0] and time_of(c) <= watermark]
    return bool(emitted) and time_of(row[2]) <= max(emitted)


def not_after_watermark(row: Row, watermark: datetime, kept: list[Row]) -> bool:
    """An unbounded OVER (AbstractRowTimeUnboundedPrecedingOver): late when not after the watermark."""
    return time_of(row[2]) <= watermark


def before_watermark(row: Row, watermark: datetime, kept: list[Row]) -> bool:
    """Keep-first deduplication (RowTimeDeduplicateKeepFirstRowFunction): late when before the watermark."""
    return time_of(row[2]) < watermark


@pytest.mark.parametrize(("frame", "span", "late"), [
    ("INTERVAL '1' HOUR PRECEDING", timedelta(hours=1), not_after_last_emitted),
    ("UNBOUNDED PRECEDING", None, not_after_watermark),
])
def test_an_over_aggregate_drops_late_rows_as_flink_does(client: ConfluentClient, insert: Insert, frame: str,
                                                         span: timedelta | None,
                                                         late: Callable[[Row, datetime, list[Row]], bool]) -> None:
    source, sink = unique("eto_late_in").replace("-", "_"), unique("eto_late_out").replace("-", "_")
    ddl(client, f"CREATE TABLE {source} (account STRING, amount INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, f"CREATE TABLE {sink} (account STRING, amount INT, total INT, n BIGINT) DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, f"INSERT INTO {sink} SELECT account, amount, SUM(amount) OVER w, COUNT(*) OVER w FROM {source} "
                   f"WINDOW w AS (PARTITION BY account ORDER BY $rowtime RANGE BETWEEN {frame} AND CURRENT ROW)")
    runs = [[("a", 10, "09:00:00"), ("b", 5, "09:10:00"), ("a", 20, "09:30:00")],
            [("c", 1, "10:00:00")],
            # a at 09:20 is not later than a's last emitted row (09:30); b at 09:50 is below the watermark
            # (09:59:59.999) but later than b's last (09:10); d moves the watermark past both
            [("a", 7, "09:20:00"), ("b", 3, "09:50:00"), ("d", 2, "10:30:00")]]
    for rows in runs:
        insert(source, *(f"('{a}', {m}, {at(c)})" for a, m, c in rows))
    kept = flink_accepts(runs, late)
    assert ("a", 7, "09:20:00") not in kept
    assert sorted((a, int(m), int(t), int(n)) for a, m, t, n in select(client, f"SELECT * FROM {sink}")) == \
        over_rows(kept, time_of("10:30:00") - MS, span)


def test_keep_first_deduplication_drops_rows_before_the_watermark(client: ConfluentClient, insert: Insert) -> None:
    ddl(client, "CREATE TABLE eto_joins (email STRING, seat INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE eto_first_join (email STRING, seat INT, PRIMARY KEY (email) NOT ENFORCED) "
                "DISTRIBUTED BY HASH(email) INTO 1 BUCKETS WITH ('changelog.mode' = 'upsert')")
    deploy(client, "INSERT INTO eto_first_join SELECT email, seat FROM (SELECT email, seat, ROW_NUMBER() OVER "
                   "(PARTITION BY email ORDER BY $rowtime ASC) AS rn FROM eto_joins) WHERE rn = 1")
    runs = [[("a", 1, "09:00:00"), ("b", 2, "09:20:00")],
            [("c", 3, "09:40:00")],
            # before the watermark (09:39:59.999): b's earlier row (b was emitted) and c's (c is held);
            # d exactly at the watermark is not late; e moves the watermark past c and d
            [("b", 4, "09:10:00"), ("c", 5, "09:30:00"), ("d", 6, "09:39:59.999"), ("e", 7, "10:00:00")]]
    for rows in runs:
        insert("eto_joins", *(f"('{k}', {v}, {at(c)})" for k, v, c in rows))
    kept = flink_accepts(runs, before_watermark)
    assert ("d", 6, "09:39:59.999") in kept
    watermark = time_of("10:00:00") - MS
    expected = sorted((k, v) for k, v, c in kept if time_of(c) <= watermark and time_of(c) == min(
        time_of(cc) for kk, _, cc in kept if kk == k))
    assert sorted((e, int(s)) for e, s in select(client, "SELECT * FROM eto_first_join")) == expected


def test_a_left_temporal_join_never_retracts_a_probe_row_it_emitted(client: ConfluentClient,
                                                                   insert: Insert) -> None:
    ddl(client, "CREATE TABLE ett_v (k STRING NOT NULL, c STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, "
                "PRIMARY KEY (k) NOT ENFORCED) DISTRIBUTED BY HASH(k) INTO 1 BUCKETS "
                "WITH ('changelog.mode' = 'upsert')")
    ddl(client, "CREATE TABLE ett_p (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
                "DISTRIBUTED INTO 1 BUCKETS")
    ddl(client, "CREATE TABLE ett_sink (k STRING, pv INT, vv STRING) DISTRIBUTED INTO 1 BUCKETS")
    deploy(client, "INSERT INTO ett_sink SELECT p.k, p.v AS pv, v.c AS vv FROM ett_p AS p "
                   "LEFT JOIN ett_v FOR SYSTEM_TIME AS OF p.ts AS v ON p.k = v.k")
    insert("ett_p", f"('k1', 474, {at('10:24:00')})", f"('z', 0, {at('12:00:00')})")
    emitted = [("k1", "474", None), ("z", "0", None)]  # ett_v idle: both passed by the watermark, no version
    assert select(client, "SELECT * FROM ett_sink") == emitted
    insert("ett_v", f"('k1', 'late', {at('10:20:00')})")
    assert select(client, "SELECT * FROM ett_sink") == emitted  # emitted rows stay as they were


def test_a_temporal_join_joins_a_probe_row_to_the_versions_read_by_the_run_that_emitted_it(
        client: ConfluentClient, insert: Insert) -> None:
    """Flink (TemporalRowTimeJoinOperator) emits a probe row once, when the watermark passes its time, with the
    version valid then among those it holds: a version read later, even one late for its time, changes no row
    emitted (an append-only sink gets no D), and one late for its time but read before the probe row is
    emitted is the version that row gets. INNER and LEFT over the same runs."""
    ddl(client, "CREATE TABLE etr_v (k STRING NOT NULL, c STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, "
                "PRIMARY KEY (k) NOT ENFORCED) DISTRIBUTED BY HASH(k) INTO 1 BUCKETS "
                "WITH ('changelog.mode' = 'upsert')")
    ddl(client, "CREATE TABLE etr_p (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' HOUR) "
                "DISTRIBUTED INTO 1 BUCKETS")
    for kind in ("LEFT", "INNER"):
        ddl(client, f"CREATE TABLE etr_{kind.lower()} (k STRING, pv INT, vv STRING) DISTRIBUTED INTO 1 BUCKETS")
        deploy(client, f"INSERT INTO etr_{kind.lower()} SELECT p.k, p.v AS pv, v.c AS vv FROM etr_p AS p "
                       f"{kind} JOIN etr_v FOR SYSTEM_TIME AS OF p.ts AS v ON p.k = v.k")

    def sink(kind: str) -> list[tuple[str, str, str | None]]:
        return sorted(select(client, f"SELECT * FROM etr_{kind}"), key=str)

    insert("etr_v", f"('k1', 'v1', {at('09:00:00')})", f"('k2', 'x1', {at('09:00:00')})")  # watermark 09:00
    # the probe's watermark 12:10 - 1 h, the versions' idle: 11:10 passes the first four rows, z and k2's last wait
    insert("etr_p", f"('k1', 1, {at('10:00:00')})", f"('k2', 2, {at('10:30:00')})", f"('m', 5, {at('10:50:00')})",
           f"('k1', 3, {at('11:00:00')})", f"('z', 0, {at('12:00:00')})", f"('k2', 4, {at('12:10:00')})")
    emitted = [("k1", "1", "v1"), ("k1", "3", "v1"), ("k2", "2", "x1"), ("m", "5", None)]
    assert sink("left") == sorted(emitted, key=str)
    assert sink("inner") == sorted((r for r in emitted if r[2] is not None), key=str)
    # late for its time (at or below 11:10): v2 and m1 come after the rows they would change were emitted,
    # x2 before k2's row at 12:10 is; z1 is on time. The watermark moves to 11:30: nothing more is emitted.
    insert("etr_v", f"('k1', 'v2', {at('10:15:00')})", f"('m', 'm1', {at('10:40:00')})",
           f"('k2', 'x2', {at('10:45:00')})", f"('z', 'z1', {at('11:30:00')})")
    assert sink("left") == sorted(emitted, key=str)
    assert sink("inner") == sorted((r for r in emitted if r[2] is not None), key=str)
    insert("etr_p", f"('y', 0, {at('14:00:00')})")  # the watermark 13:00 passes z (z1) and k2's last (x2)
    emitted += [("z", "0", "z1"), ("k2", "4", "x2")]
    assert sink("left") == sorted(emitted, key=str)
    assert sink("inner") == sorted((r for r in emitted if r[2] is not None), key=str)
