"""Flink functions and windows run through the service: the Spark translation gives Flink's answers."""

from __future__ import annotations

import pytest

from tests.integration.support import client_for, quiesce, run, select, unique

pytestmark = pytest.mark.service


@pytest.mark.parametrize(("expression", "value"), [
    ("JSON_VALUE('{\"brand\": \"visa\"}', '$.brand')", "visa"),
    ("FLOOR(TIMESTAMP '2026-01-01 10:37:12' TO HOUR)", "2026-01-01 10:00:00.000"),
    ("CEIL(TIMESTAMP '2026-01-01 10:37:12' TO DAY)", "2026-01-02 00:00:00.000"),
    ("TO_TIMESTAMP_LTZ(1767225600000, 3)", "2026-01-01 00:00:00.000"),
    ("TO_TIMESTAMP('2026-01-02 03:04:05')", "2026-01-02 03:04:05.000"),
    ("DATE_FORMAT(TIMESTAMP '2026-01-02 03:04:05', 'yyyy-MM-dd HH:mm')", "2026-01-02 03:04"),
    ("ROW(1, 'a')", ["1", "a"]),
    ("MAP['k', 'v']", [["k", "v"]]),
    ("ARRAY['a', 'b']", ["a", "b"]),
    ("CURRENT_WATERMARK(TIMESTAMP '2026-01-01 00:00:00') IS NULL", "TRUE"),
    ("CAST(TIMESTAMP '2026-01-01 23:59:59' AS DATE)", "2026-01-01"),
    ("CAST(7 * 1.25 AS DECIMAL(12, 2))", "8.75"),  # Flink: decimal arithmetic, then the cast
    ("CAST(-(7 / 2) AS INT)", "-3"),
    ("CAST(' 42 ' AS INT)", "42"),  # a string: parsed as Flink parses it (blanks around)
    ("TIMESTAMPDIFF(MINUTE, TIMESTAMP '2026-01-01 00:00:00', TIMESTAMP '2026-01-01 01:30:00')", "90"),
])
def test_functions(local_service, expression: str, value):  # type: ignore[no-untyped-def]
    row = select(client_for(local_service.url), f"SELECT {expression}")
    assert row == [(tuple(value) if isinstance(value, list) and not isinstance(value[0], list) else
                    tuple(tuple(v) for v in value) if isinstance(value, list) else value,)]


@pytest.fixture(scope="module")
def clicks(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("tr-ddl"), "CREATE TABLE tr_clicks (u STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', "
                                  "tags ARRAY<STRING>) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tr-insert"), "INSERT INTO tr_clicks VALUES "
        "('a', TIMESTAMP '2026-01-01 00:10:00', ARRAY['x', 'y']), ('b', TIMESTAMP '2026-01-01 00:20:00', NULL), "
        "('a', TIMESTAMP '2026-01-01 00:40:00', ARRAY['z'])")
    return client


def test_hop_window(clicks):  # type: ignore[no-untyped-def]
    rows = select(clicks, "SELECT window_start, window_end, COUNT(*) FROM TABLE(HOP(TABLE tr_clicks, "
                          "DESCRIPTOR($rowtime), INTERVAL '15' MINUTES, INTERVAL '30' MINUTES)) "
                          "GROUP BY window_start, window_end")
    starts = {r[0][11:16]: r[2] for r in rows}
    assert starts == {"23:45": "1", "00:00": "2", "00:15": "2", "00:30": "1"}


def test_cumulate_window(clicks):  # type: ignore[no-untyped-def]
    rows = select(clicks, "SELECT window_end, COUNT(*) FROM TABLE(CUMULATE(TABLE tr_clicks, DESCRIPTOR(ts), "
                          "INTERVAL '20' MINUTES, INTERVAL '1' HOUR)) GROUP BY window_end")
    assert {r[0][11:16]: r[1] for r in rows} == {"00:20": "1", "00:40": "2", "01:00": "3"}


def test_select_star_hides_system_columns_and_unnest_drops_empty(clicks):  # type: ignore[no-untyped-def]
    assert len(select(clicks, "SELECT * FROM tr_clicks")[0]) == 3
    rows = select(clicks, "SELECT c.u, t.tag FROM tr_clicks AS c CROSS JOIN UNNEST(c.tags) AS t(tag)")
    assert rows == [("a", "x"), ("a", "y"), ("a", "z")]


def test_dedup_keeps_first_row(local_service, clicks):  # type: ignore[no-untyped-def]
    run(clicks, unique("tr-ddl"), "CREATE TABLE tr_first (u STRING, ts TIMESTAMP_LTZ(3), PRIMARY KEY (u) NOT ENFORCED) "
                                  "DISTRIBUTED BY HASH(u) INTO 1 BUCKETS")
    run(clicks, unique("tr-dedup"), "INSERT INTO tr_first SELECT u, ts FROM (SELECT u, ts, ROW_NUMBER() OVER "
                                    "(PARTITION BY u ORDER BY $rowtime ASC) AS rn FROM tr_clicks) WHERE rn = 1",
        "RUNNING")
    quiesce(local_service.url)
    assert select(clicks, "SELECT * FROM tr_first") == [("a", "2026-01-01 00:10:00.000"),
                                                         ("b", "2026-01-01 00:20:00.000")]
