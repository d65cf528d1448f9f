"""The differential oracle, statement by statement: the local engine against Apache Flink on every corpus case.

    python bench/bench_oracle.py [--case NAME ...] [--batch]

Default: each case alone on each side (one Flink job per case in one PyFlink
process; one case at a time on a fresh local service), so the times are each
statement's own. --batch runs the corpus as the test does (one Flink job, all
local cases together, both sides at once) and shows per-case averages.
Prints, per case: rows in Flink's sink, rows in the local sink, agreement, the
seconds each side took; then the totals. Needs the PyFlink venv
(python -m tests.oracle.venv --install); Flink results are never cached here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["SL_ORACLE_CACHE"] = "0"  # measure Flink, never read its cached results

from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.spark import get_spark  # noqa: E402
from tests.oracle.compare import Verdict, compare_all  # noqa: E402
from tests.oracle.corpus import Case, load_corpus  # noqa: E402
from tests.oracle.flink import run_flink  # noqa: E402
from tests.oracle.harness import KNOWN_DIFFERENCES, run_oracle  # noqa: E402
from tests.oracle.local import LocalOutcome, run_local  # noqa: E402
from tests.oracle.venv import ready, venv_dir  # noqa: E402


def each_alone(cases: list[Case], service: InProcessService) -> tuple[dict[str, Verdict], float, float]:
    spark = get_spark()
    began = time.monotonic()
    flink = run_flink(cases, each=True)
    flink_seconds = time.monotonic() - began
    local: dict[str, LocalOutcome] = {}
    began = time.monotonic()
    for case in cases:
        started = time.monotonic()
        local.update(run_local([case], service.url, Path(service.data_dir), spark))
        local[case.name].seconds = time.monotonic() - started
    local_seconds = time.monotonic() - began
    verdicts = compare_all({c.name: flink[c.name] for c in cases}, local, spark,
                           kinds_only={c.name for c in cases if not c.judge_rows})
    return verdicts, flink_seconds, local_seconds


def show(verdicts: dict[str, Verdict]) -> None:
    print(f"{'case':32} {'flink rows':>10} {'local rows':>10} {'agree':>6} {'flink s':>8} {'local s':>8}")
    for name, verdict in sorted(verdicts.items()):
        agree = "yes" if verdict.agree else ("known" if name in KNOWN_DIFFERENCES else "NO")
        rows = ["-" if n is None else str(n) for n in (verdict.flink_rows, verdict.local_rows)]
        print(f"{name:32} {rows[0]:>10} {rows[1]:>10} {agree:>6} {verdict.flink_seconds:8.2f} "
              f"{verdict.local_seconds:8.2f}")
    for _name, verdict in sorted(verdicts.items()):
        if not verdict.agree:
            print("  " + verdict.explain().replace("\n", "\n  "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", default=[], help="only these cases (repeatable)")
    parser.add_argument("--batch", action="store_true", help="the test's way: all cases at once on each side")
    args = parser.parse_args()
    if not ready():
        print(f"the PyFlink venv is absent ({venv_dir()}): python -m tests.oracle.venv --install")
        return 2
    cases = [c for c in load_corpus() if not args.case or c.name in args.case]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sl-bench-oracle-") as work:
        spark = get_spark()
        with InProcessService(Path(work), spark_factory=lambda: spark) as service:
            if args.batch:
                run = run_oracle(cases, service.url, Path(work), spark)
                verdicts, flink_seconds, local_seconds = run.verdicts, run.flink_seconds, run.local_seconds
            else:
                verdicts, flink_seconds, local_seconds = each_alone(cases, service)
    show(verdicts)
    agreeing = sum(v.agree for v in verdicts.values())
    known = sum(1 for n, v in verdicts.items() if not v.agree and n in KNOWN_DIFFERENCES)
    print(f"\n{len(verdicts)} cases: {agreeing} agree, {known} known differences, "
          f"{len(verdicts) - agreeing - known} unexplained; Flink {flink_seconds:.1f} s (one PyFlink process), "
          f"local {local_seconds:.1f} s, wall {time.monotonic() - started:.1f} s")
    return 0 if agreeing + known == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
