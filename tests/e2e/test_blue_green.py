"""The seeds' blue/green scenario on the local service, driven by git commits and real Dagster runs.

Running p1 pipeline; a commit changes int_table_1 (stateful); the git sensor's
run deploys int_table_1_v2 and fct_order_v2 beside the serving versions; the
old version keeps running and serving; the new one is checked (no duplicate
key, expected rows, same keys as the old one) and promoted. A second change is
deployed and rolled back, leaving the serving version untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.promotion import promotion_jobs
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.tags import COMMIT_TAG, SINCE_TAG
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from tests.integration import expected_p1
from tests.integration.support import client_for, git, project_repo, quiesce, seed_rows, select, wired

pytestmark = pytest.mark.service

INT1 = "pipelines/intermediates/p1/int_table_1/sql-scripts/dml.int_table_1.sql"
RAW = ("raw_orders", "raw_customers", "raw_payments")




@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("bluegreen-service"), spark_factory=lambda: spark) as running:
        yield running


def expected_fct(unknown_name: str) -> list[tuple]:
    rows = expected_p1.p1(*(seed_rows(t) for t in RAW))["fct_order"]
    return wired([(*r[:3], unknown_name if r[3] == "UNKNOWN CUSTOMER" else r[3], *r[4:]) for r in rows])


def run(repo: Path, url: str, instance: DagsterInstance, selection: AssetSelection, tags=None):  # type: ignore[no-untyped-def]
    result = materialize(build_flink_assets(FlinkProject(repo / "pipelines")), selection=selection,
                         resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=url)),
                         instance=instance, tags=tags)
    assert result.success
    return result


def serving(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.name: s.metadata.uid for s in client.list_statements() if s.phase == "RUNNING"}


def test_blue_green_deploy_check_promote_then_rollback(service, tmp_path):  # type: ignore[no-untyped-def]
    repo = project_repo(tmp_path)
    client = client_for(service.url)
    instance = DagsterInstance.ephemeral()
    p1 = AssetSelection.assets("fct_order").upstream() - AssetSelection.assets(*RAW)

    run(repo, service.url, instance, p1)
    quiesce(service.url)
    assert select(client, "SELECT * FROM fct_order") == expected_fct("UNKNOWN CUSTOMER")
    green = serving(client)

    # A commit changes a stateful intermediate: its run deploys new versions beside the serving ones.
    before = git(repo, "rev-parse", "HEAD")
    path = repo / INT1
    path.write_text(path.read_text().replace("'UNKNOWN CUSTOMER'", "'ANONYMOUS'"))
    git(repo, "commit", "-qam", "rename unknown customers")
    after = git(repo, "rev-parse", "HEAD")
    result = run(repo, service.url, instance, AssetSelection.assets("int_table_1", "fct_order"),
                 tags={SINCE_TAG: before, COMMIT_TAG: after})
    deployed = {e.asset_key.path[-1]: e.materialization.metadata["deployed_as"].value
                for e in result.get_asset_materialization_events()}
    assert deployed == {"int_table_1": "int_table_1_v2", "fct_order": "fct_order_v2"}
    quiesce(service.url)

    # The old version kept running and serving, untouched; the new one is right.
    assert {n: u for n, u in serving(client).items() if n in green} == green
    assert select(client, "SELECT * FROM fct_order") == expected_fct("UNKNOWN CUSTOMER")
    assert select(client, "SELECT order_id, COUNT(*) FROM fct_order_v2 GROUP BY order_id HAVING COUNT(*) > 1") == []
    assert select(client, "SELECT * FROM fct_order_v2") == expected_fct("ANONYMOUS")
    assert select(client, "SELECT order_id FROM fct_order_v2") == select(client, "SELECT order_id FROM fct_order")

    # Promote through the Dagster job: it verifies the candidates (checks, same keys), then promotes.
    jobs = promotion_jobs(FlinkProject(repo / "pipelines"))
    promote_job = next(j for j in jobs if j.name == "promote_flink_versions")
    promoted_run = promote_job.execute_in_process(
        resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url)), instance=instance)
    assert promoted_run.success
    messages = [r.user_message for r in instance.all_logs(promoted_run.run_id)]
    same = "{'only_old': 0, 'only_new': 0, 'missing': 0, 'invented': 0}"  # every key rule counted nothing
    assert any(f"'fct_order': {same}" in m and f"'int_table_1': {same}" in m for m in messages), messages
    assert any("promote plan for fct_order, int_table_1: 2 change(s)" in m for m in messages), messages
    running = serving(client)
    assert not [n for n in green if n.endswith(("-int-table-1", "-fct-order")) and n in running]
    assert {n for n in running if n.endswith("-v2")} == {"local-p1-dml-int-table-1-v2", "local-p1-dml-fct-order-v2"}
    keys = select(client, "SELECT order_id FROM fct_order_v2")
    assert len(keys) == len(set(keys)) == len(expected_fct("ANONYMOUS"))  # no duplicate, no lost key

    # A normal run now sees version 2 as serving and changes nothing.
    rerun = run(repo, service.url, instance, AssetSelection.assets("fct_order"))
    assert {e.materialization.metadata["action"].value for e in rerun.get_asset_materialization_events()} == {"skip"}

    # Another change, deployed as version 3, then rolled back: version 2 is untouched.
    before, promoted = after, serving(client)
    path.write_text(path.read_text().replace("'ANONYMOUS'", "'NOBODY'"))
    git(repo, "commit", "-qam", "rename again")
    after = git(repo, "rev-parse", "HEAD")
    run(repo, service.url, instance, AssetSelection.assets("int_table_1", "fct_order"),
        tags={SINCE_TAG: before, COMMIT_TAG: after})
    assert {n for n in serving(client) if n.endswith("-v3")} == {"local-p1-dml-int-table-1-v3",
                                                                  "local-p1-dml-fct-order-v3"}
    project = FlinkProject(repo / "pipelines")
    rollback = Deployer(client=client, graph=project.graph, config=local_defaults(service.url)).rollback()
    assert {(s.table, s.version) for s in rollback.plan.steps} == {("fct_order", 3), ("int_table_1", 3)}
    rollback.wait()
    assert serving(client) == promoted
    assert "fct_order_v3" not in {t.topic_name for t in client.list_topics()}
    quiesce(service.url)
    assert select(client, "SELECT * FROM fct_order_v2") == expected_fct("ANONYMOUS")

    # Housekeeping: version 1's tables (kept by the promotion) and completed DDL statements go; nothing
    # that serves changes, and a normal run still has nothing to do.
    deployer = Deployer(client=client, graph=project.graph, config=local_defaults(service.url))
    dry = deployer.housekeep()
    dry.release()
    dropped = {s.physical_table for s in dry.plan.steps if s.drop_table}
    assert dropped == {"fct_order", "int_table_1"}, str(dry)
    assert {"fct_order", "int_table_1"} <= {t.topic_name for t in client.list_topics()}  # a plan changes nothing
    deployer.housekeep().wait()
    topics = {t.topic_name for t in client.list_topics()}
    assert not {"fct_order", "int_table_1"} & topics and {"fct_order_v2", "int_table_1_v2"} <= topics
    assert serving(client) == promoted
    assert not [s for s in client.list_statements() if s.phase == "COMPLETED" and "-ddl-" in s.name]
    assert select(client, "SELECT * FROM fct_order_v2") == expected_fct("ANONYMOUS")
    again = run(repo, service.url, instance, AssetSelection.assets("fct_order"))
    assert {e.materialization.metadata["action"].value for e in again.get_asset_materialization_events()} == {"skip"}
