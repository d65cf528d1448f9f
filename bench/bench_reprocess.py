"""What a reprocess costs (issue 31): building a shadow version from a time against rebuilding in place.

On a copy of the sample with its own local service (fct_order deployed and caught up first), alternately:

- ours: `reprocess fct_order --from 2026-01-02` (fct_order_v2 beside the serving version, its sources read
  from that time) until caught up, then rolled back (not timed);
- baseline: `deploy fct_order --force` (the serving table recreated, reprocessed from earliest) until
  caught up.

Both rebuild the same state (fct_order's parents carry the times they were written, so both read all of
it); the reprocess also creates and labels a new version. Prints the per-pair ratio's median and worst and
each side's median. Run by hand: python bench/bench_reprocess.py [--pairs 3]. Target: ratio <= 1.5.

Then what promote's verification costs: with fct_order_v2 caught up, `verify_candidates` (its checks and the
key rules for a version reading from T) against the same checks of the serving fct_order alone
(`run_checks`), alternately on one Spark session. No target is set: the issue asks for none; the figure
says what promote adds (the key rules read both versions' keys and recompute the SQL's keys from T).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.figures import paired_ratio  # noqa: E402
from shift_left_dagster.checks import ChecksSettings, LocalSinkReader, find_dml_statements, run_checks  # noqa: E402
from shift_left_dagster.checks.candidates import verify_candidates  # noqa: E402
from shift_left_dagster.deploy.deployment import Deployer  # noqa: E402
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.reader import LocalData  # noqa: E402
from shift_left_dagster.local.spark import get_spark  # noqa: E402
from shift_left_dagster.project.config import local_defaults  # noqa: E402
from shift_left_dagster.project.graph import ProjectGraph  # noqa: E402
from shift_left_dagster.project.inventory import build_inventory  # noqa: E402
from tests.integration.support import PROJECT, client_for, quiesce  # noqa: E402

START = datetime(2026, 1, 2, tzinfo=UTC)


def timed(action: Callable[[], object], url: str) -> float:
    """Seconds from planning to every statement caught up."""
    started = time.perf_counter()
    action()
    quiesce(url)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-reprocess-"))
    shutil.copytree(PROJECT, base / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    try:
        with InProcessService(base / "service", spark_factory=get_spark) as service:
            graph = ProjectGraph(build_inventory(base / "project" / "pipelines", use_cache=False))

            def deployer() -> Deployer:
                return Deployer(client=client_for(service.url), graph=graph, config=local_defaults(service.url),
                                seeds_dir=base / "project" / "seeds")

            timed(lambda: deployer().deploy(["fct_order"]).wait(), service.url)  # warm: every parent caught up

            def reprocess() -> float:
                seconds = timed(lambda: deployer().reprocess(["fct_order"], START).wait(), service.url)
                deployer().rollback(["fct_order"]).wait()
                return seconds

            paired_ratio("reprocess fct_order into v2 vs deploy --force, until caught up",
                         reprocess, lambda: timed(lambda: deployer().deploy(["fct_order"], force=True).wait(),
                                                  service.url), args.pairs, target=1.5)

            client, env = client_for(service.url), local_defaults(service.url).env_name
            timed(lambda: deployer().reprocess(["fct_order"], START).wait(), service.url)
            reader = LocalSinkReader(LocalData(service.data_dir, get_spark()))
            table = [graph.tables["fct_order"]]

            def verify() -> float:
                started = time.perf_counter()
                report = verify_candidates(client, graph, env, reader)
                assert not report.problems, report.problems
                return time.perf_counter() - started

            def checks() -> float:
                started = time.perf_counter()
                outcomes = run_checks(table, reader, find_dml_statements(client, table, env), ChecksSettings())
                assert all(o.passed for o in outcomes), [o.message for o in outcomes if not o.passed]
                return time.perf_counter() - started

            paired_ratio("promote's verification of fct_order_v2 vs the checks of fct_order", verify, checks,
                         args.pairs, target=None)
            reader.close()
            deployer().rollback(["fct_order"]).wait()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
