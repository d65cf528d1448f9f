"""What a `@flink_assets` definition deploys: its own tables, never another's, never an excluded one.

Issue 27: two definitions over one project in one process shared a process-wide registry keyed by op
name; the second replaced the first's, and a run of the first planned nothing and succeeded. Issue 25,
case 5: `exclude=["src_c360_*"]` (the README's example) still deployed src_c360_groups and src_c360_users
as "ancestor missing" when dim_c360_users was materialised, and recorded no event for them.
"""



from collections.abc import Iterator

import pytest
from dagster import AssetExecutionContext, AssetKey, DagsterInstance, materialize

from shift_left_dagster import ConfluentFlinkResource, FlinkProject, flink_assets
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("scope-service"), spark_factory=lambda: spark) as running:
        yield running


def tables_with_statements(url: str) -> set[str]:
    return {(s.metadata.labels or {}).get("sl_table", "") for s in client_for(url).list_statements()} - {""}


def test_two_definitions_over_one_project_each_deploy_their_own_tables(service):  # type: ignore[no-untyped-def]
    project = FlinkProject(PROJECT / "pipelines")

    @flink_assets(project=project, select=["src_table_3"])
    def orders(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

    @flink_assets(project=project, select=["src_c360_groups"])
    def groups(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

    assert orders.op.name != groups.op.name
    resources = {"flink": ConfluentFlinkResource(mode="local", local_url=service.url)}
    instance = DagsterInstance.ephemeral()
    first = materialize([orders, groups], selection=[AssetKey("src_table_3")], resources=resources,
                        instance=instance)
    assert first.success
    assert [e.asset_key for e in first.get_asset_materialization_events()] == [AssetKey("src_table_3")]
    assert tables_with_statements(service.url) == {"src_table_3"}
    second = materialize([orders, groups], selection=[AssetKey("src_c360_groups")], resources=resources,
                         instance=instance)
    assert second.success
    assert tables_with_statements(service.url) == {"src_table_3", "src_c360_groups"}


def test_an_excluded_ancestor_is_never_deployed_and_the_refusal_names_it(service):  # type: ignore[no-untyped-def]
    project = FlinkProject(PROJECT / "pipelines")

    @flink_assets(project=project, select=["*"], exclude=["src_c360_*"])
    def my_flink_tables(context: AssetExecutionContext, flink: ConfluentFlinkResource):
        yield from flink.deploy(context=context).stream()

    before = tables_with_statements(service.url)
    result = materialize([my_flink_tables], selection=[AssetKey("dim_c360_users")],
                         resources={"flink": ConfluentFlinkResource(mode="local", local_url=service.url)},
                         instance=DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "src_c360_users is excluded here but the plan needs it" in str(failure.event_specific_data)
    assert tables_with_statements(service.url) == before  # nothing deployed, dim_c360_users included
