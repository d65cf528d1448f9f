"""A table whose DDL or DML file is missing or empty is broken, like a parse error: never planned for
recreate, never read as a removal, named in `inventory --strict` (issue 25, case 1)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, materialize

from shift_left_dagster.deploy.bluegreen import commit_plan
from shift_left_dagster.deploy.changes import Category, detect_changes
from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.plan import PlanError, PlanOptions, build_plan
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import ProjectError, build_inventory
from tests.integration.support import git, project_repo

INT2_DML = "pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
SRC3_DML = "pipelines/sources/p1/src_table_3/sql-scripts/dml.src_table_3.sql"
RAW = {"raw_orders", "raw_customers", "raw_payments"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the sample project, committed in a git repository of its own."""
    return project_repo(tmp_path)


def broken_reasons(root: Path) -> dict[str, str]:
    return {b.table: b.reason for b in build_inventory(root / "pipelines", strict=False, use_cache=False).broken}


def test_a_missing_dml_breaks_its_table_and_its_readers(project: Path) -> None:
    (project / INT2_DML).unlink()
    reasons = broken_reasons(project)
    assert set(reasons) == {"int_table_2", "fct_order"}
    assert reasons["int_table_2"].startswith(f"{INT2_DML}:1: deleted, but git still tracks it")
    assert "depends on broken table int_table_2" in reasons["fct_order"]
    with pytest.raises(ProjectError, match=rf"^{INT2_DML}:1: deleted"):
        build_inventory(project / "pipelines", strict=True, use_cache=False)


def test_a_derived_table_without_a_dml_is_broken_outside_git_too(project: Path) -> None:
    shutil.rmtree(project / ".git")
    (project / INT2_DML).unlink()
    assert broken_reasons(project)["int_table_2"] == (
        f"{INT2_DML}:1: missing: the rows of intermediate table int_table_2 come from its DML; restore it, or "
        "delete the table's whole folder to remove the table")


def test_an_empty_file_or_folder_breaks_its_table(project: Path) -> None:
    (project / INT2_DML).write_text("-- nothing yet\n")
    assert broken_reasons(project)["int_table_2"].startswith(f"{INT2_DML}:1: empty: the file holds no Flink SQL")
    scripts = project / "pipelines/intermediates/p1/int_table_2/sql-scripts"
    for file in scripts.iterdir():
        file.unlink()
    assert broken_reasons(project)["int_table_2"].startswith(
        "pipelines/intermediates/p1/int_table_2/sql-scripts/ddl.int_table_2.sql:1: deleted")


def test_a_source_may_be_ddl_only_unless_git_says_its_dml_was_deleted(project: Path) -> None:
    scripts = project / "pipelines/sources/p9/src_new/sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / "ddl.src_new.sql").write_text("CREATE TABLE src_new (k STRING)")
    (project / SRC3_DML).unlink()
    reasons = broken_reasons(project)
    assert "src_new" not in reasons  # never committed with a DML: a DDL-only source, as designed
    assert reasons["src_table_3"].startswith(f"{SRC3_DML}:1: deleted, but git still tracks it")


def test_a_deletion_git_forgets_is_seen_by_a_cached_load_too(project: Path) -> None:
    """Only git's state changes (the working tree is the same): the inventory kept from the last load must
    not be reused."""
    (project / SRC3_DML).unlink()
    assert "src_table_3" in {b.table for b in build_inventory(project / "pipelines", strict=False).broken}
    git(project, "rm", "-q", "--cached", SRC3_DML)
    git(project, "commit", "-qm", "src_table_3 is DDL-only now")
    assert "src_table_3" in build_inventory(project / "pipelines", strict=False).tables


def test_cli_inventory_strict_names_the_missing_file(project: Path) -> None:
    (project / INT2_DML).unlink()
    done = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "inventory", str(project / "pipelines"),
                           "--strict"], capture_output=True, text=True, env={**os.environ})
    assert done.returncode != 0
    assert done.stderr.startswith(f"error: {INT2_DML}:1: deleted") and "Traceback" not in done.stderr


def test_a_plan_deploying_the_table_or_a_reader_is_refused_naming_the_file(project: Path) -> None:
    (project / INT2_DML).unlink()
    graph = ProjectGraph(build_inventory(project / "pipelines", strict=False, use_cache=False))
    live = LiveState(tables=RAW | {"src_table_1", "src_table_2", "int_table_2"})
    for table in ("int_table_2", "fct_order"):
        with pytest.raises(ProjectError, match=rf"{INT2_DML}:1"):
            build_plan(graph, [table], live)
    assert {s.table for s in build_plan(graph, ["int_table_1"], live).steps} >= {"int_table_1"}


def test_a_commit_deleting_a_dml_is_a_broken_table_never_an_undeploy(project: Path) -> None:
    git(project, "rm", "-q", INT2_DML)
    git(project, "commit", "-qm", "lose the dml")
    (change,) = detect_changes(project, "HEAD~1")
    assert (change.table, change.category) == ("int_table_2", Category.BROKEN)
    assert change.reasons[0].startswith(f"{INT2_DML}:1: deleted while its table folder")
    graph = ProjectGraph(build_inventory(project / "pipelines", strict=False, use_cache=False))
    with pytest.raises(PlanError, match=rf"{INT2_DML}:1: missing"):
        commit_plan(graph, [change], LiveState(tables=RAW), PlanOptions())


def test_a_source_dml_deleted_in_a_commit_is_refused_too(project: Path) -> None:
    git(project, "rm", "-q", SRC3_DML)
    git(project, "commit", "-qm", "lose the source's dml")
    changes = detect_changes(project, "HEAD~1")
    assert [(c.table, c.category) for c in changes] == [("src_table_3", Category.BROKEN)]
    graph = ProjectGraph(build_inventory(project / "pipelines", strict=False, use_cache=False))
    with pytest.raises(PlanError, match=rf"{SRC3_DML}:1: deleted while its table folder"):
        commit_plan(graph, changes, LiveState(tables=RAW), PlanOptions())


def test_a_table_whose_whole_folder_is_gone_is_removed(project: Path) -> None:
    git(project, "rm", "-rq", "pipelines/views/p2/v_p")
    git(project, "commit", "-qm", "remove v_p")
    assert [(c.table, c.category) for c in detect_changes(project, "HEAD~1")] == [("v_p", Category.REMOVED)]


def test_materialising_a_table_with_a_missing_dml_fails_naming_the_file(project: Path) -> None:
    from shift_left_dagster.defs.builder import build_flink_definitions

    (project / INT2_DML).unlink()
    assets = build_flink_definitions(str(project / "pipelines")).get_repository_def().assets_defs_by_key
    result = materialize([assets[AssetKey("int_table_2")]], selection=[AssetKey("int_table_2")],
                         raise_on_error=False)
    assert not result.success
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == "flink_sql_valid" and not evaluation.passed
    assert f"{INT2_DML}:1: deleted" in str(evaluation.metadata["error"].value)


def test_the_git_sensor_waits_on_a_commit_deleting_a_dml_and_never_undeploys(project: Path) -> None:
    from dagster import DagsterInstance, build_sensor_context

    from shift_left_dagster.defs.assets import FlinkProject
    from shift_left_dagster.defs.sensors import git_sensor
    from shift_left_dagster.defs.translator import FlinkTranslator

    instance = DagsterInstance.ephemeral()
    baseline = git_sensor(FlinkProject(project / "pipelines"), FlinkTranslator())(
        build_sensor_context(instance=instance))
    git(project, "rm", "-q", INT2_DML)
    git(project, "commit", "-qm", "lose the dml")
    sensor = git_sensor(FlinkProject(project / "pipelines"), FlinkTranslator())  # reloaded after the commit
    result = sensor(build_sensor_context(instance=instance, cursor=baseline.cursor))
    assert not result.run_requests and result.cursor == baseline.cursor
    assert f"int_table_2: {INT2_DML}:1: deleted while its table folder" in str(result.skip_reason)


def test_a_deleted_file_is_found_whatever_the_pipelines_folder_is_called(project: Path) -> None:
    git(project, "mv", "pipelines", "flows")
    git(project, "commit", "-qm", "rename the pipelines folder")
    (project / "flows" / SRC3_DML.removeprefix("pipelines/")).unlink()
    broken = {b.table: b.reason for b in build_inventory(project / "flows", strict=False, use_cache=False).broken}
    assert broken["src_table_3"].startswith(f"flows/{SRC3_DML.removeprefix('pipelines/')}:1: deleted")
