"""Change detection between commits and blue/green categories, on a temporary git repository."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shift_left_dagster.deploy.bluegreen import plan_blue_green, versioned_sql
from shift_left_dagster.deploy.changes import Category, detect_changes
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from shift_left_dagster.project.parsing import parse_one_statement

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    shutil.copytree(SAMPLE, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    root = tmp_path / "project"
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "initial")
    return root


def commit(repo: Path, path: str, text: str) -> str:
    (repo / path).write_text(text)
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", f"change {path}")
    return git(repo, "rev-parse", "HEAD")


INT1 = "pipelines/intermediates/p1/int_table_1/sql-scripts/dml.int_table_1.sql"
SRC3 = "pipelines/sources/p1/src_table_3/sql-scripts/dml.src_table_3.sql"


def test_comment_and_whitespace_only_commit_changes_nothing(repo):
    text = (repo / INT1).read_text()
    commit(repo, INT1, "-- reviewed: no logic change\n" + text.replace("\n", "\n\n"))
    assert detect_changes(repo, "HEAD~1") == []


def test_stateful_change_versions_the_table_and_its_descendants_only(repo):
    text = (repo / INT1).read_text()
    commit(repo, INT1, text.replace("LEFT JOIN src_table_2", "JOIN src_table_2"))
    changes = detect_changes(repo, "HEAD~1")
    assert [(c.table, c.category) for c in changes] == [("int_table_1", Category.BREAKING)]
    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    plan = plan_blue_green(graph, changes)
    assert [(v.table, v.physical) for v in plan.versions] == [
        ("int_table_1", "int_table_1_v2"), ("fct_order", "fct_order_v2")]
    assert plan.selection == ["fct_order", "int_table_1"]
    dml_path = repo / "pipelines/facts/p1/fct_order/sql-scripts/dml.fct_order.sql"
    sql = versioned_sql(dml_path.read_text(), plan.renames())
    tree = parse_one_statement(sql).tree
    assert "int_table_1_v2" in sql and "INSERT INTO fct_order_v2" in sql and "int_table_2 " in sql
    assert tree is not None


def test_stateless_compatible_change_is_replaced_in_place(repo):
    text = (repo / SRC3).read_text()
    assert "WHERE" in text
    commit(repo, SRC3, text.replace("WHERE", "WHERE 1 = 1 AND", 1))
    changes = detect_changes(repo, "HEAD~1")
    assert [(c.table, c.category) for c in changes] == [("src_table_3", Category.NON_BREAKING)]
    plan = plan_blue_green(ProjectGraph(build_inventory(repo / "pipelines")), changes)
    assert plan.versions == [] and [c.table for c in plan.in_place] == ["src_table_3"]


def test_added_and_removed_tables(repo):
    shutil.rmtree(repo / "pipelines/views/p2/v_p")
    new = repo / "pipelines/views/p1/v_orders/sql-scripts"
    new.mkdir(parents=True)
    (new / "ddl.v_orders.sql").write_text("CREATE TABLE v_orders (order_id STRING)")
    (new / "dml.v_orders.sql").write_text("INSERT INTO v_orders SELECT order_id FROM fct_order")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "add and remove")
    changes = {c.table: c.category for c in detect_changes(repo, "HEAD~1")}
    assert changes == {"v_orders": Category.ADDED, "v_p": Category.REMOVED}


def test_schema_change_that_drops_a_column_is_breaking(repo):
    ddl = "pipelines/sources/p1/src_table_3/sql-scripts/ddl.src_table_3.sql"
    text = (repo / ddl).read_text()
    lines = text.splitlines()
    column = next(i for i, line in enumerate(lines)
                  if line.strip().startswith(("payment_method", "currency", "status")))
    commit(repo, ddl, "\n".join(lines[:column] + lines[column + 1:]))
    (change,) = detect_changes(repo, "HEAD~1")
    assert change.category == Category.BREAKING and "removed" in change.reasons[0]


def test_git_sensor_requests_one_run_per_commit_and_never_twice(repo):
    import json

    from dagster import AssetKey, DagsterInstance, build_sensor_context

    from shift_left_dagster.defs.assets import FlinkProject
    from shift_left_dagster.defs.sensors import git_sensor
    from shift_left_dagster.defs.tags import CHANGES_TAG, COMMIT_TAG, SINCE_TAG
    from shift_left_dagster.defs.translator import FlinkTranslator

    project = FlinkProject(repo / "pipelines")
    sensor = git_sensor(project, FlinkTranslator())
    instance = DagsterInstance.ephemeral()

    baseline = sensor(build_sensor_context(instance=instance))
    assert not baseline.run_requests and baseline.cursor == git(repo, "rev-parse", "HEAD")

    text = (repo / INT1).read_text()
    comment_only = commit(repo, INT1, "-- formatting only\n" + text)
    quiet = sensor(build_sensor_context(instance=instance, cursor=baseline.cursor))
    assert not quiet.run_requests and quiet.cursor == comment_only

    changed = commit(repo, INT1, text.replace("LEFT JOIN src_table_2", "JOIN src_table_2"))
    result = sensor(build_sensor_context(instance=instance, cursor=quiet.cursor))
    (request,) = result.run_requests
    assert request.run_key == changed and result.cursor == changed
    assert set(request.asset_selection) == {AssetKey("int_table_1"), AssetKey("fct_order")}
    assert request.tags[COMMIT_TAG] == changed and request.tags[SINCE_TAG] == comment_only
    assert json.loads(request.tags[CHANGES_TAG]) == {"int_table_1": "breaking"}

    assert request.job_name == "flink_git_changes_deploy"

    again = sensor(build_sensor_context(instance=instance, cursor=result.cursor))
    assert not getattr(again, "run_requests", None)

    # A commit that only removes a table: no asset to select, so one run of the undeploy job, never an
    # empty selection (which Dagster reads as every asset).
    shutil.rmtree(repo / "pipelines/facts/p1/fct_order")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "remove fct_order")
    removed = git(repo, "rev-parse", "HEAD")
    project = FlinkProject(repo / "pipelines")  # the code location reloads after the commit
    result = git_sensor(project, FlinkTranslator())(build_sensor_context(instance=instance, cursor=changed))
    (request,) = result.run_requests
    assert request.job_name == "undeploy_flink_tables" and request.run_key == removed
    assert request.run_config == {"ops": {"undeploy_tables": {"config": {"tables": ["fct_order"],
                                                                         "keep_read": True}}}}


def test_a_file_that_stops_parsing_is_broken_never_removed_and_the_sensor_waits(repo):
    from dagster import DagsterInstance, build_sensor_context

    from shift_left_dagster.defs.assets import FlinkProject
    from shift_left_dagster.defs.sensors import git_sensor
    from shift_left_dagster.defs.translator import FlinkTranslator

    before = git(repo, "rev-parse", "HEAD")
    broken = commit(repo, INT1, "INSERT INTO int_table_1 SELECT FROM src_table_1 WHERE\n")
    (change,) = detect_changes(repo, before)
    assert change.table == "int_table_1" and change.category == Category.BROKEN, change
    assert "dml.int_table_1.sql:1: SELECT with an empty select list" in change.reasons[0]
    sensor = git_sensor(FlinkProject(repo / "pipelines"), FlinkTranslator())  # the location reloads, lenient
    result = sensor(build_sensor_context(instance=DagsterInstance.ephemeral(), cursor=before))
    assert not result.run_requests and result.cursor == before  # waits: the fix is deployed from here
    why = result.skip_reason.skip_message or ""
    assert "leaves tables broken" in why and broken[:12] in why and "int_table_1" in why


# -- issue 25, case 4: every entry point refuses and seeds as `plan` does --------------------------------------

INT2 = "pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"


def _live(graph: ProjectGraph, tables: list[str], raw: set[str]):  # type: ignore[no-untyped-def]
    from shift_left_dagster.deploy.live import LiveState, LiveStatement, StatementKind
    from shift_left_dagster.deploy.naming import statement_name

    statements = {}
    for table in tables:
        info = graph.tables[table]
        name = statement_name("dev", info.product, "dml", table)
        statements[name] = LiveStatement(name=name, phase="RUNNING", code_version="deployed-before", table=table,
                                         kind=StatementKind.DML)
    return LiveState(statements=statements, tables=set(tables) | raw)


P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]
P1_RAW = {"raw_orders", "raw_customers", "raw_payments"}


def test_a_commit_reading_an_unknown_table_is_refused_naming_file_and_line(repo):
    from shift_left_dagster.deploy.bluegreen import commit_plan
    from shift_left_dagster.deploy.plan import PlanError, PlanOptions, build_plan

    text = (repo / INT2).read_text()
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "src_table_3" in t)
    commit(repo, INT2, text.replace("src_table_3", "src_table_nobody"))
    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    live = _live(graph, P1, P1_RAW)
    where = f"dml.int_table_2.sql:{line}: int_table_2 reads src_table_nobody"
    with pytest.raises(PlanError, match=where):  # the git sensor's path: it planned int_table_2_v2 before
        commit_plan(graph, detect_changes(repo, "HEAD~1"), live, PlanOptions())
    with pytest.raises(PlanError, match=where):  # a plan of its child: it said "0 changes" before
        build_plan(graph, ["fct_order"], live, PlanOptions())


def test_a_commit_adding_a_table_that_reads_a_new_raw_topic_seeds_it(repo):
    from shift_left_dagster.deploy.bluegreen import commit_plan
    from shift_left_dagster.deploy.plan import PlanOptions
    from shift_left_dagster.deploy.steps import SeedStep

    folder = repo / "pipelines/intermediates/p1/int_logins/sql-scripts"
    folder.mkdir(parents=True)
    (folder / "ddl.int_logins.sql").write_text("CREATE TABLE int_logins (user_id STRING)")
    (folder / "dml.int_logins.sql").write_text("INSERT INTO int_logins SELECT user_id FROM raw_logins")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "add int_logins")
    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    plan = commit_plan(graph, detect_changes(repo, "HEAD~1"), _live(graph, P1, P1_RAW),
                       PlanOptions(seeds={"raw_logins": "raw_logins.sql"}))
    seeds = [s for s in plan.steps if isinstance(s, SeedStep)]
    assert [s.topic for s in seeds] == ["raw_logins"]
    deploy = plan.step_for("int_logins")
    assert deploy is not None and seeds[0].index in deploy.depends_on


def test_a_backfill_of_a_table_not_deployed_is_refused_with_the_command_that_deploys_it(repo):
    from datetime import UTC, datetime

    from shift_left_dagster.deploy.backfill import BackfillRefused, plan_backfill
    from shift_left_dagster.deploy.plan import PlanOptions

    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    raw = {"raw_users"}  # src_c360_users: keyed and stateless, so a window can be rebuilt in place
    with pytest.raises(BackfillRefused, match="src_c360_users is not deployed on dev .*shift-left-dagster deploy "
                                              "src_c360_users"):
        plan_backfill(graph, ["src_c360_users"], start, end, _live(graph, [], raw), PlanOptions())
    plan = plan_backfill(graph, ["src_c360_users"], start, end, _live(graph, ["src_c360_users"], raw), PlanOptions())
    assert [s.action.value for s in plan.steps if s.table] == ["backfill_window"]


def test_exclude_never_deploys_an_excluded_table_and_names_it(repo):
    from shift_left_dagster.deploy.plan import PlanError, PlanOptions, build_plan

    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    options = PlanOptions(exclude=["src_c360_groups", "src_c360_users"])
    raw = {"raw_groups", "raw_users"}
    with pytest.raises(PlanError, match="src_c360_groups is excluded here but the plan needs it"):
        build_plan(graph, ["dim_c360_users"], _live(graph, [], raw), options)
    deployed = _live(graph, ["src_c360_groups", "src_c360_users"], raw)
    plan = build_plan(graph, ["dim_c360_users"], deployed, options)
    assert {s.table: s.action.value for s in plan.steps if s.table} == {
        "src_c360_groups": "skip", "src_c360_users": "skip", "dim_c360_users": "deploy"}


def test_a_commit_changing_a_table_with_a_version_beside_the_serving_one_is_refused(repo):
    """A reprocess (or an earlier commit's version) of fct_order catching up: a commit to its parent would
    deploy fct_order_v2 again over it; refused, naming it (the model test's counterexample)."""
    from shift_left_dagster.deploy.bluegreen import commit_plan
    from shift_left_dagster.deploy.live import LiveStatement, StatementKind
    from shift_left_dagster.deploy.plan import PlanError, PlanOptions

    commit(repo, INT2, (repo / INT2).read_text().replace("THEN 1 ELSE 0", "THEN 2 ELSE 0"))
    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    live = _live(graph, P1, P1_RAW)
    name = "dev-p1-dml-fct-order-v2"
    live.statements[name] = LiveStatement(name=name, phase="RUNNING", code_version="any", table="fct_order",
                                          version=2, kind=StatementKind.DML)
    with pytest.raises(PlanError, match="^fct_order has version 2 beside the serving one .* promote or roll it "
                                        "back first$"):
        commit_plan(graph, detect_changes(repo, "HEAD~1"), live, PlanOptions())


def test_a_sensor_run_over_a_commit_already_deployed_repairs_a_child_left_failed(repo):
    """Issue 31: a deployment of src_table_3's committed change killed before it recreated int_table_2 (FAILED
    now): the sensor's run over that commit finds src_table_3 done and redeploys int_table_2 (and recreates
    fct_order, reading it), as a deploy of src_table_3 would; with nothing left behind it plans nothing."""
    from shift_left_dagster.deploy.bluegreen import commit_plan
    from shift_left_dagster.deploy.plan import Action, PlanOptions

    text = (repo / SRC3).read_text()
    commit(repo, SRC3, text.replace("'n/a'", "'none'"))
    graph = ProjectGraph(build_inventory(repo / "pipelines"))
    live = _live(graph, P1, P1_RAW)
    for table in P1:  # every statement runs the committed code: the killed deployment recreated src_table_3
        name = next(n for n, s in live.statements.items() if s.table == table)
        live.statements[name].code_version = graph.tables[table].code_version
    assert not commit_plan(graph, detect_changes(repo, "HEAD~1"), live, PlanOptions()).changes
    failed = next(s for s in live.statements.values() if s.table == "int_table_2")
    failed.phase = "FAILED"
    plan = commit_plan(graph, detect_changes(repo, "HEAD~1"), live, PlanOptions())
    assert {s.table: s.action for s in plan.changes if s.table} == {"int_table_2": Action.DEPLOY,
                                                                 "fct_order": Action.RECREATE}
    assert "FAILED" in plan.step_for("int_table_2").reason
