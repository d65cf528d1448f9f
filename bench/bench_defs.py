"""Definitions for a 3000-table project vs a bare multi_asset of the same specs; planning time per table.

Both are built in this one process, alternately, several times; the ratio of
the medians is printed. Ours includes reading the project (warm inventory
cache), the graph, the translator and the multi_asset; the bare one builds
the same 3000 AssetSpecs (same keys, deps, group, kinds, tags, metadata, code
version) and the same AssetCheckSpecs from their fields and puts them in one
multi_asset in Definitions. (Checks cost Dagster one output each: ~12000 here.) Planning times every
table of the project as a target with nothing running (the largest plans).

    python bench/bench_defs.py [--tables 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetCheckSpec, AssetSpec, Definitions, multi_asset

from shift_left_dagster.defs.builder import build_flink_definitions
from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.plan import build_plan
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory

GENERATOR = Path(__file__).resolve().parents[1] / "tools" / "gen_synth_project.py"


def ours(pipelines: Path) -> tuple[float, list, list]:
    start = time.perf_counter()
    defs = build_flink_definitions(str(pipelines))  # assets, the git sensor and the promotion jobs
    repository = defs.get_repository_def()
    elapsed = time.perf_counter() - start
    multi = next(a for a in repository.assets_defs_by_key.values() if a.is_executable)
    return elapsed, list(multi.specs), list(multi.check_specs)


def bare(fields: list[dict], check_fields: list[dict]) -> float:
    start = time.perf_counter()
    specs = [AssetSpec(**spec) for spec in fields]
    checks = [AssetCheckSpec(**check) for check in check_fields]

    @multi_asset(specs=specs, check_specs=checks, can_subset=True)
    def bare_tables(context):  # noqa: ANN001
        return None

    Definitions(assets=[bare_tables]).get_repository_def()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench/out/defs")
    args = parser.parse_args()
    out = Path(args.out)
    subprocess.run([sys.executable, str(GENERATOR), "--tables", str(args.tables), "--out", str(out)],
                   check=True, capture_output=True)
    pipelines = out / "pipelines"
    build_inventory(pipelines)  # warm the cache, as a deployed code location has it
    ours_times, bare_times = [], []
    for _ in range(args.repeat):
        elapsed, specs, check_specs = ours(pipelines)
        ours_times.append(elapsed)
        check_fields = [dict(name=c.name, asset=c.asset_key, blocking=c.blocking, description=c.description)
                        for c in check_specs]
        fields = [dict(key=s.key, deps=s.deps, group_name=s.group_name, kinds=s.kinds, tags=s.tags,
                       metadata=s.metadata, code_version=s.code_version, description=s.description,
                       skippable=s.skippable) for s in specs]
        bare_times.append(bare(fields, check_fields))
    ours_median, bare_median = statistics.median(ours_times), statistics.median(bare_times)
    print(f"definitions tables={args.tables} ours={ours_median:.2f}s bare_multi_asset={bare_median:.2f}s "
          f"ratio={ours_median / bare_median:.2f}x (median of {args.repeat})")

    graph = ProjectGraph(build_inventory(pipelines))
    plan_times = []
    for table in graph.order:
        start = time.perf_counter()
        build_plan(graph, [table], LiveState())  # tables unknown: external topics trusted
        plan_times.append((time.perf_counter() - start) * 1000)
    plan_times.sort()
    print(f"plan one table of {len(plan_times)}: p50={statistics.median(plan_times):.1f}ms "
          f"p99={plan_times[int(len(plan_times) * 0.99)]:.1f}ms max={plan_times[-1]:.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
