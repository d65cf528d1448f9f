"""Inventory, graph and reports over the sample project and synthetic projects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shift_left_dagster.project import inventory as inventory_module
from shift_left_dagster.project import scan as scan_module
from shift_left_dagster.project.errors import ProjectError
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from shift_left_dagster.project.report import hierarchy, inventory_report, write_pipeline_definition

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "flink_project" / "pipelines"
GENERATOR = REPO / "tools" / "gen_synth_project.py"  # a copy of shared/tools/gen_synth_project.py


@pytest.fixture
def sample(tmp_path) -> Path:
    """A private copy of the sample project (tests write caches and definitions into it)."""
    shutil.copytree(SAMPLE.parent, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    return tmp_path / "project" / "pipelines"


def write_table(pipelines: Path, folder: str, name: str, ddl: str, dml: str | None) -> None:
    scripts = pipelines / folder / name / "sql-scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    (scripts / f"ddl.{name}.sql").write_text(ddl)
    if dml is not None:
        (scripts / f"dml.{name}.sql").write_text(dml)


def recorded_paths(monkeypatch, function: str, module=inventory_module) -> list[str]:
    """The paths `module`'s `function(path, ...)` is called with from now on."""
    paths: list[str] = []
    real = getattr(module, function)

    def recording(path, *args):
        paths.append(path)
        return real(path, *args)

    monkeypatch.setattr(module, function, recording)
    return paths


def test_sample_project_graph(sample):
    graph = ProjectGraph(build_inventory(sample))
    assert graph.parents["fct_order"] == ["int_table_1", "int_table_2"]
    assert graph.parents["int_table_1"] == ["src_table_1", "src_table_2"]
    assert graph.parents["z"] == ["x", "y"]
    assert graph.children["z"] == ["d", "p"]
    assert graph.external_sources["src_table_1"] == ["raw_orders"]
    assert graph.tables["fct_order"].type == "fact" and graph.tables["fct_order"].product == "p1"
    assert graph.tables["v_p"].type == "view" and graph.tables["d"].type == "dimension"
    assert graph.ancestors("fct_order") == ["src_table_1", "src_table_2", "int_table_1", "src_table_3", "int_table_2"]
    assert graph.descendants("src_b") == ["x", "y", "z", "d", "p", "v_p"]
    order = graph.order
    for name, parents in graph.parents.items():
        assert all(order.index(p) < order.index(name) for p in parents)


@pytest.mark.parametrize("size", [200])
def test_synthetic_project_matches_the_generator_truth(tmp_path, size):
    subprocess.run([sys.executable, str(GENERATOR), "--tables", str(size), "--out", str(tmp_path), "--seed", "3"],
                   check=True, capture_output=True)
    report = inventory_report(ProjectGraph(build_inventory(tmp_path / "pipelines")))
    truth = json.loads((tmp_path / "expected_graph.json").read_text())["tables"]
    assert report.keys() == truth.keys()
    for name, expected in truth.items():
        found = report[name]
        assert [found[k] for k in ("parents", "children", "type", "product")] == [
            expected[k] for k in ("parents", "children", "type", "product")
        ], name
        # Flink keeps state for a stateless shape over an upsert/retract parent (ChangelogNormalize).
        normalised = any(truth[p]["changelog_mode"] in ("upsert", "retract") for p in expected["parents"])
        assert (found["state_form"] == "stateful") == (expected["stateful_sql"] or normalised), name


def test_type_comes_from_the_folder_under_pipelines_not_from_substrings(tmp_path):
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "intermediates/facts_team", "sources_fact", "CREATE TABLE sources_fact (k STRING)",
                "INSERT INTO sources_fact SELECT k FROM raw_x")
    table = build_inventory(pipelines).tables["sources_fact"]
    assert (table.type, table.product) == ("intermediate", "facts_team")


def test_cycle_is_an_error_naming_the_files(tmp_path):
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "intermediates/p", "a", "CREATE TABLE a (k STRING)", "INSERT INTO a SELECT k FROM b")
    write_table(pipelines, "intermediates/p", "b", "CREATE TABLE b (k STRING)", "INSERT INTO b SELECT k FROM a")
    with pytest.raises(ProjectError) as error:
        ProjectGraph(build_inventory(pipelines))
    message = str(error.value)
    assert "cycle" in message and "\n" not in message
    assert "pipelines/intermediates/p/a/sql-scripts/dml.a.sql" in message
    assert "pipelines/intermediates/p/b/sql-scripts/dml.b.sql" in message


def test_duplicate_table_is_an_error_naming_both_files(tmp_path):
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "sources/p", "t1", "CREATE TABLE same (k STRING)", None)
    write_table(pipelines, "facts/q", "t2", "CREATE TABLE same (k STRING)", None)
    with pytest.raises(ProjectError) as error:
        build_inventory(pipelines)
    message = str(error.value)
    assert message.startswith("pipelines/sources/p/t1/sql-scripts/ddl.t1.sql:1: duplicate table same")
    assert "pipelines/facts/q/t2/sql-scripts/ddl.t2.sql" in message


def test_malformed_sql_names_file_and_line(tmp_path):
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "facts/p", "f", "CREATE TABLE f (k STRING)", "INSERT INTO f\nSELECT k\nFROM a\nWHERE (k = 1")
    with pytest.raises(ProjectError) as error:
        build_inventory(pipelines)
    assert str(error.value).startswith("pipelines/facts/p/f/sql-scripts/dml.f.sql:4: ")


def test_dml_writing_another_table_is_an_error(tmp_path):
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "facts/p", "f", "CREATE TABLE f (k STRING)", "INSERT INTO g SELECT k FROM a")
    with pytest.raises(ProjectError, match="dml.f.sql:1: writes g, but its ddl creates f"):
        build_inventory(pipelines)


def test_cache_reparses_only_changed_files_and_is_never_stale(sample, monkeypatch):
    build_inventory(sample)  # fills the cache
    parsed = recorded_paths(monkeypatch, "analyse_file")
    warm = build_inventory(sample)
    assert parsed == []
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    dml.write_text("INSERT INTO int_table_2 SELECT * FROM src_table_1 "
                   "JOIN src_table_2 ON src_table_1.k = src_table_2.k")
    changed = build_inventory(sample)
    assert parsed == ["pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"]
    assert changed.tables["int_table_2"].tables_read == ["src_table_1", "src_table_2"]
    assert changed.tables["int_table_2"].code_version != warm.tables["int_table_2"].code_version


def test_an_unchanged_project_loads_the_inventory_last_built_and_nothing_else(sample, monkeypatch):
    """inventory.json: the whole inventory, read back as built (the analyses are not even read), and never
    once a file changed."""
    built = build_inventory(sample, strict=False)
    assert built == build_inventory(sample, strict=False, use_cache=False)
    cache = sample.parent / ".shift_left_dagster" / "cache"
    (cache / "analysis.json").write_text("not read when nothing changed")
    monkeypatch.setattr(inventory_module, "analyse_file", lambda path, text: pytest.fail(f"parsed {path}"))
    assert build_inventory(sample, strict=False) == built
    monkeypatch.undo()
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    dml.write_text("INSERT INTO int_table_2 SELECT * FROM src_table_1")
    changed = build_inventory(sample, strict=False)
    assert changed.tables["int_table_2"].tables_read == ["src_table_1"]
    assert changed == build_inventory(sample, strict=False, use_cache=False)
    dml.unlink()  # a file gone, no content changed: the folder's files are part of what was built from
    assert "int_table_2" in {b.table for b in build_inventory(sample, strict=False).broken}


def test_a_project_whose_analyses_are_cached_loads_where_nothing_can_be_written(sample, monkeypatch):
    """Say a read-only image: the inventory is kept when possible, never required."""
    built = build_inventory(sample, strict=False)
    (sample.parent / ".shift_left_dagster" / "cache" / "inventory.json").unlink()

    def read_only(self, file, text):
        raise PermissionError(f"read-only: {file}")

    monkeypatch.setattr(inventory_module.AnalysisCache, "_write", read_only)
    assert build_inventory(sample, strict=False) == built


def test_pipelines_env_var_selects_the_project(sample, monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELINES", str(sample))
    monkeypatch.chdir(tmp_path)
    assert "fct_order" in build_inventory().tables


def test_pipeline_definition_is_shift_left_shaped_and_stable(sample):
    graph = ProjectGraph(build_inventory(sample))
    first = write_pipeline_definition(graph, "fct_order").read_bytes()
    second = write_pipeline_definition(graph, "fct_order").read_bytes()
    assert first == second
    data = json.loads(first)
    assert data["table_name"] == "fct_order" and data["type"] == "fact" and data["product_name"] == "p1"
    assert data["dml_ref"] == "pipelines/facts/p1/fct_order/sql-scripts/dml.fct_order.sql"
    assert [p["table_name"] for p in data["parents"]] == ["int_table_1", "int_table_2"]
    assert data["complexity"]["state_form"] == "Stateful"
    assert data["complexity"]["number_of_left_joins"] >= 1
    child_view = hierarchy(graph, "z", with_children=True)
    assert [c["table_name"] for c in child_view["children"]] == ["d", "p"]
    assert child_view["children"][0]["children"][0]["table_name"] == "v_p"


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_cli_inventory_is_identical_under_any_hash_seed(sample):
    outputs = {cli("inventory", str(sample), "--json", env={"PYTHONHASHSEED": seed}).stdout
               for seed in ("0", "1", "77")}
    assert len(outputs) == 1
    report = json.loads(outputs.pop())
    assert report["fct_order"]["parents"] == ["int_table_1", "int_table_2"]
    assert set(report["fct_order"]) >= {"type", "product", "ddl", "dml", "parents", "children",
                                        "external_sources", "state_form", "primary_key"}


def test_cli_report_formats_and_errors(sample):
    tree = cli("report", "fct_order", "--pipelines", str(sample), "--format", "tree")
    assert tree.returncode == 0 and "<- int_table_1" in tree.stdout
    as_yaml = cli("report", "fct_order", "--pipelines", str(sample), "--format", "yaml")
    assert "table_name: fct_order" in as_yaml.stdout
    missing = cli("report", "nope", "--pipelines", str(sample))
    assert missing.returncode == 2 and "unknown table 'nope'" in missing.stderr


def test_a_seeds_folder_types_its_tables_seed_as_shift_left_does(tmp_path: Path) -> None:
    folder = tmp_path / "pipelines/seeds/p1/s_t/sql-scripts"
    folder.mkdir(parents=True)
    (folder / "ddl.s_t.sql").write_text("CREATE TABLE s_t (a STRING) WITH ('changelog.mode' = 'append');\n")
    assert build_inventory(tmp_path / "pipelines", use_cache=False).tables["s_t"].type == "seed"


def same_size_edit(file: Path, old: str, new: str) -> None:
    """Rewrite a file keeping its size and its mtime (as an edit within one timestamp tick leaves it)."""
    text = file.read_text()
    assert len(old) == len(new) and old in text
    before = file.stat()
    file.write_text(text.replace(old, new))
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (file.stat().st_size, file.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_warm_load_hashes_only_files_whose_stat_changed_and_still_sees_a_same_tick_edit(sample, monkeypatch):
    """Content keys from (size, mtime, ctime, inode) once a file is older than the scan that stored them;
    a same-size edit with its mtime put back still changes the ctime, so it is seen."""
    monkeypatch.setattr(scan_module, "RACY_MARGIN_NS", 0)  # the files of this test are all fresh
    build_inventory(sample)  # stores every file's stat with its key
    hashed = recorded_paths(monkeypatch, "content_key", scan_module)
    built = build_inventory(sample)
    assert hashed == []
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    same_size_edit(dml, "REFUNDED", "REFUNDEX")
    changed = build_inventory(sample)
    assert hashed == ["pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"]
    assert changed != built
    assert changed == build_inventory(sample, use_cache=False)


def test_a_file_edited_within_the_racy_margin_of_the_last_scan_is_hashed_anyway(sample):
    """git's racy-clean rule: a stat no older than the scan that stored it (with a margin for coarse
    timestamps) proves nothing, so a same-size, same-mtime edit right after a load is still seen."""
    built = build_inventory(sample)
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    same_size_edit(dml, "REFUNDED", "REFUNDEX")
    changed = build_inventory(sample)
    assert changed != built
    assert changed == build_inventory(sample, use_cache=False)
