"""The long run of the differential test with generated queries (tests/oracle/generated.py).

    python bench/bench_oracle_generated.py [--cases 2000] [--seed 26] [--batch 200] [--show 3]

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
from tests.oracle.generated import Summary, draw_cases, show_case, summarize  # noqa: E402
from tests.oracle.harness import run_oracle  # noqa: E402
from tests.oracle.venv import ready, venv_dir  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--batch", type=int, default=200, help="cases per Flink process and local pass")
    parser.add_argument("--show", type=int, default=3, help="disagreeing cases printed as corpus YAML")
    args = parser.parse_args()
    if not ready():
        print(f"the PyFlink venv is absent ({venv_dir()}): python -m tests.oracle.venv --install")
        return 2
    started = time.monotonic()
    generated = draw_cases(args.cases, args.seed)
    total = Summary()
    with tempfile.TemporaryDirectory(prefix="sl-bench-generated-") as work:
        spark = get_spark()
        with InProcessService(Path(work), spark_factory=lambda: spark) as service:
            for at in range(0, len(generated), args.batch):
                batch = generated[at:at + args.batch]
                run = run_oracle([g.case for g in batch], service.url, Path(work), spark)
                part = summarize(batch, run.verdicts)
                total.tried += part.tried
                total.agree += part.agree
                total.unrun += part.unrun
                total.disagreeing += part.disagreeing
                for label, n in part.by_class.items():
                    total.by_class[label] = total.by_class.get(label, 0) + n
                print(f"batch {at // args.batch + 1}: {part.agree}/{part.tried} agree "
                      f"(Flink {run.flink_seconds:.0f} s, local {run.local_seconds:.0f} s)", flush=True)
    kinds: dict[str, int] = {}
    for drawn in generated:
        kinds[drawn.kind] = kinds.get(drawn.kind, 0) + 1
    share = 100.0 * total.agree / max(total.tried, 1)
    print(f"\nqueries tried {total.tried} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), "
          f"agree {total.agree} ({share:.1f} %), disagree {total.tried - total.agree}, "
          f"not run by both {total.unrun}; "
          f"wall {time.monotonic() - started:.0f} s")
    for label, n in sorted(total.by_class.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {label:40} {n}")
    for drawn, why in total.disagreeing[:args.show]:
        print(f"\n{why}\n{show_case(drawn.case)}")
    return 0 if total.agree == total.tried else 1


if __name__ == "__main__":
    sys.exit(main())
