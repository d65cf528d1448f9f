"""Every message a newcomer meets is one clear line naming the file or folder (issue 29, build 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, MarkdownMetadataValue
from typer.testing import CliRunner

from shift_left_dagster.checks.models import CheckOutcome
from shift_left_dagster.checks.rules import statement_healthy
from shift_left_dagster.cli import app
from shift_left_dagster.confluent.models import Statement, StatementStatus
from shift_left_dagster.defs.checks import asset_check_result
from shift_left_dagster.project.config import load_config
from shift_left_dagster.project.errors import ConfigFileError, ProjectError
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory

SAMPLE_PIPELINES = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"


def write_table(pipelines: Path, folder: str, name: str, ddl: str, dml: str) -> None:
    scripts = pipelines / folder / name / "sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / f"ddl.{name}.sql").write_text(ddl)
    (scripts / f"dml.{name}.sql").write_text(dml)


@pytest.mark.parametrize("layout", [[], ["docs"], ["sources"]])
def test_a_pipelines_folder_without_tables_is_one_error_naming_it(tmp_path: Path, layout: list[str]) -> None:
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    for folder in layout:
        (pipelines / folder).mkdir()
    with pytest.raises(ProjectError) as raised:
        build_inventory(pipelines, use_cache=False, strict=False)
    assert len(raised.value.problems) == 1 and "\n" not in raised.value.problems[0]
    assert str(pipelines) in raised.value.problems[0] and "no table" in raised.value.problems[0]
    result = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "inventory", str(pipelines), "--strict"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.strip().count("\n") == 0 and str(pipelines) in result.stderr


def test_the_unknown_table_error_names_the_folder_it_read(tmp_path: Path) -> None:
    folder = tmp_path / "flink_sql"  # not named pipelines, and holds no pipelines/ folder
    write_table(folder, "facts/p1", "t", "CREATE TABLE t (id INT);", "INSERT INTO t SELECT 1;")
    graph = ProjectGraph(build_inventory(folder, use_cache=False))
    with pytest.raises(ProjectError) as raised:
        graph.require("nosuch")
    assert raised.value.problems == [f"unknown table 'nosuch': not defined under {folder}"]


def test_a_typo_in_a_ddl_is_reported_once_by_inventory(tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "facts/p1", "t", "CREATE TABEL t (id INT);", "INSERT INTO t SELECT 1;")
    write_table(pipelines, "facts/p1", "u", "CREATE TABLE u (id INT);", "INSERT INTO u SELECT id FROM t;")
    write_table(pipelines, "facts/p1", "v", "CREATE TABLE v (id INT);", "INSERT INTO v SELECT id FROM u;")
    result = CliRunner().invoke(app, ["inventory", str(pipelines)])
    assert result.output.count("TABEL") == 1, result.output
    assert "ddl.t.sql:1" in result.output.splitlines()[-1]  # v still names the file to fix


def test_a_yaml_error_in_the_config_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("kafka:\n  cluster_id: [a\n  x: 1\n")
    with pytest.raises(ConfigFileError) as raised:
        load_config(config)
    message = str(raised.value)
    assert "\n" not in message, message
    assert message.startswith(f"{config}: ") and "line 3" in message


def test_statement_healthy_never_shows_an_empty_detail() -> None:
    statement = Statement(name="dev-fct-order", status=StatementStatus(phase="STOPPED"))
    passed, message, metadata = statement_healthy(statement, None, None)
    assert not passed and "STOPPED" in message
    assert metadata["detail"] and "STOPPED" in metadata["detail"]


def test_definitions_load_without_a_beta_warning_about_sensor_owners() -> None:
    """As `dg dev` loads them: a fresh process, Python's default warning filters."""
    load = "from shift_left_dagster.defs.definitions import defs; defs.get_repository_def()"
    loaded = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, timeout=300,
                            cwd=SAMPLE_PIPELINES.parents[1], check=True)
    assert "owners" not in loaded.stderr, loaded.stderr


def test_a_data_test_query_keeps_its_line_breaks_in_dagster() -> None:
    sql = "-- every order has a positive amount\nSELECT * FROM fct_order\nWHERE amount < 0"
    outcome = CheckOutcome(table="fct_order", check="no_negative_amount", passed=True, message="ok",
                           metadata={"query": sql})
    value = asset_check_result(AssetKey("fct_order"), outcome).metadata["query"]
    assert isinstance(value, MarkdownMetadataValue)
    assert f"```sql\n{sql}\n```" == value.md_str
