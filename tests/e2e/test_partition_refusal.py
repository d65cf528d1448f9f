"""A partition range the plan refuses fails the run before anything runs, in one line: a Dagster
Failure with a description and metadata, no traceback from our code (issue 29, build 1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.partitioned import SAMPLE_PARTITIONS
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import client_for

pytestmark = [pytest.mark.spark, pytest.mark.service]


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("refusal-service"), spark_factory=lambda: spark) as running:
        yield running


def test_a_closed_range_on_a_stateful_table_is_refused_in_one_line_before_anything_runs(service) -> None:  # type: ignore[no-untyped-def]
    assets = build_flink_assets(FlinkProject(), partitions_def=SAMPLE_PARTITIONS.definition())
    before = {s.name for s in client_for(service.url).list_statements()}
    result = materialize(
        assets, selection=AssetSelection.assets(AssetKey("fct_order")),
        resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url)),
        instance=DagsterInstance.ephemeral(), raise_on_error=False,
        tags={"dagster/asset_partition_range_start": "2026-01-02", "dagster/asset_partition_range_end": "2026-01-03"})
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    data = failure.event_specific_data
    assert data.error.cls_name == "Failure" and data.error.cause is None, data.error.to_string()
    description = data.user_failure_data.description
    assert "\n" not in description and "fct_order is stateful" in description, description
    assert "window" in data.user_failure_data.metadata
    assert {s.name for s in client_for(service.url).list_statements()} == before  # nothing ran
