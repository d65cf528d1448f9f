"""validate-config validates in every mode; a config file named in local mode is read (never silently
ignored); --dir chooses the tables under a folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from shift_left_dagster.cli import _targets, app
from shift_left_dagster.deploy.target import target_config
from shift_left_dagster.project.errors import ConfigFileError
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.unit.test_config import SHIFT_LEFT_CONFIG

PROJECT = Path(__file__).resolve().parents[2] / "flink_project"


def test_validate_config_names_the_bad_field_and_passes_a_good_file(tmp_path: Path) -> None:
    good = tmp_path / "config.yaml"
    good.write_text(SHIFT_LEFT_CONFIG)
    done = CliRunner().invoke(app, ["validate-config", str(good)])
    assert done.exit_code == 0 and done.output.startswith("valid: environment"), done.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(SHIFT_LEFT_CONFIG.replace("  region:", "  regio:"))
    failed = CliRunner().invoke(app, ["validate-config", str(bad)])
    assert failed.exit_code == 2 and "confluent_cloud.region: field required" in failed.output, failed.output


def test_a_broken_config_file_in_local_mode_is_an_error_not_ignored(tmp_path: Path) -> None:
    broken = tmp_path / "config.yaml"
    broken.write_text("kafka: [unclosed\n")
    with pytest.raises(ConfigFileError, match="not valid YAML"):
        target_config(broken, mode="local", environ={}, local_url="http://127.0.0.1:1")
    with pytest.raises(ConfigFileError, match="not valid YAML"):
        target_config(None, mode="local", environ={"CONFIG_FILE": str(broken)}, local_url="http://127.0.0.1:1")


def test_a_config_file_in_local_mode_brings_its_environment_choices(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(SHIFT_LEFT_CONFIG)
    local = target_config(path, mode="local", environ={}, local_url="http://127.0.0.1:1")
    assert local.flink.flink_url == "http://127.0.0.1:1"  # still the local service
    assert local.app.schema_context == ".flink-stage"


def test_dir_chooses_every_table_under_a_folder() -> None:
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    assert _targets(graph, None, None, None, None, PROJECT / "pipelines/intermediates/p1") == [
        "int_table_1", "int_table_2"]
    assert _targets(graph, None, None, None, ["int_table_2"], PROJECT / "pipelines/intermediates/p1") == [
        "int_table_1"]
