"""A real Dagster materialisation of +fct_order against the local service, then a no-op re-run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dagster import AssetKey, AssetSelection, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.integration import expected_p1
from tests.integration.support import PROJECT, client_for, quiesce, seed_rows, select, wired

pytestmark = pytest.mark.service

P1 = ["fct_order", "int_table_1", "int_table_2", "src_table_1", "src_table_2", "src_table_3"]


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """A service of this module's own (its tables must not meet other tests'), on the shared Spark."""
    with InProcessService(tmp_path_factory.mktemp("e2e-service"), spark_factory=lambda: spark) as running:
        yield running


def materialize_p1(url: str):  # type: ignore[no-untyped-def]
    assets = build_flink_assets(FlinkProject(PROJECT / "pipelines"))
    return materialize(
        assets,
        selection=AssetSelection.assets("fct_order").upstream() - AssetSelection.assets(
            *[AssetKey(t) for t in ("raw_orders", "raw_customers", "raw_payments")]),
        resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=url)),
    )


def test_materialize_fct_order_and_ancestors_then_rerun_is_a_no_op(service):  # type: ignore[no-untyped-def]
    result = materialize_p1(service.url)
    assert result.success
    materialized = {e.asset_key.path[-1]: e for e in result.get_asset_materialization_events()}
    assert sorted(materialized) == sorted(P1)
    fct = materialized["fct_order"].materialization.metadata
    assert fct["action"].value == "deploy"
    checks = result.get_asset_check_evaluations()
    assert {e.asset_key.path[-1] for e in checks} == set(P1)  # every deployed table is checked...
    assert all(e.passed for e in checks), {(e.asset_key.path[-1], e.check_name): e.description
                                           for e in checks if not e.passed}  # ...and a clean pipeline passes

    client = client_for(service.url)
    ours = {s.name: s for s in client.list_statements() if s.name.startswith("local-p1-")}
    assert {n for n in ours if "-dml-" in n} == {f"local-p1-dml-{t.replace('_', '-')}" for t in P1}
    assert all(s.phase in ("RUNNING", "COMPLETED") for s in ours.values()), {n: s.phase for n, s in ours.items()}

    assert quiesce(service.url)["quiet"]
    want = expected_p1.p1(*(seed_rows(t) for t in ("raw_orders", "raw_customers", "raw_payments")))
    assert select(client, "SELECT * FROM fct_order") == wired(want["fct_order"])

    again = materialize_p1(service.url)
    assert again.success
    actions = {e.asset_key.path[-1]: e.materialization.metadata["action"].value
               for e in again.get_asset_materialization_events()}
    assert set(actions.values()) == {"skip"}
    after = {s.name: s for s in client.list_statements() if s.name.startswith("local-p1-")}
    assert {n: s.metadata.uid for n, s in after.items()} == {n: s.metadata.uid for n, s in ours.items()}
