"""The model-based test of the deployment core, run long: many more random sequences than CI's seeds.

    python bench/bench_model.py [--examples 100] [--steps 20] [--rounds 1] [--check-every 1]
                                [--seed 2500] [--first-round 0] [--no-shrink]

Each round is one pytest run of the model with its own hypothesis seed (round 0 is CI's fixed seed
set); a round stops at its first counterexample, shrunk, so more rounds find more of them. Prints, per
round and in total, the sequences and operations run (by kind) and every counterexample found (its
failing assertion and every operation of the sequence as found, then as shrunk, and where pytest's whole
output is kept). `--check-every 1` (the default here) runs the checks after
every operation.
Each sequence starts a fresh local service on the one Spark session; expect ~10-30 s a sequence.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/model/test_exactly_once.py::test_every_sink_equals_the_oracle_after_random_deployments"


def one_round(number: int, args: argparse.Namespace) -> tuple[int, int, Counter[str], str | None, float]:
    """(sequences, operations, operations by kind, counterexample or None, seconds) of one pytest run."""
    env = {**os.environ, "SL_MODEL_EXAMPLES": str(args.examples), "SL_MODEL_STEPS": str(args.steps),
           "SL_MODEL_CHECK_EVERY": str(args.check_every), "PYTHONPATH": str(ROOT)}
    if args.no_shrink:
        env["SL_MODEL_SHRINK"] = "0"  # report the counterexample as found (shrinking reruns the service)
    seed = []
    if number:
        env["SL_MODEL_RANDOM"] = "1"  # hypothesis' own seed, not CI's derandomized one
        seed = [f"--hypothesis-seed={args.seed + number}"]
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *seed, TEST],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    out = run.stdout + run.stderr
    summary = re.search(r"^model: (\d+) sequences, (\d+) operations \((\{.*\})\)", out, re.MULTILINE)
    sequences, operations, kinds = 0, 0, Counter[str]()
    if summary:
        sequences, operations = int(summary.group(1)), int(summary.group(2))
        kinds = Counter(ast.literal_eval(summary.group(3)))
    if run.returncode == 0:
        return sequences, operations, kinds, None, seconds
    log = Path(tempfile.gettempdir()) / f"bench_model-seed{args.seed}-round{number}.log"
    log.write_text(out)
    return sequences, operations, kinds, counterexample(out) + f"\n(pytest's whole output: {log})", seconds


def counterexample(out: str) -> str:
    """The failure as the model printed it (`report`: the failing assertion, then every operation of the
    sequence): the first sequence that failed, as found, and the last one (hypothesis' shrunk replay) when it
    differs; then the errors pytest shows, exception groups included (a flaky failure is one: hypothesis then
    prints no steps of its own)."""
    blocks = [block.strip() for block in re.findall(r"^(model counterexample: .*?)(?=^(?!model step |    )|\Z)",
                                                    out, re.MULTILINE | re.DOTALL)]
    shown = [f"found:\n{blocks[0]}"] if blocks else ["the model printed no counterexample of its own"]
    if len(blocks) > 1 and blocks[-1] != blocks[0]:
        shown.append(f"last replay (shrunk):\n{blocks[-1]}")
    errors = [line for line in dict.fromkeys(
        re.sub(r"^(E |\s*\|)\s*", "", line) for line in out.splitlines() if re.match(r"^(E |\s*\|)", line))
        if ERROR.match(line)]
    shown.append("pytest's errors:\n" + "\n".join(error[:2000] for error in errors[:12]))
    return "\n".join(shown)


ERROR = re.compile(r"^([\w.]*(Error|Exception|Failure|Failed|Unhealthy|Refused|Busy|Definition)\b|assert )")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1, help="pytest runs, each with its own seed")
    parser.add_argument("--seed", type=int, default=2500, help="round n (n > 0) runs with seed + n")
    parser.add_argument("--first-round", type=int, default=0,
                        help="the first round's number: e.g. --seed 3300 --first-round 1 --rounds 1 runs round 1 only")
    parser.add_argument("--no-shrink", action="store_true", help="print counterexamples unshrunk (faster)")
    parser.add_argument("--check-every", type=int, default=1, help="run the checks after every n-th operation")
    args = parser.parse_args()
    total_sequences, total_operations, total_kinds = 0, 0, Counter[str]()
    counterexamples: list[str] = []
    started = time.monotonic()
    for number in range(args.first_round, args.first_round + args.rounds):
        sequences, operations, kinds, counterexample, seconds = one_round(number, args)
        total_sequences += sequences
        total_operations += operations
        total_kinds += kinds
        verdict = "no counterexample" if counterexample is None else "COUNTEREXAMPLE"
        print(f"round {number}: {sequences} sequences, {operations} operations, {seconds:.0f} s, {verdict}")
        if counterexample is not None:
            counterexamples.append(counterexample)
            print("  " + counterexample.replace("\n", "\n  "))
        sys.stdout.flush()
    print(f"model: {total_sequences} sequences, {total_operations} operations; by kind:")
    for kind, n in sorted(total_kinds.items(), key=lambda item: -item[1]):
        print(f"  {kind:42} {n}")
    print(f"counterexamples found: {len(counterexamples)} in {args.rounds} rounds; "
          f"wall {time.monotonic() - started:.0f} s")
    return 1 if counterexamples else 0


if __name__ == "__main__":
    raise SystemExit(main())
