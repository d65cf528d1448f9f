"""Definitions for a 3000-table project vs a bare multi_asset of the same specs; planning time per table.

Both are built in this one process, alternately (ours, then the bare one), several times; the median and
the worst of the per-pair ratios are printed (bench/figures.py), with the load average and where our time
goes (reading the project, the specs, Dagster). Times are the process's CPU seconds: the build is
single-threaded, and on a shared machine wall time mostly measures the neighbours. Ours includes reading
the project (warm inventory cache), the graph, the translator and the multi_asset; the bare one builds the
same 3000 AssetSpecs (same keys, deps, group, kinds, tags, metadata, code version) and the same
AssetCheckSpecs from their fields and puts them in one multi_asset in Definitions. (Checks cost Dagster
one output each: 18000 here.) Our build pauses the cycle collector (project/inventory.py `paused_gc`);
the bare one, as a user writes it, does not, so it pays Python's automatic full collections: a second
ratio, with no target, builds the bare one with the collector paused the same way. Planning times every
table of the project as a target with nothing running (the largest plans).

    python bench/bench_defs.py [--tables 3000] [--pairs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dagster import AssetCheckSpec, AssetSpec, Definitions, multi_asset  # noqa: E402

from bench.figures import load_average, paired_ratio  # noqa: E402
from shift_left_dagster.defs.assets import build_flink_asset_specs  # noqa: E402
from shift_left_dagster.defs.builder import build_flink_definitions  # noqa: E402
from shift_left_dagster.defs.project import FlinkProject  # noqa: E402
from shift_left_dagster.deploy.live import LiveState  # noqa: E402
from shift_left_dagster.deploy.plan import build_plan  # noqa: E402
from shift_left_dagster.project.graph import ProjectGraph  # noqa: E402
from shift_left_dagster.project.inventory import build_inventory, paused_gc  # noqa: E402
from shift_left_dagster.project.lineage import project_lineage  # noqa: E402

GENERATOR = ROOT / "tools" / "gen_synth_project.py"
TARGET = 1.1  # the issue's: at most 1.1x a bare multi_asset


def ours(pipelines: Path) -> tuple[float, list, list]:
    gc.collect()  # each build starts from a collected heap: neither pays for the other's garbage
    start = time.process_time()
    defs = build_flink_definitions(str(pipelines))  # assets, the git sensor and the promotion jobs
    repository = defs.get_repository_def()
    elapsed = time.process_time() - start
    multi = next(a for a in repository.assets_defs_by_key.values() if a.is_executable)
    return elapsed, list(multi.specs), list(multi.check_specs)


def bare(fields: list[dict], check_fields: list[dict], paused: bool = False) -> float:
    """The bare build as a user writes it (the collector as Python runs it), or (`paused`) with the
    collector paused over the same part as ours (specs to Definitions; the repository after), so the ratio
    shows our layer's own cost without the collector's."""
    gc.collect()
    start = time.process_time()
    with paused_gc() if paused else contextlib.nullcontext():
        specs = [AssetSpec(**spec) for spec in fields]
        checks = [AssetCheckSpec(**check) for check in check_fields]

        @multi_asset(specs=specs, check_specs=checks, can_subset=True)
        def bare_tables(context):  # noqa: ANN001
            return None

        defs = Definitions(assets=[bare_tables])
    defs.get_repository_def()
    return time.process_time() - start


def breakdown(pipelines: Path) -> str:
    """Where our time goes, once: reading the project (warm caches), the specs, the rest (Dagster); the
    collector paused as build_flink_definitions pauses it."""
    gc.collect()
    with paused_gc():
        start = time.process_time()
        project = FlinkProject(pipelines)
        _ = project.graph, project.data_tests
        read = time.process_time()
        build_flink_asset_specs(project)
        specs = time.process_time()
    gc.collect()
    specs_done = time.process_time()
    build_flink_definitions(str(pipelines)).get_repository_def()
    whole = time.process_time() - specs_done
    return (f"ours once: project read {read - start:.2f} s, specs {specs - read:.2f} s "
            f"(of which Dagster's AssetSpec and AssetCheckSpec too), whole build {whole:.2f} s")


def kept_per_build(pipelines: Path) -> int:
    """Objects a build leaves alive once its Definitions are dropped (a leak grows every later collection,
    and once grew the bare side's heap too, making its collections rarer: the pairs drifted)."""
    ours(pipelines)
    gc.collect()
    before = len(gc.get_objects())
    ours(pipelines)
    gc.collect()
    return len(gc.get_objects()) - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--out", default="bench/out/defs")
    args = parser.parse_args()
    out = Path(args.out)
    subprocess.run([sys.executable, str(GENERATOR), "--tables", str(args.tables), "--out", str(out)],
                   check=True, capture_output=True)
    pipelines = out / "pipelines"
    project_lineage(ProjectGraph(build_inventory(pipelines))).all()  # warm both caches, as a code location has them
    _, specs, check_specs = ours(pipelines)
    check_fields = [dict(name=c.name, asset=c.asset_key, blocking=c.blocking, description=c.description)
                    for c in check_specs]
    fields = [dict(key=s.key, deps=s.deps, group_name=s.group_name, kinds=s.kinds, tags=s.tags,
                   metadata=s.metadata, code_version=s.code_version, description=s.description,
                   skippable=s.skippable) for s in specs]
    print(f"definitions tables={args.tables} ({len(specs)} assets, {len(check_specs)} checks); "
          f"before: {load_average()}")
    paired_ratio("definitions vs a bare multi_asset", lambda: ours(pipelines)[0],
                 lambda: bare(fields, check_fields), args.pairs, TARGET)
    paired_ratio("definitions vs a bare multi_asset built with the collector paused as ours (no target)",
                 lambda: ours(pipelines)[0], lambda: bare(fields, check_fields, paused=True), args.pairs, None)
    print(breakdown(pipelines))
    print(f"objects a build keeps alive after it is dropped: {kept_per_build(pipelines)}")
    print(f"after: {load_average()}")

    graph = ProjectGraph(build_inventory(pipelines))
    plan_times = []
    for table in graph.order:
        start = time.process_time()
        build_plan(graph, [table], LiveState())  # tables unknown: external topics trusted
        plan_times.append((time.process_time() - start) * 1000)
    plan_times.sort()
    print(f"plan one table of {len(plan_times)}: p50={statistics.median(plan_times):.1f}ms "
          f"p99={plan_times[int(len(plan_times) * 0.99)]:.1f}ms max={plan_times[-1]:.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
