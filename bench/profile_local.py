"""Where the local service's time goes: the sample project and the stateful 1 M-row run, broken down.

For each scenario it prints
- the wall time, the engine thread's busy time (its rounds and compaction) and the rest (the engine
  idle: waiting for a tick, for HTTP, for the client's polls);
- inclusive time and calls of the engine's phases (compile, validate, run, bind, write, commit, ...);
- Spark jobs started, per engine phase that started them;
- the client's side: statements created, polls, seconds in HTTP calls;
- the top functions of the engine thread by cumulative time (cProfile), with --top N.

Run: python bench/profile_local.py [--scenario sample|sample-warm|stateless|stateful|all] [--rows 1000000] [--top 25]
Also reached as `python bench/bench_local.py --profile`.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_scenarios import Throughput, sample_on_fresh_service, sample_on_warm_service  # noqa: E402
from shift_left_dagster.confluent.client import ConfluentClient  # noqa: E402
from shift_left_dagster.local import engine as engine_module  # noqa: E402
from shift_left_dagster.local import jobs as jobs_module  # noqa: E402
from shift_left_dagster.local import storage as storage_module  # noqa: E402
from shift_left_dagster.local import store as store_module  # noqa: E402
from shift_left_dagster.local.group_aggregation import AggregateStates  # noqa: E402
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.spark import get_spark  # noqa: E402

# (class, method, label): the engine's phases, timed inclusively (a phase inside another counts in both)
PHASES: list[tuple[type, str, str]] = [
    (engine_module.Engine, "_step", "engine round"),
    (engine_module.Engine, "_compact", "compaction"),
    (engine_module.Engine, "_start_statement", "start statement (incl. first run)"),
    (engine_module.Engine, "_advance", "advance statement"),
    (engine_module.Engine, "_parse", "parse SQL"),
    (engine_module.Introspection, "answer", "introspection check"),
    (engine_module.Ddl, "run", "DDL"),
    (jobs_module.Jobs, "compile", "compile job"),
    (jobs_module.Jobs, "validate", "  of which validate (Spark analysis)"),
    (jobs_module.Jobs, "_group_aggregation", "  of which plan GROUP BY accumulators"),
    (jobs_module.Jobs, "first_run", "first run's sinks analysed (their validation)"),
    (jobs_module.Jobs, "start", "start offsets"),
    (jobs_module.Jobs, "advance", "run job"),
    (jobs_module.Jobs, "_fire", "  watermarks"),
    (jobs_module.Jobs, "bind", "  bind views (+ Spark analysis)"),
    (jobs_module.Jobs, "_aggregate", "  GROUP BY on accumulators"),
    (jobs_module.Jobs, "_changelog", "  changelog vs own batches"),
    (jobs_module.Jobs, "_in_log_order", "  log-order check"),
    (jobs_module.Jobs, "_select_changes", "  SELECT results"),
    (storage_module.TableLogs, "write", "  write batch"),
    (storage_module.TableLogs, "_collected", "    collect to driver (Spark job)"),
    (storage_module.TableLogs, "write_rows", "  write literal VALUES (typed in Python)"),
    (AggregateStates, "write", "  write accumulators"),
    (AggregateStates, "prune", "  prune accumulators"),
    (store_module.Store, "commit_run", "commit run (sqlite)"),
    (store_module.Store, "batches", "store.batches (sqlite)"),
    (store_module.Store, "statement", "store.statement (sqlite)"),
]
CLIENT: list[tuple[str, str]] = [("create_statement", "create statement"), ("get_statement", "poll statement")]


class Breakdown:
    """Inclusive seconds and calls per phase, Spark jobs per phase, a cProfile of the engine thread."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.jobs: dict[str, int] = defaultdict(int)
        self.py4j: dict[str, int] = defaultdict(int)  # innermost phase -> JVM round trips (engine thread)
        self.starts: dict[str, list[tuple[float, int]]] = defaultdict(list)  # statement kind -> (seconds, jobs)
        self.profile = cProfile.Profile()
        self._depth = threading.local()
        self._stack = threading.local()
        self._undo: list[Callable[[], None]] = []

    def _job_count(self) -> int:
        """Jobs the JVM's scheduler started so far (one call; the status tracker lists them one by one)."""
        return int(self.spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs())

    @contextmanager
    def installed(self) -> Iterator[None]:
        self._count_round_trips()
        for owner, method, label in PHASES:
            self._wrap(owner, method, label, profile=method in ("_step", "_compact"))
        for method, label in CLIENT:
            self._wrap(ConfluentClient, method, label, profile=False)
        try:
            yield
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()

    def _count_round_trips(self) -> None:
        """Count py4j commands (one JVM round trip each) on the engine thread, by its innermost phase."""
        client = type(self.spark.sparkContext._gateway._gateway_client)
        original = client.send_command
        breakdown = self

        def send_command(this: Any, *args: Any, **kwargs: Any) -> Any:
            labels = getattr(breakdown._stack, "labels", None)
            if labels and threading.current_thread().name == "shift-left-local-engine":
                breakdown.py4j[labels[-1]] += 1
            return original(this, *args, **kwargs)

        client.send_command = send_command
        self._undo.append(lambda: setattr(client, "send_command", original))

    def _wrap(self, owner: type, method: str, label: str, *, profile: bool) -> None:
        original = owner.__dict__[method]
        function = original.__func__ if isinstance(original, staticmethod) else original
        breakdown = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack: list[str] = getattr(breakdown._stack, "labels", None) or []
            breakdown._stack.labels = stack
            depth = getattr(breakdown._depth, "n", 0)
            if profile and depth == 0:
                breakdown.profile.enable()
            breakdown._depth.n = depth + (1 if profile else 0)
            jobs_before = breakdown._job_count() if label.strip().startswith(("run", "compile", "start ", "DDL",
                                                                              "write", "collect", "bind")) else None
            stack.append(label)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                breakdown.seconds[label] += time.perf_counter() - started
                breakdown.calls[label] += 1
                stack.pop()
                if jobs_before is not None:
                    breakdown.jobs[label] += breakdown._job_count() - jobs_before
                    if method == "_start_statement":
                        kind = str(args[1]).rsplit("-", 1)[0]
                        breakdown.starts[kind].append((time.perf_counter() - started,
                                                       breakdown._job_count() - jobs_before))
                breakdown._depth.n = depth
                if profile and depth == 0:
                    breakdown.profile.disable()

        setattr(owner, method, staticmethod(timed) if isinstance(original, staticmethod) else timed)
        self._undo.append(lambda: setattr(owner, method, original))

    def report(self, title: str, wall: float, top: int) -> None:
        busy = self.seconds["engine round"] + self.seconds["compaction"]
        print(f"\n=== {title}: {wall:.2f} s wall, load average {os.getloadavg()[0]:.2f} ===")
        print(f"engine thread busy {busy:.2f} s ({self.calls['engine round']} rounds), "
              f"idle {max(wall - busy, 0):.2f} s (ticks, HTTP, client polls)")
        print(f"{'phase':48s} {'seconds':>8s} {'calls':>6s} {'Spark jobs':>10s} {'JVM calls':>10s}")
        for _owner, _method, label in [*PHASES, *[(None, m, lbl) for m, lbl in CLIENT]]:
            if self.calls.get(label):
                jobs = self.jobs.get(label)
                print(f"{label:48s} {self.seconds[label]:8.2f} {self.calls[label]:6d} "
                      f"{jobs if jobs is not None else '':>10} {self.py4j.get(label, ''):>10}")
        print(f"Spark jobs in all: {self._job_count() - self._jobs_at_start}; JVM round trips of the engine "
              f"thread: {sum(self.py4j.values())} (counted against the innermost phase)")
        for kind, starts in sorted(self.starts.items()):
            seconds = sorted(s for s, _ in starts)
            print(f"statements {kind}: {len(starts)} started in {sum(seconds):.2f} s (incl. first run; median "
                  f"{seconds[len(seconds) // 2] * 1000:.0f} ms, max {seconds[-1] * 1000:.0f} ms), "
                  f"{sum(j for _, j in starts)} Spark jobs")
        if top:
            out = io.StringIO()
            pstats.Stats(self.profile, stream=out).sort_stats("cumulative").print_stats(top)
            lines = out.getvalue().splitlines()
            start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
            print("engine thread, top functions by cumulative time (cProfile):")
            print("\n".join(lines[start:start + top + 1]))

    def begin(self) -> None:
        self._jobs_at_start = self._job_count()


def profiled(title: str, scenario: Callable[[], float], top: int) -> None:
    breakdown = Breakdown(get_spark())
    with breakdown.installed():
        breakdown.begin()
        wall = scenario()
    breakdown.report(title, wall, top)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=("sample", "sample-warm", "stateful", "stateless", "all"), default="all")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--top", type=int, default=25, help="cProfile lines of the engine thread (0: none)")
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="profile-local-"))
    try:
        if args.scenario in ("sample", "all"):
            profiled("sample project, service just started", lambda: sample_on_fresh_service(data), args.top)
        if args.scenario in ("sample", "sample-warm", "all"):
            profiled("sample project, warm service", sample_on_warm_service(data), args.top)
        kinds = [k for k in ("stateless", "stateful") if args.scenario in (k, "all")]
        if kinds:
            with InProcessService(data / "service") as service:
                throughput = Throughput(service, args.rows, data)
                for kind in kinds:
                    for _ in range(2):  # JIT and caches warm, as in the benchmark's later pairs
                        throughput.ours(kind)
                        throughput.bare(kind)
                    profiled(f"{kind}, {args.rows:,} rows", lambda kind=kind: throughput.ours(kind), args.top)
                    profiled(f"bare Spark, the same {kind} query over the same {args.rows:,} rows",
                             lambda kind=kind: throughput.bare(kind), 0)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
