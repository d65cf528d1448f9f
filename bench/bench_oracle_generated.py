"""The long run of the differential test with generated queries (tests/oracle/generated.py).

    python bench/bench_oracle_generated.py [--cases 2000] [--seed 26] [--batch 200] [--show 3] [--kinds window,over]

Draws the cases with a fixed seed, runs them in batches (one PyFlink process and one local pass
per batch) and prints: queries tried, agreements, disagreements by class (the case's kind, then
kind/feature), and the first disagreeing cases as corpus YAML, to keep as fixed corpus cases.
Needs the PyFlink venv (python -m tests.oracle.venv --install); Flink results are never cached.
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
os.environ["SL_ORACLE_CACHE"] = "0"

from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.spark import get_spark  # noqa: E402
from tests.oracle.generated import (  # noqa: E402
    KINDS,
    Generated,
    Summary,
    draw_cases,
    known_reason,
    show_case,
    split_variants,
    summarize,
)
from tests.oracle.harness import run_oracle  # noqa: E402
from tests.oracle.venv import ready, venv_dir  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--batch", type=int, default=200, help="cases per Flink process and local pass")
    parser.add_argument("--kinds", default=",".join(KINDS), help="the query classes to draw (comma-separated)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no batch that would end past this many minutes (the last batch's time)")
    parser.add_argument("--show", type=int, default=3, help="disagreeing cases printed as corpus YAML")
    parser.add_argument("--no-splits", dest="splits", action="store_false",
                        help="skip the second property (each single-source case's rows cut into other runs)")
    args = parser.parse_args()
    if not ready():
        print(f"the PyFlink venv is absent ({venv_dir()}): python -m tests.oracle.venv --install")
        return 2
    started = time.monotonic()
    generated = draw_cases(args.cases, args.seed, tuple(args.kinds.split(",")))
    print(f"drew {len(generated)} cases in {time.monotonic() - started:.0f} s", flush=True)
    total = Summary()
    with tempfile.TemporaryDirectory(prefix="sl-bench-generated-") as work:
        spark = get_spark()
        with InProcessService(Path(work), spark_factory=lambda: spark) as service:
            ran: list[Generated] = []
            last = 0.0
            for at in range(0, len(generated), args.batch):
                if args.minutes is not None and time.monotonic() - started + last > 60 * args.minutes:
                    print(f"stopped after {len(ran)} cases: the next batch would end past {args.minutes:.0f} min")
                    break
                began = time.monotonic()
                batch = generated[at:at + args.batch]
                variants, original = split_variants(batch) if args.splits else ([], {})
                run = run_oracle([g.case for g in batch], service.url, Path(work), spark, variants=variants,
                                 original=original)
                part = summarize(batch, run.verdicts, variants, original)
                total.add(part)
                ran += batch
                last = time.monotonic() - began
                steps = ", ".join(f"{step} {seconds:.0f}" for step, seconds in run.local_phases.items())
                print(f"batch {at // args.batch + 1}: {part.agree}/{part.tried} agree, splits "
                      f"{part.splits_agree}/{part.splits_tried} (Flink {run.flink_seconds:.0f} s, "
                      f"local {run.local_seconds:.0f} s: {steps}; compare {run.compare_seconds:.0f} s; "
                      f"load {os.getloadavg()[0]:.1f})", flush=True)
                for drawn, why in part.disagreeing:  # at once: a run stopped early still names them
                    print(f"  {drawn.kind} {' '.join(drawn.features)}: {why.splitlines()[-1].strip()[:300]}",
                          flush=True)
    kinds: dict[str, int] = {}
    for drawn in ran:
        kinds[drawn.kind] = kinds.get(drawn.kind, 0) + 1
    share = 100.0 * total.agree / max(total.tried, 1)
    print(f"\nqueries tried {total.tried} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), "
          f"agree {total.agree} ({share:.1f} %), disagree {total.tried - total.agree}, "
          f"not run by both {total.unrun}; wall {time.monotonic() - started:.0f} s")
    print(f"second property (the same rows in other engine runs, where the case agrees; an outer interval "
          f"join's or LEFT temporal join's with a source idle in the first run, judged on its changelog kinds): "
          f"{total.splits_agree}/{total.splits_tried} agree")
    for label, n in sorted(total.by_class.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {label:40} {n}")
    known = [(d, known_reason(d)) for d, _why in total.disagreeing if known_reason(d)]
    reasons: dict[str, int] = {}
    for _drawn, reason in known:
        reasons[str(reason)] = reasons.get(str(reason), 0) + 1
    print(f"known differences: {len(known)} of {len(total.disagreeing)} disagreements")
    for reason, n in sorted(reasons.items(), key=lambda item: -item[1]):
        print(f"  {n:4}  {reason}")
    unknown = [(d, why) for d, why in total.disagreeing if not known_reason(d)]
    for drawn, why in unknown[:args.show]:
        print(f"\n{why}\n{show_case(drawn.case)}")
    for drawn, why in total.unrun_cases[:args.show]:
        print(f"\nnot run by both ({drawn.kind}): {why}")
    for case, why in total.splits_disagreeing[:args.show]:
        print(f"\nsplit: {why}\n{show_case(case)}")
    return 0 if total.agree == total.tried and total.splits_agree == total.splits_tried else 1


if __name__ == "__main__":
    sys.exit(main())
