"""Checks on the c360 pipeline (MAP, ARRAY, ROW columns, temporal join, windows) deployed as the op does.

A clean deployment passes every check, and each reconciliation compares rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from shift_left_dagster.checks import (
    CheckName,
    CheckOutcome,
    ChecksSettings,
    LocalSinkReader,
    find_dml_statements,
    run_checks,
)
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.seed_topics import seed_raw_topics
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for, quiesce

pytestmark = [pytest.mark.spark, pytest.mark.service]

ENV = "local"
SINKS = ["dim_c360_users", "fct_c360_purchase", "fct_c360_item_sales", "fct_c360_hourly_activity"]
RAW = {"raw_users", "raw_groups", "raw_purchases", "raw_app_events"}


@pytest.fixture(scope="module")
def c360(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[str, str], CheckOutcome]]:
    """Every check of every c360 table, on a clean deployment that has caught up."""
    with InProcessService(tmp_path_factory.mktemp("c360-checks"), spark_factory=lambda: spark) as service:
        client = client_for(service.url)
        client.settings.poll.initial = client.settings.poll.step = 0.05
        graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
        seed_raw_topics(client, PROJECT / "seeds", only=RAW)
        Deployer(client, graph, local_defaults(service.url)).deploy(SINKS).wait()
        assert quiesce(service.url)["quiet"]
        tables = [graph.tables[name] for name in graph.sorted_subset(
            {t for sink in SINKS for t in [*graph.ancestors(sink), sink]})]
        reader = LocalSinkReader(LocalData(service.data_dir, spark))
        try:
            found = run_checks(tables, reader, find_dml_statements(client, tables, ENV), ChecksSettings(sample_rows=3))
        finally:
            reader.close()
        yield {(o.table, o.check): o for o in found}


def test_clean_c360_passes_every_check(c360: dict[tuple[str, str], CheckOutcome]) -> None:
    failed = {key: outcome.message for key, outcome in c360.items() if not outcome.passed}
    assert failed == {}


def test_every_data_check_compared_rows(c360: dict[tuple[str, str], CheckOutcome]) -> None:
    data = {key: o for key, o in c360.items() if key[1] in ("reconciled", "unique_primary_key")}
    assert data and all(o.metadata["compared_rows"] > 0 for o in data.values()), {
        key: o.metadata.get("compared_rows") for key, o in data.items()}
    assert all("rows" in o.message for o in data.values())


def test_map_column_reconciles(c360: dict[tuple[str, str], CheckOutcome]) -> None:
    users = c360[("src_c360_users", CheckName.RECONCILED.value)]
    assert users.passed, users.metadata
    assert users.metadata["different"] == 0 and users.metadata["expected_rows"] == users.metadata["actual_rows"] > 0
