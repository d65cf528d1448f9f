"""Discovery as dg users expect (issue 29, build 4): `dg list components` shows the component, and
`dg scaffold defs` writes a defs.yaml that loads in a create-dagster project (`src/<pkg>/defs/<name>/`).

The shared install is editable and its entry points are those of the checkout it was installed from, so
the entry point is installed here as pip would: a dist-info folder holding the `entry_points.txt` made
from this checkout's pyproject declaration, on PYTHONPATH; dg itself then finds it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GROUP = "dagster_dg_cli.registry_modules"  # the group dg reads (dagster_dg_core.context)
COMPONENT = "shift_left_dagster.FlinkProjectComponent"


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """This checkout first on the path, and its declared entry points installed as a dist-info."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("entry-points", {})
    assert GROUP in declared, f"pyproject.toml declares no [project.entry-points.\"{GROUP}\"]"
    site = tmp_path_factory.mktemp("site")
    info = site / "shift_left_dagster_entry_points-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shift-left-dagster-entry-points\nVersion: 0\n")
    lines = [f"[{GROUP}]", *(f"{name} = {value}" for name, value in declared[GROUP].items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}


def dg(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(["dg", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_dg_list_components_shows_the_flink_component(environment: dict[str, str], tmp_path: Path) -> None:
    listed = json.loads(dg("list", "components", "--json", cwd=tmp_path, env=environment))
    assert COMPONENT in [item["key"] for item in listed["items"]]


def test_the_scaffolded_defs_yaml_loads_the_sample_in_a_create_dagster_project(
        environment: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "newproj"
    package = project / "src" / "newproj"
    (package / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "newproj"\nversion = "0.1.0"\n\n'
                                            '[tool.dg]\ndirectory_type = "project"\n\n'
                                            '[tool.dg.project]\nroot_module = "newproj"\n')
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(
        "from pathlib import Path\n\nfrom dagster import Definitions, definitions, load_from_defs_folder\n\n\n"
        "@definitions\ndef defs() -> Definitions:\n"
        "    return load_from_defs_folder(path_within_project=Path(__file__).parent)\n")
    shutil.copytree(ROOT / "flink_project", project / "flink_project",
                    ignore=shutil.ignore_patterns(".shift_left_dagster"))
    env = {**environment, "PYTHONPATH": os.pathsep.join([environment["PYTHONPATH"], str(project / "src")])}

    dg("scaffold", "defs", COMPONENT, "flink", cwd=project, env=env)
    written = (package / "defs" / "flink" / "defs.yaml").read_text()
    assert "attributes: {}" not in written and f"type: {COMPONENT}" in written

    listed = json.loads(dg("list", "defs", "--json", cwd=project, env=env))
    executable = {a["asset_key"] for a in listed["assets"] if a["is_executable"]}
    with_dml = {p.name.removeprefix("dml.").removesuffix(".sql")
                for p in (project / "flink_project" / "pipelines").rglob("sql-scripts/dml.*.sql")}
    assert with_dml and with_dml <= executable, sorted(with_dml - executable)
