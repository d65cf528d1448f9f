"""Every sink of the sample project, from an empty service: one Dagster run, every check passes, and
then nothing: a second run is a no-op and a re-plan of any table changes nothing.

Also a project whose sources are filled by bounded statements (`INSERT ... VALUES`, COMPLETED): they
are deployed, so re-planning never drops and recreates the chain.
"""

from collections.abc import Iterator

import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, materialize

from shift_left_dagster import ConfluentFlinkResource, FlinkProject
from shift_left_dagster.defs.assets import build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.plan import Action
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for, quiesce, select

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("all-sinks"), spark_factory=lambda: spark) as running:
        yield running


def test_every_sink_with_its_ancestors_then_nothing_to_do(service):  # type: ignore[no-untyped-def]
    project = FlinkProject(PROJECT / "pipelines")
    graph = project.graph
    sinks = [t for t in graph.tables if not graph.children[t]]
    externals = sorted({e for sources in graph.external_sources.values() for e in sources})
    selection = AssetSelection.assets(*sinks).upstream() - AssetSelection.assets(*externals)  # '*sink', each
    instance = DagsterInstance.ephemeral()
    resources = flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url))
    result = materialize(build_flink_assets(project), selection=selection, resources=resources, instance=instance)
    assert result.success
    checks = result.get_asset_check_evaluations()
    failed = {(e.asset_key.path[-1], e.check_name): e.description for e in checks if not e.passed}
    assert not failed, failed
    assert {e.asset_key.path[-1] for e in checks} == set(graph.tables)
    for evaluation in checks:  # no verdict over nothing: every data check says how many rows it compared
        if evaluation.check_name == "reconciled":
            assert evaluation.metadata["compared_rows"].value > 0, evaluation.asset_key
    for table in graph.tables:  # the catalog shows every deployed table materialised
        assert instance.get_latest_materialization_event(AssetKey(table)) is not None, table

    again = materialize(build_flink_assets(project), selection=selection, resources=resources, instance=instance)
    assert again.success
    assert {e.materialization.metadata["action"].value for e in again.get_asset_materialization_events()} == {"skip"}
    deployer = Deployer(client=client_for(service.url), graph=graph, config=local_defaults(service.url))
    for table in graph.tables:
        assert deployer.deploy([table]).plan.changes == [], table


def test_sources_filled_by_bounded_inserts_are_deployed_not_recreated(service, tmp_path):  # type: ignore[no-untyped-def]
    tables = {
        ("sources/b", "src_fixed"): ("CREATE TABLE src_fixed (k STRING, v INT)",
                                     "INSERT INTO src_fixed VALUES ('a', 1), ('b', 2), ('c', 3)"),
        ("facts/b", "fct_fixed"): ("CREATE TABLE fct_fixed (k STRING, v INT)",
                                   "INSERT INTO fct_fixed SELECT k, v * 10 AS v FROM src_fixed"),
    }
    for (folder, name), (ddl, dml) in tables.items():
        scripts = tmp_path / "pipelines" / folder / name / "sql-scripts"
        scripts.mkdir(parents=True)
        (scripts / f"ddl.{name}.sql").write_text(ddl)
        (scripts / f"dml.{name}.sql").write_text(dml)
    client = client_for(service.url)
    graph = ProjectGraph(build_inventory(tmp_path / "pipelines"))
    deployer = Deployer(client=client, graph=graph, config=local_defaults(service.url))
    first = deployer.deploy(["fct_fixed"])
    assert {s.table: s.action for s in first.plan.changes if s.table} == {"src_fixed": Action.DEPLOY,
                                                                         "fct_fixed": Action.DEPLOY}
    first.wait()
    assert client.get_statement("local-b-dml-src-fixed").phase == "COMPLETED"
    for target in (["fct_fixed"], ["src_fixed"], ["src_fixed", "fct_fixed"]):
        assert deployer.deploy(target).plan.changes == [], target
    quiesce(service.url)
    assert select(client, "SELECT * FROM fct_fixed") == [("a", "10"), ("b", "20"), ("c", "30")]
