"""Inventory + graph on synthetic projects of 200/1000/3000 tables, checked against the truth.

For each size: generate the project with shared/tools/gen_synth_project.py, run
`shift-left-dagster inventory --json` as a whole process cold (no cache) and warm
(cache present, nothing changed) and after touching one file, then compare
parents/children/type/product/state_form with expected_graph.json.

    python bench/bench_graph.py [--sizes 200,1000,3000] [--seed 7] [--out bench/out/graph]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[1] / "tools" / "gen_synth_project.py"  # a copy of shared/tools


def timed_inventory(pipelines: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "shift_left_dagster.cli", "inventory", str(pipelines), "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return time.perf_counter() - start, json.loads(out)


def mismatches(found: dict, expected: dict) -> list[str]:
    problems = []
    for name, truth in expected.items():
        table = found.get(name)
        if table is None:
            problems.append(f"{name}: missing")
            continue
        for key in ("parents", "children", "type", "product"):
            if table[key] != truth[key]:
                problems.append(f"{name}.{key}: {table[key]} != {truth[key]}")
        if (table["state_form"] == "stateful") != truth["stateful_sql"]:
            problems.append(f"{name}.state_form: {table['state_form']} vs stateful_sql={truth['stateful_sql']}")
    problems.extend(f"{name}: not in the generator's graph" for name in found.keys() - expected.keys())
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200,1000,3000")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="bench/out/graph")
    args = parser.parse_args()
    failed = False
    for size in (int(s) for s in args.sizes.split(",")):
        folder = Path(args.out) / str(size)
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--tables", str(size), "--out", str(folder), "--seed", str(args.seed)],
            check=True,
            capture_output=True,
        )
        pipelines = folder / "pipelines"
        cold, found = timed_inventory(pipelines)
        warm, again = timed_inventory(pipelines)
        one_file = sorted(pipelines.rglob("dml.*.sql"))[0]
        one_file.write_text(one_file.read_text() + "\n-- touched\n")
        touched, _ = timed_inventory(pipelines)
        expected = json.loads((folder / "expected_graph.json").read_text())["tables"]
        problems = mismatches(found, expected)
        failed |= bool(problems) or found != again
        files = sum(1 for _ in pipelines.rglob("*.sql"))
        print(
            f"tables={size:5d} files={files:5d} cold={cold:6.2f}s warm={warm:5.2f}s "
            f"one-file-changed={touched:5.2f}s cold/warm={cold / warm:4.1f}x "
            f"graph={'exact' if not problems else f'{len(problems)} mismatches'}"
        )
        for problem in problems[:10]:
            print("   ", problem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
