"""A Dagster run logs each plan step when it starts and when it ends (issue 29, build 2): the run's log
says what is happening during the minutes a deployment takes, not only at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.e2e.test_partitions import CLICKS_V1, DAILY_V1, write_project

pytestmark = [pytest.mark.spark, pytest.mark.service]


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("progress-service"), spark_factory=lambda: spark) as running:
        yield running


def test_each_plan_step_is_logged_in_the_run_when_it_starts_and_ends(service, tmp_path) -> None:  # type: ignore[no-untyped-def]
    write_project(tmp_path, CLICKS_V1, DAILY_V1)
    instance = DagsterInstance.ephemeral()
    result = materialize(
        build_flink_assets(FlinkProject(tmp_path / "pipelines")),
        selection=AssetSelection.assets(AssetKey("clicks")),
        resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url)),
        instance=instance, raise_on_error=False)
    assert result.success
    messages = [e.user_message for e in instance.all_logs(result.run_id) if e.dagster_event is None]
    started = [i for i, m in enumerate(messages) if m.startswith("step ") and "clicks" in m and "done" not in m]
    ended = [i for i, m in enumerate(messages) if m.startswith("step ") and "clicks" in m and " done" in m]
    assert started and ended and started[0] < ended[-1], messages
    assert any("raw_clicks" in messages[i] for i in started)  # the seed step too: every step, not only tables
