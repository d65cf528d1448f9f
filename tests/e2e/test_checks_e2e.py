"""The checks as Dagster asset checks of the table assets: evaluated by the deploying op after each
table deploys, on the run's lazy SparkSession, against the local service's sink data.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, AssetSelection, DagsterInstance, materialize
from pyspark.sql import functions as F

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.checks import FlinkChecksResource, SparkResource
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import PROJECT, client_for, quiesce

pytestmark = [pytest.mark.spark, pytest.mark.service]

TABLES = ["src_table_3", "int_table_2"]


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """A service of this module's own (its tables must not meet other tests'), on the shared Spark."""
    with InProcessService(tmp_path_factory.mktemp("checks-e2e"), spark_factory=lambda: spark) as running:
        yield running


def run(service: InProcessService):  # type: ignore[no-untyped-def]
    assets = build_flink_assets(FlinkProject(PROJECT / "pipelines"))
    selection = AssetSelection.assets(*TABLES) | AssetSelection.checks_for_assets(*TABLES)
    confluent = ConfluentFlinkResource(mode="local", local_url=service.url, local_data_dir=str(service.data_dir))
    return materialize(assets, selection=selection, raise_on_error=False,
                       resources={"confluent": confluent, "checks": FlinkChecksResource(), "spark": SparkResource()})


def test_checks_pass_after_deploy_then_a_blocking_check_fails_on_a_corrupted_sink(service) -> None:  # type: ignore[no-untyped-def]
    deployed = run(service)
    assert deployed.success
    evaluations = {(e.asset_key.path[-1], e.check_name): e for e in deployed.get_asset_check_evaluations()}
    assert sorted(evaluations) == sorted([
        ("int_table_2", "reconciled"), ("int_table_2", "schema_matches_ddl"), ("int_table_2", "statement_healthy"),
        ("int_table_2", "unique_primary_key"),
        ("src_table_3", "reconciled"), ("src_table_3", "schema_matches_ddl"), ("src_table_3", "statement_healthy"),
    ])
    assert all(e.passed for e in evaluations.values()), {k: e.description for k, e in evaluations.items()}
    assert evaluations[("int_table_2", "reconciled")].metadata["missing"].value == 0

    assert quiesce(service.url)["quiet"]
    engine = service.engine  # an extra int_table_2 row written outside any statement
    table = next(t for t in engine.store.tables() if t.name == "int_table_2")
    extra = engine.logs.spark.createDataFrame(
        [("ord-999", 1, 1, 0)], "order_id string, paid_amount int, payment_count long, refund_count int").select(
        F.col("order_id"), F.col("paid_amount").cast("decimal(12,2)"), "payment_count", "refund_count",
        F.current_timestamp().alias("last_payment_ts"), F.current_timestamp().alias(ROWTIME),
        F.lit(INSERT).cast("tinyint").alias(OP))
    engine.store.append_batches([engine.logs.write(table, extra, producer=None)])
    again = run(service)  # nothing to deploy (running, same code): the checks run again
    assert not again.success  # Dagster fails the step that reports a failed blocking check
    reconciled = next(e for e in again.get_asset_check_evaluations()
                      if e.asset_key == AssetKey("int_table_2") and e.check_name == "reconciled")
    assert not reconciled.passed and reconciled.severity == AssetCheckSeverity.ERROR
    assert reconciled.metadata["unexpected"].value == 1
    assert reconciled.description.startswith("sink differs from its DML")
    assert reconciled.description.endswith("missing=0, unexpected=1, different=0")

    # The same failed blocking check skips the downstream table in that run: fct_order is not deployed.
    instance = DagsterInstance.ephemeral()
    with_fact = materialize(
        build_flink_assets(FlinkProject(PROJECT / "pipelines")),
        selection=AssetSelection.assets("int_table_2", "fct_order")
        | AssetSelection.checks_for_assets("int_table_2", "fct_order"),
        raise_on_error=False, instance=instance,
        resources={"confluent": ConfluentFlinkResource(mode="local", local_url=service.url,
                                                       local_data_dir=str(service.data_dir)),
                   "checks": FlinkChecksResource(), "spark": SparkResource()})
    assert not with_fact.success
    materialized = {e.asset_key.path[-1] for e in with_fact.get_asset_materialization_events()}
    assert "int_table_2" in materialized and "fct_order" not in materialized  # (its other parents: deployed)
    messages = [record.user_message for record in instance.all_logs(with_fact.run_id)]
    assert any("blocking check reconciled failed on int_table_2" in m and "fct_order" in m for m in messages)
    assert not [s for s in client_for(service.url).list_statements() if "fct-order" in s.name]
    skipped = [e for e in with_fact.get_asset_check_evaluations() if e.asset_key == AssetKey("fct_order")]
    assert skipped and all(e.severity == AssetCheckSeverity.WARN and e.description.startswith(
        "not evaluated: upstream blocking check reconciled failed on int_table_2") for e in skipped)

    # A check-only run (one check key selected, no asset) computes that check and records it.
    only = materialize(
        build_flink_assets(FlinkProject(PROJECT / "pipelines")),
        selection=AssetSelection.checks(AssetCheckKey(AssetKey("int_table_2"), "reconciled")),
        raise_on_error=False, instance=instance,
        resources={"confluent": ConfluentFlinkResource(mode="local", local_url=service.url,
                                                       local_data_dir=str(service.data_dir)),
                   "checks": FlinkChecksResource(), "spark": SparkResource()})
    (evaluation,) = only.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.metadata["unexpected"].value == 1
    assert only.get_asset_materialization_events() == []
