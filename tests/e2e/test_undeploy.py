"""Undeploy as plan steps: safe by default (a table another statement reads is kept and named)."""

from collections.abc import Iterator

import pytest

from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.plan import Action, PlanError
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("undeploy-service"), spark_factory=lambda: spark) as running:
        yield running


def test_undeploy_refuses_a_table_still_read_then_removes_children_first(service):  # type: ignore[no-untyped-def]
    client = client_for(service.url)
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    deployer = Deployer(client=client, graph=graph, config=local_defaults(service.url), seeds_dir=PROJECT / "seeds")
    deployer.deploy(["fct_order"]).wait()

    with pytest.raises(PlanError, match="int_table_2: kept, table int_table_2 is read by local-p1-dml-fct-order"):
        deployer.undeploy(["int_table_2"])

    both = deployer.undeploy(["int_table_2", "fct_order"])
    assert [(s.table, s.action) for s in both.plan.steps] == [("fct_order", Action.UNDEPLOY),
                                                              ("int_table_2", Action.UNDEPLOY)]
    both.wait()
    names = {s.name for s in client.list_statements()}
    assert not {n for n in names if n.endswith(("-fct-order", "-int-table-2"))}
    topics = {t.topic_name for t in client.list_topics()}
    assert "fct_order" not in topics and "int_table_2" not in topics
    assert client.get_statement("local-p1-dml-src-table-3").phase == "RUNNING"  # the rest is untouched
    assert deployer.deploy(["int_table_1"]).plan.changes == []
