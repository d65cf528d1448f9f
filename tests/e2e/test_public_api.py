"""The public API a dagster-dbt user recognises, and in-place replacements that never lie.

- `@flink_assets` with a user-written body (`yield from flink.deploy(context=context).stream()`),
  under any resource key: every table the plan touches is materialised, selected or not, and checked.
- A commit adding a nullable column to a stateless table is replaced in place: ALTER first, the
  new statement from the old one's offsets, checks run; a replacement that does not compile
  changes nothing and the run fails saying why.
"""


from collections.abc import Iterator

import pytest
from dagster import AssetExecutionContext, AssetKey, DagsterInstance, materialize

from shift_left_dagster import ConfluentFlinkResource, FlinkProject, flink_assets
from shift_left_dagster.defs.assets import build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.tags import COMMIT_TAG, SINCE_TAG
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import PROJECT, client_for, git, project_repo, quiesce, seed_rows, select

pytestmark = pytest.mark.service

SRC3 = "pipelines/sources/p1/src_table_3/sql-scripts"


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("api-service"), spark_factory=lambda: spark) as running:
        yield running




def test_user_body_streams_every_touched_table_then_a_rerun_is_a_no_op(service):  # type: ignore[no-untyped-def]
    plans = []

    @flink_assets(project=FlinkProject(PROJECT / "pipelines"), select=["src_table_*", "int_table_*", "fct_order"],
                  name="p1_tables")
    def p1_tables(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        run = flink.deploy(context=context)
        plans.append(run.plan)
        yield from run.stream()

    instance = DagsterInstance.ephemeral()
    resources = {"flink": ConfluentFlinkResource(mode="local", local_url=service.url)}
    result = materialize([p1_tables], selection=[AssetKey("fct_order")], resources=resources, instance=instance)
    assert result.success
    touched = {s.table for s in plans[0].changes if s.table}
    assert touched == {"src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"}
    materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert materialized == touched  # the ancestors the plan deployed are materialised too
    checked = {(e.asset_key.path[-1], e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    assert {t for t, _ in checked} == touched and all(checked.values()), checked
    latest = instance.get_latest_materialization_event(AssetKey("src_table_1"))
    assert latest is not None and latest.run_id == result.run_id  # the catalog shows it materialised

    again = materialize([p1_tables], selection=[AssetKey("fct_order")], resources=resources, instance=instance)
    assert again.success and plans[1].changes == []


def test_in_place_change_adds_the_column_keeps_offsets_and_checks(service, tmp_path):  # type: ignore[no-untyped-def]
    repo = project_repo(tmp_path)
    client = client_for(service.url)
    instance = DagsterInstance.ephemeral()
    resources = flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url, settle_seconds=1.0))
    assets = build_flink_assets(FlinkProject(repo / "pipelines"))
    assert materialize(assets, selection=[AssetKey("src_table_3")], resources=resources, instance=instance).success
    quiesce(service.url)
    before_rows = select(client, "SELECT payment_id FROM src_table_3")
    raw = seed_rows("raw_payments")
    assert len(before_rows) == sum(1 for r in raw if r["order_id"] is not None and r["amount"] is not None and
                                   (r["payment_status"] or "").strip().upper() in ("CAPTURED", "REFUNDED"))
    uid = client.get_statement("local-p1-dml-src-table-3").metadata.uid

    # A commit adds a nullable column to the DDL and the DML: compatible and stateless, so in place.
    since = git(repo, "rev-parse", "HEAD")
    ddl, dml = repo / SRC3 / "ddl.src_table_3.sql", repo / SRC3 / "dml.src_table_3.sql"
    ddl.write_text(ddl.read_text().replace("payment_ts TIMESTAMP_LTZ(3)\n", "payment_ts TIMESTAMP_LTZ(3),\n"
                                           "  payment_note STRING\n"))
    dml.write_text(dml.read_text().replace("event_ts AS payment_ts\n", "event_ts AS payment_ts,\n"
                                           "  CAST(NULL AS STRING) AS payment_note\n"))
    git(repo, "commit", "-qam", "add payment_note")
    until = git(repo, "rev-parse", "HEAD")
    assets = build_flink_assets(FlinkProject(repo / "pipelines"))
    result = materialize(assets, selection=[AssetKey("src_table_3")], resources=resources, instance=instance,
                         tags={SINCE_TAG: since, COMMIT_TAG: until})
    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["action"].value == "replace_in_place"
    assert "raw_payments" in metadata["carried_offsets"].value
    assert {e.check_name for e in result.get_asset_check_evaluations()} >= {"reconciled", "statement_healthy"}
    assert client.get_statement("local-p1-dml-src-table-3").metadata.uid != uid
    quiesce(service.url)
    after = select(client, "SELECT payment_id, payment_note FROM src_table_3")
    assert sorted(r[0] for r in after) == sorted(r[0] for r in before_rows)  # nothing lost, nothing twice

    # A replacement that does not compile: nothing changes, the run fails naming the statement.
    running_uid = client.get_statement("local-p1-dml-src-table-3").metadata.uid
    since = until
    dml.write_text(dml.read_text().replace("FROM raw_payments", "FROM raw_payments_nobody_has"))
    git(repo, "commit", "-qam", "typo")
    until = git(repo, "rev-parse", "HEAD")
    failed = materialize(build_flink_assets(FlinkProject(repo / "pipelines")), selection=[AssetKey("src_table_3")],
                         resources=resources, instance=instance, tags={SINCE_TAG: since, COMMIT_TAG: until},
                         raise_on_error=False)
    assert not failed.success
    messages = "\n".join(str(r.dagster_event.event_specific_data) for r in instance.all_logs(failed.run_id)
                         if r.dagster_event and r.dagster_event.is_step_failure)
    assert "raw_payments_nobody_has" in messages, messages
    statement = client.get_statement("local-p1-dml-src-table-3")
    assert (statement.metadata.uid, statement.phase) == (running_uid, "RUNNING")


def test_a_body_that_only_plans_frees_the_project_lease(service):  # type: ignore[no-untyped-def]
    @flink_assets(project=FlinkProject(PROJECT / "pipelines"), select=["src_table_1"], name="plan_only")
    def plan_only(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        context.log.info(f"would change {len(flink.deploy(context=context).plan.changes)} table(s)")
        yield from ()

    resources = {"flink": ConfluentFlinkResource(mode="local", local_url=service.url)}
    assert materialize([plan_only], resources=resources).success
    assert not [s for s in client_for(service.url).list_statements() if "-lease-" in s.name]
