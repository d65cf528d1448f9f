"""The model-based test of the deployment core, run long: many more random sequences than CI's seeds.

    python bench/bench_model.py [--examples 100] [--steps 20]

Prints how many sequences and operations ran (by kind), and the shrunk counterexample if one fails.
Each sequence starts a fresh local service on the one Spark session; expect ~8 s a sequence.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    env = {**os.environ, "SL_MODEL_EXAMPLES": str(args.examples), "SL_MODEL_STEPS": str(args.steps)}
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                          "tests/model/test_exactly_once.py::test_every_sink_equals_the_oracle_after_random_deployments"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    out = run.stdout + run.stderr
    lines = [line for line in out.splitlines() if line.startswith("model:") or "Falsifying" in line
             or line.strip().startswith("state.") or line.startswith("E ")]
    print("\n".join(lines) or out[-3000:])
    verdict = "no counterexample" if run.returncode == 0 else "COUNTEREXAMPLE"
    print(f"wall {time.monotonic() - started:.0f} s, {verdict}")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
