"""Interactive latency under load: how long a DDL and a snapshot SELECT take on an idle service, and
with N continuous statements queued to start and then running (issue: 120 s behind 240).

Prints each latency and its ratio to the idle one, in one run.
Run: python bench/bench_scheduler.py [--statements 240]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shift_left_dagster.local.process import InProcessService  # noqa: E402
from tests.integration.support import SNAPSHOT, client_for, run  # noqa: E402


def interactive(client, tag: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Seconds until a CREATE TABLE, then a snapshot SELECT, are COMPLETED."""
    started = time.monotonic()
    run(client, f"ddl-{tag}", f"CREATE TABLE t_{tag} (id INT)", timeout=600)
    ddl = time.monotonic() - started
    started = time.monotonic()
    run(client, f"select-{tag}", "SELECT id, v FROM src", properties=SNAPSHOT, timeout=600)
    return ddl, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--statements", type=int, default=240)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data, InProcessService(Path(data)) as service:
        client = client_for(service.url)
        run(client, "src-ddl", "CREATE TABLE src (id INT, v STRING)")
        run(client, "src-rows", "INSERT INTO src VALUES (1, 'a'), (2, 'b')")
        interactive(client, "warm")
        idle = interactive(client, "idle")
        for i in range(args.statements):
            run(client, f"sink-{i}", f"CREATE TABLE sink_{i} (id INT, v STRING)")
        for i in range(args.statements):
            client.create_statement(f"copy-{i}", f"INSERT INTO sink_{i} SELECT id, v FROM src")
        queued = interactive(client, "queued")
        pending = sum(1 for s in client.list_statements() if s.name.startswith("copy-") and s.phase == "PENDING")
        for i in range(args.statements):
            client.wait_for_phase(f"copy-{i}", {"RUNNING"}, timeout=3600)
        running = interactive(client, "running")
        for label, (ddl, select) in (("idle", idle), (f"{args.statements} queued", queued),
                                     (f"{args.statements} running", running)):
            print(f"{label:14} ddl={ddl:6.2f}s ({ddl / idle[0]:5.1f}x idle)  "
                  f"snapshot select={select:6.2f}s ({select / idle[1]:5.1f}x idle)")
        print(f"continuous statements still queued when the queued-case select completed: {pending}")


if __name__ == "__main__":
    main()
