"""A project with a broken DML still deploys its other tables through Dagster, on the local service."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service

BROKEN_DML = "pipelines/intermediates/p1/int_table_1/sql-scripts/dml.int_table_1.sql"


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("broken-service"), spark_factory=lambda: spark) as running:
        yield running


def test_a_healthy_table_deploys_beside_a_broken_one(service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shutil.copytree(PROJECT, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    (tmp_path / "project" / BROKEN_DML).write_text("INSERT INTO int_table_1\nSELECT FROM src_table_1 WHERE\n")
    assets = build_flink_assets(FlinkProject(tmp_path / "project" / "pipelines"))
    result = materialize(assets, selection=[AssetKey("src_table_3")],
                         resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url)))
    assert result.success
    assert {e.asset_key.path[-1] for e in result.get_asset_materialization_events()} == {"src_table_3"}
    assert not {e.asset_key.path[-1] for e in result.get_asset_check_evaluations()} & {"int_table_1", "fct_order"}
    names = {s.name for s in client_for(service.url).list_statements()}
    assert "local-p1-dml-src-table-3" in names
    assert not any("int-table-1" in n or "fct-order" in n for n in names)
