"""The project's identity (lease name, statement labels, housekeeping scope): a name from config, else
a stable hash of the pipelines path, never the folder's name (issue 25, case 3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shift_left_dagster.deploy.identity import project_identity
from shift_left_dagster.project.config import ConfigFileError, load_config, local_defaults

SAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "flink_project" / "config.yaml"


def test_projects_in_folders_of_the_same_name_have_different_stable_identities(tmp_path: Path) -> None:
    config = local_defaults()
    one, two = tmp_path / "a" / "flink_project", tmp_path / "b" / "flink_project"
    for root in (one, two):
        (root / "pipelines").mkdir(parents=True)
    assert project_identity(config, one) != project_identity(config, two)
    assert project_identity(config, one) == project_identity(config, tmp_path / "a" / ".." / "a" / "flink_project")
    assert "flink" not in project_identity(config, one)
    (tmp_path / "link").symlink_to(one)
    assert project_identity(config, tmp_path / "link") == project_identity(config, one)  # the resolved path


def test_app_project_name_in_config_yaml_is_the_identity(tmp_path: Path) -> None:
    text = SAMPLE_CONFIG.read_text().replace("app:\n", "app:\n  project_name: sales\n", 1)
    (tmp_path / "config.yaml").write_text(text)
    assert project_identity(load_config(tmp_path / "config.yaml", environ={}), tmp_path) == "sales"
    shutil.copy(SAMPLE_CONFIG, tmp_path / "plain.yaml")  # shift_left's file, unmodified: no name, a hash
    assert project_identity(load_config(tmp_path / "plain.yaml", environ={}), tmp_path).startswith("p-")


def test_a_project_name_that_cannot_name_a_statement_is_refused_naming_the_field(tmp_path: Path) -> None:
    text = SAMPLE_CONFIG.read_text().replace("app:\n", "app:\n  project_name: Sales Team\n", 1)
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigFileError, match="app.project_name"):
        load_config(tmp_path / "config.yaml", environ={})
