"""Inventory, graph and reports over the sample project and synthetic projects."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shift_left_dagster import cli as cli_module
from shift_left_dagster.project import inventory as inventory_module
from shift_left_dagster.project import report_cache
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


# -- the inventory command's kept report (project/report_cache.py) ------------------------------


def from_kept_report(capsys, *arguments: str) -> str | None:
    """What `inventory ...` prints from its kept report, in this process; None: it has to build the inventory."""
    capsys.readouterr()
    answered = cli_module._inventory_from_cache(["inventory", *arguments])
    printed = capsys.readouterr().out
    assert answered or printed == ""
    return printed if answered else None


@pytest.fixture
def own_cache(monkeypatch):
    monkeypatch.delenv("SHIFT_LEFT_DAGSTER_CACHE", raising=False)  # each project's cache beside it


def test_an_unchanged_project_prints_the_kept_report_as_a_build_would(sample, tmp_path, capsys, own_cache):
    """Text and --json, a broken table included: the same bytes as the command building the inventory in a
    fresh cache; a file changed (its parents) is printed as changed."""
    (sample / "facts/p1/fct_order/sql-scripts/dml.fct_order.sql").write_text("INSERT INTO fct_order SELECT (")
    assert from_kept_report(capsys, str(sample)) is None  # nothing kept yet
    for flags in ([], ["--json"]):
        built = cli("inventory", str(sample), *flags)  # keeps the report
        fresh = cli("inventory", str(sample), *flags, env={"SHIFT_LEFT_DAGSTER_CACHE": str(tmp_path / f"fresh{flags}")})
        assert built.returncode == fresh.returncode == 0 and "fct_order" in built.stdout
        assert from_kept_report(capsys, *flags, str(sample)) == built.stdout == fresh.stdout
    assert "broken: 1 tables left out" in cli("inventory", str(sample)).stdout
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    dml.write_text(dml.read_text().replace("src_table_3", "src_table_1"))
    assert from_kept_report(capsys, str(sample)) is None
    changed = cli("inventory", str(sample), "--json")
    assert json.loads(changed.stdout)["int_table_2"]["parents"] == ["src_table_1"]
    assert from_kept_report(capsys, "--json", str(sample)) == changed.stdout


def test_the_kept_report_of_a_synthetic_project_matches_the_generator_truth(tmp_path, capsys, own_cache):
    subprocess.run([sys.executable, str(GENERATOR), "--tables", "120", "--out", str(tmp_path), "--seed", "5"],
                   check=True, capture_output=True)
    pipelines = tmp_path / "pipelines"
    assert cli("inventory", str(pipelines)).returncode == 0
    report = json.loads(from_kept_report(capsys, "--json", str(pipelines)) or "null")
    truth = json.loads((tmp_path / "expected_graph.json").read_text())["tables"]
    assert report.keys() == truth.keys()
    for name, expected in truth.items():
        assert [report[name][k] for k in ("parents", "children", "type", "product")] == [
            expected[k] for k in ("parents", "children", "type", "product")], name


def test_a_same_size_edit_within_the_racy_margin_of_the_kept_report_is_seen(sample, capsys, own_cache):
    """git's racy-clean rule holds for the kept report too. The race it guards against: a file rewritten
    in the same timestamp tick as the scan that read it keeps its whole stat (size, mtime, ctime, inode)
    on a coarse file system; made here by putting the file's stat now, with its content key of before the
    edit, into the kept scan. The stat is no older than that scan, so it proves nothing: hashed, shown."""
    cli("inventory", str(sample))
    assert from_kept_report(capsys, str(sample)) is not None
    dml = sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    same_size_edit(dml, "src_table_3", "src_table_1")
    kept = sample.parent / ".shift_left_dagster" / "cache" / "last_scan.marshal"
    layout, version, pipelines, source, scanned_ns, stamps = marshal.loads(kept.read_bytes())
    relative = "pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"
    now = dml.stat()
    assert stamps[relative][:4] != (now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_ino)  # ns timestamps
    stamps[relative] = (now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_ino, stamps[relative][4])
    scanned_ns = max(scanned_ns, now.st_ctime_ns)  # the edit in the scan's tick
    kept.write_bytes(marshal.dumps((layout, version, pipelines, source, scanned_ns, stamps)))
    assert from_kept_report(capsys, str(sample)) is None
    assert "int_table_2" in json.loads(cli("inventory", str(sample), "--json").stdout)["src_table_1"]["children"]


def test_a_same_size_edit_is_seen_once_the_kept_stats_are_trusted(sample, capsys, own_cache, monkeypatch):
    monkeypatch.setattr(scan_module, "RACY_MARGIN_NS", 0)  # every stat kept is trusted
    cli("inventory", str(sample))
    hashed = recorded_paths(monkeypatch, "content_key", scan_module)
    assert from_kept_report(capsys, str(sample)) is not None and hashed == []
    same_size_edit(sample / "intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql", "src_table_3",
                   "src_table_1")
    assert from_kept_report(capsys, str(sample)) is None
    assert hashed == ["pipelines/intermediates/p1/int_table_2/sql-scripts/dml.int_table_2.sql"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other layout", "other version"])
def test_a_corrupt_or_foreign_kept_cache_is_ignored_and_rebuilt(sample, capsys, own_cache, damage):
    expected = cli("inventory", str(sample)).stdout
    cache = sample.parent / ".shift_left_dagster" / "cache"
    for file in (cache / "last_scan.marshal", cache / report_cache.FILE_NAME):
        content = file.read_bytes()
        data = marshal.loads(content)
        file.write_bytes({"garbage": b"\x00not marshal",
                          "truncated": content[: len(content) // 2],
                          "other layout": marshal.dumps((data[0] + 1, *data[1:])),
                          "other version": marshal.dumps((data[0], "0" * 24, *data[2:]))}[damage])
        if damage == "other version" and file.name != "last_scan.marshal":
            continue  # the report is named by the scan's digest: a foreign one is the next case's
        assert from_kept_report(capsys, str(sample)) is None
        assert build_inventory(sample, strict=False) == build_inventory(sample, strict=False, use_cache=False)
        assert cli("inventory", str(sample)).stdout == expected  # and kept again
        assert from_kept_report(capsys, str(sample)) == expected


def test_a_kept_report_is_refused_for_strict_with_broken_tables_and_for_any_other_command_line(sample, capsys,
                                                                                                own_cache):
    (sample / "facts/p1/fct_order/sql-scripts/dml.fct_order.sql").write_text("INSERT INTO fct_order SELECT (")
    cli("inventory", str(sample))
    assert from_kept_report(capsys, str(sample)) is not None
    assert from_kept_report(capsys, "--strict", str(sample)) is None
    strict = cli("inventory", "--strict", str(sample))
    assert strict.returncode == 2 and "dml.fct_order.sql:1:" in strict.stderr
    for other in (["--help"], ["-h"], [str(sample), str(sample)], ["--pipelines", str(sample)], [""]):
        assert from_kept_report(capsys, *other) is None


def test_a_warm_inventory_command_loads_no_model_library_nor_parser(sample, own_cache):
    """The point of the kept report: no pydantic (which typer's command runner loads), no sqlglot."""
    cli("inventory", str(sample))
    probe = ("import sys\n"
             "from shift_left_dagster import cli\n"
             "answered = cli._inventory_from_cache(['inventory', sys.argv[1]])\n"
             "print(answered, sorted(m for m in ('pydantic', 'sqlglot', 'typer._adapters') if m in sys.modules),"
             " file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(sample)], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "SHIFT_LEFT_DAGSTER_CACHE"})
    assert done.stderr.strip() == "True []"
