"""Partition ranges drive partial-history rebuilds, through real Dagster runs on the local service.

A small project of its own: raw clicks over 5 days -> `clicks` (stateless, keyed)
-> `clicks_daily` (a TUMBLE(1 DAY) aggregate). Expected rows are computed here
from the seed rows, in plain Python.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, PartitionKeyRange, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.partitions import PartitionsConfig
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import client_for, quiesce, select

pytestmark = pytest.mark.service

DAYS = [datetime(2026, 1, d) for d in range(1, 6)]
PAGES = ["home", "cart", "pay"]
CLICKS = [(f"c{d}-{i}", f"u{i % 3}", PAGES[(d + i) % 3], DAYS[d - 1] + timedelta(hours=i))
          for d in range(1, 6) for i in range(4)]
PARTITIONS = PartitionsConfig(granularity="daily", start="2026-01-01")

CLICKS_DDL = """CREATE TABLE clicks (click_id STRING NOT NULL, user_id STRING, page STRING,
  PRIMARY KEY (click_id) NOT ENFORCED) DISTRIBUTED BY HASH(click_id) INTO 1 BUCKETS
WITH ('changelog.mode' = 'upsert')"""
CLICKS_V1 = "INSERT INTO clicks SELECT click_id, user_id, UPPER(page) AS page FROM raw_clicks"
CLICKS_V2 = "INSERT INTO clicks SELECT click_id, CONCAT('v2-', user_id) AS user_id, UPPER(page) AS page FROM raw_clicks"
DAILY_DDL = """CREATE TABLE clicks_daily (window_start TIMESTAMP(3) NOT NULL, page STRING NOT NULL, clicks BIGINT,
  PRIMARY KEY (window_start, page) NOT ENFORCED) DISTRIBUTED BY HASH(window_start, page) INTO 1 BUCKETS
WITH ('changelog.mode' = 'upsert')"""
DAILY_V1 = """INSERT INTO clicks_daily SELECT window_start, page, COUNT(*) AS clicks
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR($rowtime), INTERVAL '1' DAY)) GROUP BY window_start, window_end, page"""
DAILY_V2 = DAILY_V1.replace("COUNT(*) AS clicks", "COUNT(*) * 10 AS clicks")


def write_project(root: Path, clicks_dml: str, daily_dml: str) -> None:
    for folder, name, ddl, dml in (("sources/web", "clicks", CLICKS_DDL, clicks_dml),
                                   ("facts/web", "clicks_daily", DAILY_DDL, daily_dml)):
        scripts = root / "pipelines" / folder / name / "sql-scripts"
        scripts.mkdir(parents=True, exist_ok=True)
        (scripts / f"ddl.{name}.sql").write_text(ddl)
        (scripts / f"dml.{name}.sql").write_text(dml)
    seeds = root / "seeds"
    seeds.mkdir(exist_ok=True)
    values = ",\n".join(f"('{c}', '{u}', '{p}', TIMESTAMP '{t:%Y-%m-%d %H:%M:%S}')" for c, u, p, t in CLICKS)
    (seeds / "raw_clicks.sql").write_text(
        "CREATE TABLE raw_clicks (click_id STRING, user_id STRING, page STRING, "
        "event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO 1 BUCKETS "
        f"WITH ('changelog.mode' = 'append');\nINSERT INTO raw_clicks VALUES\n{values};\n")


def expected_clicks(version_by_day: dict[int, int]) -> list[tuple]:
    user = {1: lambda u: u, 2: lambda u: f"v2-{u}"}
    return sorted(((c, user[version_by_day[t.day]](u), p.upper()) for c, u, p, t in CLICKS), key=repr)


def expected_daily(version_by_day: dict[int, int]) -> list[tuple]:
    """The daily windows of the days given (a window is emitted once the watermark passes its end)."""
    counts = Counter((t.day, p.upper()) for _, _, p, t in CLICKS if t.day in version_by_day)
    return sorted(((f"2026-01-0{day} 00:00:00.000", page, str(n * (10 if version_by_day[day] == 2 else 1)))
                   for (day, page), n in counts.items()), key=repr)


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("partitions-service"), spark_factory=lambda: spark) as running:
        yield running


def run_range(project_root: Path, url: str, instance: DagsterInstance, start: str, end: str, **config):  # type: ignore[no-untyped-def]
    assets = build_flink_assets(FlinkProject(project_root / "pipelines"), partitions_def=PARTITIONS.definition())
    return materialize(
        assets,
        selection=AssetSelection.assets(AssetKey("clicks"), AssetKey("clicks_daily")),
        resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=url)),
        instance=instance,
        tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
        run_config={"ops": {"flink_project": {"config": config}}} if config else None,
        raise_on_error=False,
    )


def test_partition_ranges(service, tmp_path):  # type: ignore[no-untyped-def]
    root = tmp_path / "project"
    write_project(root, CLICKS_V1, DAILY_V1)
    client = client_for(service.url)
    instance = DagsterInstance.ephemeral()
    last = PARTITIONS.definition().get_last_partition_key()

    # A range reaching the open partition deploys the continuous statements from the range start.
    first = run_range(root, service.url, instance, "2026-01-01", last)
    assert first.success
    partitions = {e.partition for e in first.get_asset_materialization_events() if e.asset_key == AssetKey("clicks")}
    assert "2026-01-01" in partitions and last in partitions  # one run records every partition of the range
    quiesce(service.url)
    all_v1 = {d: 1 for d in range(1, 6)}
    assert select(client, "SELECT * FROM clicks") == expected_clicks(all_v1)
    closed = {d: 1 for d in range(1, 5)}  # the watermark (the last click - 1 ms) has not passed the end of day 5
    assert select(client, "SELECT * FROM clicks_daily") == expected_daily(closed)
    running = {s.name: s.metadata.uid for s in client.list_statements() if s.phase == "RUNNING"}
    assert len(running) == 2

    # The latest partition of a running, unchanged pipeline: nothing changes.
    latest = run_range(root, service.url, instance, last, last)
    assert latest.success
    assert {s.name: s.metadata.uid for s in client.list_statements() if s.phase == "RUNNING"} == running

    # A changed stateful table rebuilt from the latest partition only would drop its history: refused.
    write_project(root, CLICKS_V1, DAILY_V2)
    refused = run_range(root, service.url, instance, last, last)
    assert not refused.success
    failure = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE")
    message = str(failure.event_specific_data.error)
    assert "clicks_daily: history before" in message and "allow_partial_history" in message

    # A closed range (days 2-3) rewrites exactly those windows with the new code; other days untouched.
    # (Upsert semantics: the keys the window produces are rewritten; none are deleted.)
    write_project(root, CLICKS_V2, DAILY_V2)
    backfill = run_range(root, service.url, instance, "2026-01-02", "2026-01-03")
    assert backfill.success, [str(e) for e in backfill.all_events if e.is_failure]
    days = {1: 1, 2: 2, 3: 2, 4: 1, 5: 1}
    once_clicks, once_daily = select(client, "SELECT * FROM clicks"), select(client, "SELECT * FROM clicks_daily")
    assert once_clicks == expected_clicks(days)
    assert once_daily == expected_daily({d: v for d, v in days.items() if d != 5})  # day 5 still open
    assert not [s for s in client.list_statements() if "-bf-" in s.name]  # bounded statements are deleted

    # Running the same backfill again changes nothing.
    again = run_range(root, service.url, instance, "2026-01-02", "2026-01-03")
    assert again.success
    assert select(client, "SELECT * FROM clicks") == once_clicks
    assert select(client, "SELECT * FROM clicks_daily") == once_daily


def test_a_parent_deployed_for_its_child_holds_the_runs_partitions(spark, tmp_path):  # type: ignore[no-untyped-def]
    """A range of `clicks_daily` alone (from the partitions start: no history dropped) deploys its parent
    `clicks` too: `clicks` then holds the range's partitions in the instance, so Dagster's backfill dialog
    shows no "Upstream data missing" on a range of its children (the dialog reads the same-partitioned
    parents' materialized partitions)."""
    root = tmp_path / "project"
    write_project(root, CLICKS_V1, DAILY_V1)
    instance = DagsterInstance.ephemeral()
    partitions = PARTITIONS.definition()
    last = partitions.get_last_partition_key()
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as running:
        result = materialize(
            build_flink_assets(FlinkProject(root / "pipelines"), partitions_def=partitions),
            selection=AssetSelection.assets(AssetKey("clicks_daily")),
            resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=running.url)),
            instance=instance, raise_on_error=False,
            tags={"dagster/asset_partition_range_start": "2026-01-01", "dagster/asset_partition_range_end": last})
        assert result.success
        deployed = {s.spec.statement.split()[2] for s in client_for(running.url).list_statements()
                    if s.phase == "RUNNING" and s.spec.statement}
    assert deployed == {"clicks", "clicks_daily"}  # the parent was deployed outside the selection
    in_range = set(partitions.get_partition_keys_in_range(PartitionKeyRange("2026-01-01", last)))
    assert instance.get_materialized_partitions(AssetKey("clicks")) == in_range
    assert instance.get_materialized_partitions(AssetKey("clicks_daily")) == in_range
