"""A project with broken files still loads: the broken table and what depends on it are left out,
named with file:line; every other table inventories, plans and shows in Dagster (issue 15, item 3)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, AssetSelection, materialize
from typer.testing import CliRunner

from shift_left_dagster.cli import app
from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.plan import build_plan
from shift_left_dagster.project.errors import ProjectError
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import analyse_file, build_inventory

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project"
BROKEN_DML = "pipelines/intermediates/p1/int_table_1/sql-scripts/dml.int_table_1.sql"
RAW = {"raw_orders", "raw_customers", "raw_payments", "raw_groups", "raw_users", "raw_purchases", "raw_app_events",
       "raw_accounts", "raw_transactions", "raw_logins"}


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A copy of the sample project whose int_table_1 DML has an empty select list (line 3)."""
    shutil.copytree(SAMPLE, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    (tmp_path / "project" / BROKEN_DML).write_text("-- broken on purpose\nINSERT INTO int_table_1\n"
                                                   "SELECT FROM src_table_1 WHERE\n")
    return tmp_path / "project" / "pipelines"


def write_table(pipelines: Path, folder: str, name: str, ddl: str, dml: str | None = None) -> None:
    scripts = pipelines / folder / name / "sql-scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / f"ddl.{name}.sql").write_text(ddl)
    if dml is not None:
        (scripts / f"dml.{name}.sql").write_text(dml)


# -- messages in Flink terms -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, sql, line, words",
    [
        ("dml.t.sql", "INSERT INTO t\nSELECT FROM x WHERE", 2, "empty select list"),
        ("dml.t.sql", "INSERT INTO t\nSELECT k\nFROM x\nWHERE", 4, "WHERE without a condition"),
        ("dml.t.sql", "INSERT INTO t\nSELECT k\nFROM x\nWHERE\nGROUP BY k", 4, "WHERE without a condition"),
        ("dml.t.sql", "INSERT INTO t SELECT k FROM x GROUP BY", 1, "GROUP BY without"),
        ("dml.t.sql", "INSERT INTO t SELECT k FROM x GROUP BY k HAVING", 1, "HAVING without a condition"),
        ("dml.t.sql", "INSERT INTO t SELECT k FROM x ORDER BY", 1, "ORDER BY without"),
        ("dml.t.sql", "INSERT INTO t SELECT k FROM x JOIN y ON", 1, "ON without a condition"),
        ("dml.t.sql", "INSERT INTO t SELECT k, FROM x", 1, "select list ends with a comma"),
        ("dml.t.sql", "INSERT INTO t SELECT k FROM x WHERE k = 1 AND", 1, "AND without"),
        ("ddl.t.sql", "CREATE TABLE t k STRING)", 1, "CREATE TABLE"),
        ("ddl.t.sql", "CREATE TABEL t (k STRING)", 1, "TABEL"),
    ],
)
def test_broken_sql_is_named_in_flink_terms(path: str, sql: str, line: int, words: str) -> None:
    with pytest.raises(ValueError) as error:
        analyse_file(path, sql)
    message = str(error.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message, message
    assert "sqlglot" not in message and "<class" not in message and "unknown statement" not in message, message
    assert "\n" not in message


# -- inventory -------------------------------------------------------------------------------


def test_inventory_excludes_the_broken_table_and_its_dependants_naming_file_and_line(broken: Path) -> None:
    inventory = build_inventory(broken, strict=False)
    assert "int_table_1" not in inventory.tables and "fct_order" not in inventory.tables
    assert {"src_table_1", "int_table_2", "z", "v_p", "fct_c360_purchase"} <= set(inventory.tables)
    by_name = {b.table: b for b in inventory.broken}
    assert set(by_name) == {"int_table_1", "fct_order"}
    own = by_name["int_table_1"]
    assert (own.file, own.line, own.excluded_because) == (BROKEN_DML, 3, [])
    assert "empty select list" in own.message
    assert own.reason.startswith(f"{BROKEN_DML}:3: ")
    dependant = by_name["fct_order"]
    assert dependant.excluded_because == ["int_table_1"]
    assert "int_table_1" in dependant.reason and f"{BROKEN_DML}:3" in dependant.reason
    assert [str(p) for p in inventory.problems] == [own.reason]


def test_dependants_are_excluded_transitively_with_the_chain(tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "sources/p", "a", "CREATE TABLE a (k STRING)", "INSERT INTO a SELECT k FROM raw WHERE")
    write_table(pipelines, "intermediates/p", "b", "CREATE TABLE b (k STRING)", "INSERT INTO b SELECT k FROM a")
    write_table(pipelines, "facts/p", "c", "CREATE TABLE c (k STRING)", "INSERT INTO c SELECT k FROM b")
    write_table(pipelines, "facts/p", "ok", "CREATE TABLE ok (k STRING)", "INSERT INTO ok SELECT k FROM raw")
    inventory = build_inventory(pipelines, strict=False)
    assert list(inventory.tables) == ["ok"]
    chains = {b.table: b.excluded_because for b in inventory.broken}
    assert chains == {"a": [], "b": ["a"], "c": ["b", "a"]}
    graph = ProjectGraph(inventory)
    with pytest.raises(ProjectError, match=r"'c'.*depends on broken table a.*dml\.a\.sql:1"):
        graph.require("c")


def test_broken_ddl_and_duplicates_and_cycles_are_tables_too(tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "sources/p", "bad_ddl", "CREATE TABLE bad_ddl k STRING)",
                "INSERT INTO bad_ddl SELECT k FROM raw")
    write_table(pipelines, "sources/p", "one", "CREATE TABLE same (k STRING)")
    write_table(pipelines, "sources/q", "two", "CREATE TABLE same (k STRING)")
    write_table(pipelines, "intermediates/p", "x", "CREATE TABLE x (k STRING)", "INSERT INTO x SELECT k FROM y")
    write_table(pipelines, "intermediates/p", "y", "CREATE TABLE y (k STRING)", "INSERT INTO y SELECT k FROM x")
    write_table(pipelines, "facts/p", "fine", "CREATE TABLE fine (k STRING)", "INSERT INTO fine SELECT k FROM raw")
    inventory = build_inventory(pipelines, strict=False)
    assert list(inventory.tables) == ["fine"]
    reasons = {(b.table, b.source.folder): b.reason for b in inventory.broken}
    assert reasons[("bad_ddl", "pipelines/sources/p/bad_ddl")].startswith(
        "pipelines/sources/p/bad_ddl/sql-scripts/ddl.bad_ddl.sql:1: CREATE TABLE not understood at 'k'")
    assert reasons[("same", "pipelines/sources/p/one")] == reasons[("same", "pipelines/sources/q/two")] == (
        "pipelines/sources/q/two/sql-scripts/ddl.two.sql:1: duplicate table same, "
        "also defined in pipelines/sources/p/one/sql-scripts/ddl.one.sql")  # both definitions are out
    assert "cycle between tables x -> y -> x" in reasons[("x", "pipelines/intermediates/p/x")]
    assert reasons[("y", "pipelines/intermediates/p/y")] == reasons[("x", "pipelines/intermediates/p/x")]
    assert all("\n" not in str(p) for p in inventory.problems)


def test_strict_inventory_keeps_all_or_nothing(broken: Path) -> None:
    with pytest.raises(ProjectError) as error:
        build_inventory(broken, strict=True)
    assert str(error.value).startswith(f"{BROKEN_DML}:3: ")


# -- CLI -------------------------------------------------------------------------------------


def test_cli_inventory_lists_good_tables_and_a_broken_section(broken: Path) -> None:
    runner = CliRunner()
    text = runner.invoke(app, ["inventory", str(broken)])
    assert text.exit_code == 0, text.output
    assert "src_table_1" in text.output and "broken" in text.output
    assert f"{BROKEN_DML}:3" in text.output
    listed = runner.invoke(app, ["inventory", str(broken), "--json"])
    assert listed.exit_code == 0, listed.output
    report = json.loads(listed.stdout)
    assert "src_table_1" in report and "int_table_1" not in report  # still keyed by table, as without errors
    entries = {b["table"]: b for b in report["broken"]}
    assert entries["int_table_1"]["file"] == BROKEN_DML and entries["int_table_1"]["line"] == 3
    assert entries["fct_order"]["excluded_because"] == ["int_table_1"]


def test_cli_inventory_strict_exits_non_zero_naming_the_file(broken: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "inventory", str(broken), "--strict"],
                            capture_output=True, text=True, env={**os.environ})
    assert result.returncode != 0
    assert f"{BROKEN_DML}:3: " in result.stderr


# -- plan ------------------------------------------------------------------------------------


def test_unrelated_tables_plan_and_broken_ones_fail_with_file_and_line(broken: Path) -> None:
    graph = ProjectGraph(build_inventory(broken, strict=False))
    plan = build_plan(graph, ["int_table_2", "z"], LiveState(tables=set(RAW)))
    assert {s.table for s in plan.steps if s.table} >= {"int_table_2", "z"}
    for table in ("int_table_1", "fct_order"):
        with pytest.raises(ProjectError, match=rf"{BROKEN_DML}:3"):
            build_plan(graph, [table], LiveState(tables=set(RAW)))


def test_a_commit_that_breaks_a_file_never_undeploys_its_table(tmp_path: Path) -> None:
    # an unparsable file reads as a removed table to change detection: the commit plan must refuse it
    from shift_left_dagster.deploy.bluegreen import commit_plan
    from shift_left_dagster.deploy.changes import detect_changes
    from shift_left_dagster.deploy.plan import PlanError, PlanOptions

    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".shift_left_dagster"))
    author = ["-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q", "-b", "main"], [*author, "add", "-A"], [*author, "commit", "-qm", "initial"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    (root / BROKEN_DML).write_text("INSERT INTO int_table_1 SELECT FROM src_table_1")
    subprocess.run(["git", "-C", str(root), *author, "commit", "-qam", "oops"], check=True, capture_output=True)
    changes = detect_changes(root, "HEAD~1")
    graph = ProjectGraph(build_inventory(root / "pipelines", strict=False))
    with pytest.raises(PlanError, match=rf"{BROKEN_DML}:1: SELECT with an empty select list"):
        commit_plan(graph, changes, LiveState(tables=set(RAW)), PlanOptions())


# -- Dagster ---------------------------------------------------------------------------------


def test_definitions_load_with_broken_tables_flagged(broken: Path) -> None:
    from shift_left_dagster.defs.builder import build_flink_definitions

    defs = build_flink_definitions(str(broken))
    repo = defs.get_repository_def()
    assets = repo.assets_defs_by_key
    assert {AssetKey("src_table_1"), AssetKey("int_table_2"), AssetKey("z")} <= set(assets)
    healthy = assets[AssetKey("src_table_1")]
    assert AssetKey("int_table_1") not in healthy.keys and AssetKey("fct_order") not in healthy.keys
    for table in ("int_table_1", "fct_order"):
        key = AssetKey(table)
        flagged = assets[key]
        spec = next(s for s in flagged.specs if s.key == key)
        assert spec.group_name == "broken"
        assert f"{BROKEN_DML}:3" in (spec.description or "")
        assert spec.metadata["flink/broken"] and spec.tags["flink/broken"] == "true"
        check = AssetCheckKey(key, "flink_sql_valid")
        assert check in flagged.check_keys
        assert all(c.blocking for c in flagged.check_specs)
    fct = next(s for s in assets[AssetKey("fct_order")].specs if s.key == AssetKey("fct_order"))
    assert {d.asset_key for d in fct.deps} == {AssetKey("int_table_1"), AssetKey("int_table_2")}
    # materialising a healthy table (and everything it needs) never selects a broken one
    graph = repo.asset_graph
    upstream = AssetSelection.assets("z", "int_table_2").upstream().resolve(graph)
    assert not upstream & {AssetKey("int_table_1"), AssetKey("fct_order")}


def test_a_broken_table_links_to_its_broken_line(broken: Path) -> None:
    from shift_left_dagster.defs.assets import FlinkProject, build_broken_table_assets

    (flagged,) = build_broken_table_assets(FlinkProject(str(broken)))
    spec = next(s for s in flagged.specs if s.key == AssetKey("int_table_1"))
    (reference,) = spec.metadata["dagster/code_references"].code_references
    assert reference.file_path == str(broken.parent / BROKEN_DML) and reference.line_number == 3


def test_materialising_a_broken_table_fails_its_check_with_the_message(broken: Path) -> None:
    from shift_left_dagster.defs.builder import build_flink_definitions

    assets = build_flink_definitions(str(broken)).get_repository_def().assets_defs_by_key
    flagged = assets[AssetKey("int_table_1")]
    result = materialize([flagged], selection=[AssetKey("int_table_1")], raise_on_error=False)
    assert not result.success
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == "flink_sql_valid" and not evaluation.passed
    assert f"{BROKEN_DML}:3" in str(evaluation.metadata["error"].value)


def test_a_project_without_broken_tables_has_no_broken_assets() -> None:
    from shift_left_dagster.defs.definitions import defs

    groups = {s.group_name for a in defs.get_repository_def().assets_defs_by_key.values() for s in a.specs}
    assert "broken" not in groups
