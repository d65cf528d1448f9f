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


def test_undeploy_job_of_a_product_keeps_what_others_read_and_a_dry_run_changes_nothing(service):  # type: ignore[no-untyped-def]
    from dagster import DagsterInstance

    from shift_left_dagster.defs.maintenance import UNDEPLOY_JOB, maintenance_jobs
    from shift_left_dagster.defs.project import FlinkProject
    from shift_left_dagster.defs.resources import ConfluentFlinkResource

    client = client_for(service.url)
    project = FlinkProject(PROJECT / "pipelines")
    p2 = sorted(t for t, info in project.graph.tables.items() if info.product == "p2")
    Deployer(client=client, graph=project.graph, config=local_defaults(service.url),
             seeds_dir=PROJECT / "seeds").deploy(p2).wait()
    # A statement of another team reads src_x: src_x must stay, and be named.
    client.create_statement("other-team-ddl", "CREATE TABLE other_logins (account_id STRING)")
    client.wait_for_phase("other-team-ddl", {"COMPLETED"}, 60)
    client.create_statement("other-team-dml", "INSERT INTO other_logins SELECT account_id FROM src_x")
    client.wait_for_phase("other-team-dml", {"RUNNING"}, 60)

    def state() -> tuple[set[str], set[str]]:
        return {s.name for s in client.list_statements()}, {t.topic_name for t in client.list_topics()}

    job = next(j for j in maintenance_jobs(project) if j.name == UNDEPLOY_JOB)
    resources = {"confluent": ConfluentFlinkResource(mode="local", local_url=service.url)}
    before = state()
    config = {"product": "p2", "keep_read": True}
    dry = job.execute_in_process(run_config={"ops": {"undeploy_tables": {"config": {**config, "dry_run": True}}}},
                                 resources=resources, instance=DagsterInstance.ephemeral())
    assert dry.success and state() == before
    instance = DagsterInstance.ephemeral()
    done = job.execute_in_process(run_config={"ops": {"undeploy_tables": {"config": config}}},
                                  resources=resources, instance=instance)
    assert done.success
    statements, topics = state()
    assert topics & set(p2) == {"src_x"}  # kept: read by other-team-dml
    assert not [n for n in statements if n.startswith("local-p2-") and not n.endswith("-src-x")]
    assert client.get_statement("other-team-dml").phase == "RUNNING"
    logs = [entry.user_message for entry in instance.all_logs(done.run_id)]
    assert any("kept, table src_x is read by other-team-dml" in m for m in logs), [m for m in logs if "src_x" in m]
