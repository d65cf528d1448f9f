"""The package's import graph: no cycles, function-level imports only where they keep a module light,
and the light layers (project, deploy, confluent, the CLI) never load Dagster or Spark.

The graph is read from the source with `ast` (module- and function-level imports alike), so an import
hidden in a function still counts as an edge: a cycle cannot hide there.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shift_left_dagster"

# Modules that import the project's modules per command, so `--help` and `--version` stay cheap.
CLI_MODULES = {"shift_left_dagster.cli", "shift_left_dagster.cli_unit_tests", "shift_left_dagster.local.cli"}
# What a light module may import inside a function: optional or heavy dependencies (Spark, Dagster, PyFlink,
# cryptography (the throw-away CA falls back to openssl without it), the local service's process module,
# which starts Spark), the package metadata (read by --version only) and the SQL parser's modules (sqlglot:
# the inventory parses only the files its cache lacks, so a warm load never imports it).
HEAVY = ("pyspark", "dagster", "pyflink", "cryptography", "shift_left_dagster.local.process", "importlib.metadata",
         "shift_left_dagster.project.analysis", "shift_left_dagster.project.parsing",
         "shift_left_dagster.project.plain_ddl", "shift_left_dagster.project.plain_dml")
LIGHT = ["shift_left_dagster", "shift_left_dagster.project.graph", "shift_left_dagster.project.inventory",
         "shift_left_dagster.cli",
         *sorted(f"shift_left_dagster.{layer}.{p.stem}" for layer in ("project", "deploy", "confluent")
                 for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__")]


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py")}


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> list[str]:
    """Every name an import statement may load: the module and, for `from m import x`, m.x too."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    base = (".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [node.module or ""]).rstrip(".")
            if node.level else node.module or "")
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _imports(path: Path) -> tuple[list[ast.Import | ast.ImportFrom], list[ast.Import | ast.ImportFrom]]:
    """(all imports, those inside a function) of a source file."""
    tree = ast.parse(path.read_text())
    everything = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    in_functions = [n for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return everything, in_functions


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in _imports(path)[0]:
            edges[name] |= {t for t in _targets(node, name, path) if t in modules and t != name}
    return edges


def _on_a_cycle(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges[todo.pop()]:
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    return sorted((a, b) for a in list(edges) for b in edges[a] if reaches(b, a))


def test_the_edge_rule_sees_imports_hidden_in_functions_and_from_a_package() -> None:
    """The rule itself: a cycle made only of a function-level import and a `from package import module`
    is found (two modules written for the test, not the package)."""
    edges: dict[str, set[str]] = defaultdict(set)
    sources = {"pkg": ("pkg/__init__.py", "from pkg.b import thing\n"),
               "pkg.b": ("pkg/b.py", "def f():\n    from pkg import helper\n"),
               "pkg.helper": ("pkg/helper.py", "")}
    for name, (file, text) in sources.items():
        for node in (n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))):
            edges[name] |= {t for t in _targets(node, name, Path(file)) if t in sources and t != name}
    assert _on_a_cycle(edges) == [("pkg", "pkg.b"), ("pkg.b", "pkg")]


def test_no_import_cycle_between_the_package_modules() -> None:
    assert _on_a_cycle(_graph()) == []


def test_function_level_imports_only_keep_a_module_light() -> None:
    hidden = []
    for name, path in _modules().items():
        if name in CLI_MODULES:
            continue
        for node in _imports(path)[1]:
            target = _targets(node, name, path)[0]
            if not any(target == h or target.startswith(f"{h}.") for h in HEAVY):
                hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}")
    assert hidden == []


def test_light_layers_load_neither_dagster_nor_spark() -> None:
    """The modules imported one after the other in a fresh interpreter: the first that loads Dagster or Spark
    is named (those after it are named too, as the module stays loaded)."""
    probe = ("import importlib, json, sys\n"
             "out = {}\n"
             "for name in sys.argv[1:]:\n"
             "    importlib.import_module(name)\n"
             "    out[name] = sorted(m for m in ('dagster', 'pyspark') if m in sys.modules)\n"
             "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", probe, *LIGHT], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, timeout=300)
    loaded = json.loads(done.stdout)
    assert set(loaded) == set(LIGHT) and len(LIGHT) > 30
    assert {name: heavy for name, heavy in loaded.items() if heavy} == {}


def test_the_cli_module_loads_no_parser_nor_model_library() -> None:
    """`--help` and `--version` import only the CLI: no sqlglot, pydantic or yaml until a command runs."""
    done = subprocess.run([sys.executable, "-c", "import sys, shift_left_dagster.cli; print(sorted(m for m in "
                           "('sqlglot', 'pydantic', 'yaml', 'requests', 'dagster', 'pyspark') if m in sys.modules))"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def test_a_warm_inventory_loads_no_sql_parser(tmp_path: Path) -> None:
    """Every file in the analysis cache: the inventory, graph and report load without sqlglot (a tenth of
    the warm `inventory` command's time); a changed file loads it, to parse that file only."""
    probe = ("import sys\n"
             "from shift_left_dagster.project.graph import ProjectGraph\n"
             "from shift_left_dagster.project.inventory import build_inventory\n"
             "from shift_left_dagster.project.report import inventory_report\n"
             "inventory_report(ProjectGraph(build_inventory(sys.argv[1])))\n"
             "print('sqlglot' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHIFT_LEFT_DAGSTER_CACHE": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", probe, str(ROOT / "flink_project" / "pipelines")], env=env,
                           capture_output=True, text=True, cwd=ROOT, check=True, timeout=120).stdout.strip()
            for _ in range(2)]
    assert runs == ["True", "False"]  # cold: parsed; warm: all from the cache


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["local", "--help"]])
def test_a_missing_pipelines_folder_never_stops_version_or_help(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "PIPELINES": "/no/such/pipelines"},
                          timeout=120)
    assert done.returncode == 0 and done.stdout and "Traceback" not in done.stderr


def test_a_missing_pipelines_folder_is_one_line_naming_it() -> None:
    done = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "inventory"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PIPELINES": "/no/such/pipelines"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: /no/such/pipelines: pipelines folder not found "
                                                "(set PIPELINES or pass it)"]


def test_the_package_root_exports_its_names_lazily() -> None:
    """`from shift_left_dagster import X` works for every name of __all__, and only then loads Dagster."""
    code = ("import sys, shift_left_dagster as p\n"
            "assert 'dagster' not in sys.modules\n"
            "from shift_left_dagster import flink_assets, ConfluentFlinkResource, FlinkTranslator\n"
            "assert 'dagster' in sys.modules\n"
            "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
            "print(missing)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PIPELINES": "/no/such/pipelines"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
