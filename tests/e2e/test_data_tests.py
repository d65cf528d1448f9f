"""Data tests a team declares in a table's checks/ folder run as Dagster asset checks: the rows a
query returns fail it, its declared severity decides whether it blocks, and it counts what it read.

Expected counts are computed here with plain Spark filters over the sink's rows, not by the
data-test code.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, AssetKey, AssetSelection, materialize
from pyspark.sql import functions as F

from shift_left_dagster.checks.data_tests import discover, run_data_test
from shift_left_dagster.defs.assets import FlinkProject, build_flink_asset_specs, build_flink_assets
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from tests.integration.support import PROJECT

pytestmark = [pytest.mark.spark, pytest.mark.service]

TABLES = ["src_table_3", "int_table_2"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the sample with three tests on int_table_2: one passing (error), one failing (warn),
    one failing (error) that is added later by the test that needs it."""
    root = tmp_path_factory.mktemp("data-tests") / "flink_project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns(".shift_left_cache*"))
    checks = root / "pipelines/intermediates/p1/int_table_2/checks"
    checks.mkdir()
    (checks / "no_negative_payment_count.sql").write_text(
        "SELECT order_id, payment_count FROM int_table_2 WHERE payment_count < 0\n")
    (checks / "no_refunds.sql").write_text(
        "-- severity: warn\nSELECT order_id, refund_count FROM int_table_2 WHERE refund_count > 0\n")
    return root


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("data-tests-service"), spark_factory=lambda: spark) as running:
        yield running


def run(project: Path, service: InProcessService, tables: list[str]):  # type: ignore[no-untyped-def]
    assets = build_flink_assets(FlinkProject(project / "pipelines"))
    selection = AssetSelection.assets(*tables) | AssetSelection.checks_for_assets(*tables)
    confluent = ConfluentFlinkResource(mode="local", local_url=service.url, local_data_dir=str(service.data_dir))
    return materialize(assets, selection=selection, raise_on_error=False,
                       resources={"confluent": confluent, "checks": FlinkChecksResource(), "spark": SparkResource()})


def sink_rows(service: InProcessService, spark, table: str):  # type: ignore[no-untyped-def]
    data = LocalData(service.data_dir, spark)
    return data.current_rows(data.table(table))


def test_declared_tests_are_asset_checks_with_their_severity(project: Path) -> None:
    specs = {(s.asset_key, s.name): s
             for s in build_flink_asset_specs(FlinkProject(project / "pipelines")).check_specs}
    passing = specs[(AssetKey("int_table_2"), "no_negative_payment_count")]
    warning = specs[(AssetKey("int_table_2"), "no_refunds")]
    assert passing.blocking and not warning.blocking
    assert "no_refunds.sql" in (warning.description or "")


def test_data_tests_run_after_deploy_with_counts_and_severity(project: Path, service: InProcessService,
                                                               spark) -> None:  # type: ignore[no-untyped-def]
    result = run(project, service, TABLES)
    assert result.success  # the failing test is a WARN: it never blocks
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()
                   if e.asset_key == AssetKey("int_table_2")}
    rows = sink_rows(service, spark, "int_table_2")
    total, refunded = rows.count(), rows.filter(F.col("refund_count") > 0).count()
    assert total > 0 and refunded > 0, "the sample must hold refunded orders for this test to mean anything"

    passing = evaluations["no_negative_payment_count"]
    assert passing.passed and passing.metadata["compared_rows"].value == total
    assert passing.metadata["failing_rows"].value == 0

    warning = evaluations["no_refunds"]
    assert not warning.passed and warning.severity == AssetCheckSeverity.WARN
    assert warning.metadata["failing_rows"].value == refunded
    assert warning.metadata["compared_rows"].value == total
    assert f"{refunded} offending row(s)" in (warning.description or "")


def test_a_failing_error_test_blocks_what_depends_on_the_table(project: Path, service: InProcessService) -> None:
    blocking = project / "pipelines/intermediates/p1/int_table_2/checks/no_paid_orders.sql"
    blocking.write_text("SELECT order_id FROM int_table_2 WHERE paid_amount > 0\n")
    try:
        result = run(project, service, ["int_table_2", "fct_order"])
    finally:
        blocking.unlink()
    assert not result.success
    failed = next(e for e in result.get_asset_check_evaluations() if e.check_name == "no_paid_orders")
    assert not failed.passed and failed.severity == AssetCheckSeverity.ERROR
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert AssetKey("fct_order") not in materialized


def test_bad_test_files_are_failing_checks_named_by_file_never_a_load_error(tmp_path: Path) -> None:
    project = FlinkProject(PROJECT / "pipelines")
    table = project.graph.tables["int_table_2"]
    folder = tmp_path / table.folder / "checks"
    folder.mkdir(parents=True)
    (folder / "reconciled.sql").write_text("SELECT 1")
    (folder / "odd.sql").write_text("-- x\n-- severity: fatal\nSELECT 1")
    found = {t.name: t for t in discover(tmp_path, {"int_table_2": table})["int_table_2"]}
    assert sorted(found) == ["odd", "reconciled_test"]
    assert "reconciled.sql: reconciled is a built-in check's name" in (found["reconciled_test"].problem or "")
    assert "odd.sql:2: severity must be error or warn, not 'fatal'" in (found["odd"].problem or "")
    with pytest.raises(ValueError, match="odd.sql:2: severity"):
        run_data_test(found["odd"], lambda name: None, "int_table_2", 5)  # type: ignore[arg-type,return-value]
