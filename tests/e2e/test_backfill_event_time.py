"""A closed-window backfill selects by event time: fct_c360_hourly_activity for 2026-01-02..03 lands
every hourly window of those days (the issue saw 5 of 11, all of Jan 2 missing)."""

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

import pytest

from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.plan import Action
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for, quiesce, seed_rows, select

pytestmark = pytest.mark.service

START, END = datetime(2026, 1, 2), datetime(2026, 1, 4)


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("backfill-service"), spark_factory=lambda: spark) as running:
        yield running


def expected_windows() -> list[tuple[str, ...]]:
    """The hourly TUMBLE aggregate of src_c360_app_events over [START, END), in plain Python."""
    groups: dict[tuple[datetime, str], list[tuple[str, int]]] = defaultdict(list)
    for row in seed_rows("raw_app_events"):
        kind = (row["event_type"] or "").strip().lower()
        if row["user_id"] is None or kind == "heartbeat" or not START <= row["event_ts"] < END:
            continue
        hour = row["event_ts"].replace(minute=0, second=0, microsecond=0)
        groups[(hour, kind)].append((row["user_id"], row["duration_ms"] or 0))
    rows = []
    for (hour, kind), events in groups.items():
        durations = [d for _, d in events]
        rows.append((f"{hour:%Y-%m-%d %H}:00:00.000", kind, str(len(events)), str(len({u for u, _ in events})),
                     str(sum(durations)), str(max(durations))))
    return sorted(rows, key=repr)


def test_closed_window_backfill_lands_every_window_of_its_days(service):  # type: ignore[no-untyped-def]
    client = client_for(service.url)
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    deployer = Deployer(client=client, graph=graph, config=local_defaults(service.url), seeds_dir=PROJECT / "seeds")
    deployer.deploy(["src_c360_app_events"]).wait()
    late = deployer.deploy(["fct_c360_hourly_activity"], start_at=END)  # its history before Jan 4 is missing
    assert [s.action for s in late.plan.changes if s.table] == [Action.DEPLOY]
    late.wait()
    assert quiesce(service.url)["quiet"]
    window = "WHERE window_start >= TIMESTAMP '2026-01-02 00:00:00' AND window_start < TIMESTAMP '2026-01-04 00:00:00'"
    query = ("SELECT window_start, event_type, event_count, unique_users, total_duration_ms, max_duration_ms "
             f"FROM fct_c360_hourly_activity {window}")
    assert select(client, query) == []

    backfill = deployer.backfill(["fct_c360_hourly_activity"], START, END)
    assert [s.action for s in backfill.plan.steps] == [Action.BACKFILL]
    backfill.wait()
    assert quiesce(service.url)["quiet"]
    expected = expected_windows()
    assert len(expected) >= 5
    assert select(client, query) == expected
    assert not [s for s in client.list_statements() if "-bf-" in s.name]  # bounded statements are removed
