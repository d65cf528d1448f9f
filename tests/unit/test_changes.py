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
