"""The c360 pipeline: temporal join, TUMBLE window, CROSS JOIN UNNEST, MAP and ROW columns.

Expectations come from the seed rows in plain Python, and from the figures
flink_project/README.md states.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import pytest

from tests.integration.support import (
    client_for,
    deploy_pipelines,
    quiesce,
    run,
    seed_rows,
    seed_statements,
    select,
    unique,
    wired,
)

pytestmark = pytest.mark.service
SINKS = ("dim_c360_users", "fct_c360_purchase", "fct_c360_item_sales", "fct_c360_hourly_activity")


@pytest.fixture(scope="module")
def c360(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    for topic in ("raw_users", "raw_groups", "raw_purchases", "raw_app_events"):
        for sql in seed_statements(topic):
            run(client, unique("c360-seed"), sql)
    deploy_pipelines(client, SINKS, "c360")
    assert quiesce(local_service.url)["quiet"]
    return client


def valid_purchases() -> list[dict]:
    return [p for p in seed_rows("raw_purchases") if p["purchase_id"] is not None and (p["amount"] or 0) > 0]


def test_temporal_join_picks_the_version_valid_at_purchase_time(c360):  # type: ignore[no-untyped-def]
    versions = defaultdict(list)
    for user in seed_rows("raw_users"):
        if user["user_id"] is not None:
            versions[user["user_id"]].append((user["event_ts"], (user["tier"] or "bronze").upper()))
    want = []
    for purchase in valid_purchases():
        valid = [v for v in versions[purchase["user_id"]] if v[0] <= purchase["event_ts"]]
        if valid:
            want.append((purchase["purchase_id"], max(valid)[1]))
    got = select(c360, "SELECT purchase_id, tier_at_purchase FROM fct_c360_purchase")
    assert got == wired(want) and len(got) == 18
    tiers = {p: t for p, t in got if p in ("pur-001", "pur-007", "pur-010", "pur-018", "pur-019")}
    assert tiers == {"pur-001": "BRONZE", "pur-007": "BRONZE", "pur-010": "SILVER", "pur-018": "SILVER",
                     "pur-019": "GOLD"}


def test_unnest_then_aggregate(c360):  # type: ignore[no-untyped-def]
    items = [(p["purchase_id"], p["user_id"], item.strip(" ").upper(), p["event_ts"])
             for p in valid_purchases() for item in p["items"] or []]
    assert len(select(c360, "SELECT * FROM int_c360_purchase_items")) == len(items) == 29
    by_sku = defaultdict(list)
    for item in items:
        by_sku[item[2]].append(item)
    want = [(sku, len(rows), len({r[0] for r in rows}), len({r[1] for r in rows}), min(r[3] for r in rows),
             max(r[3] for r in rows)) for sku, rows in by_sku.items()]
    assert select(c360, "SELECT * FROM fct_c360_item_sales") == wired(want)


def test_tumble_window(c360):  # type: ignore[no-untyped-def]
    """Only the windows the watermark passed: src_c360_app_events has one partition, and the default
    watermark is its highest $rowtime - 1 ms, so the last hour (2 event types) is still open."""
    groups = defaultdict(list)
    events = [e for e in seed_rows("raw_app_events")
              if e["user_id"] is not None and e["event_type"].strip(" ").lower() != "heartbeat"]
    watermark = max(e["event_ts"] for e in events) - timedelta(milliseconds=1)
    for event in events:
        start = event["event_ts"].replace(minute=0, second=0, microsecond=0)
        if start + timedelta(hours=1) - timedelta(milliseconds=1) <= watermark:
            groups[(start, start + timedelta(hours=1), event["event_type"].strip(" ").lower())].append(event)
    want = [(*key, len(rows), len({r["user_id"] for r in rows}), sum(r["duration_ms"] or 0 for r in rows),
             max(r["duration_ms"] or 0 for r in rows)) for key, rows in groups.items()]
    got = select(c360, "SELECT * FROM fct_c360_hourly_activity")
    assert got == wired(want) and len(got) == 27


def test_left_join_dimension_with_map_column(c360):  # type: ignore[no-untyped-def]
    rows = select(c360, "SELECT user_id, preferred_language, group_name FROM dim_c360_users")
    assert len(rows) == 12
    assert sorted(r[0] for r in rows if r[2] == "NO GROUP") == ["u-004", "u-006", "u-007"]
    languages = {u["user_id"]: (u["preferences"] or {}).get("language", "en")
                 for u in seed_rows("raw_users") if u["user_id"] is not None}  # the last version wins
    assert {r[0]: r[1] for r in rows} == languages
