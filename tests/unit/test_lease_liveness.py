"""A lease holder's process is dead once killed, even before anyone reaps it (issue 25: a killed run's
step process, orphaned in a container whose init never reaps, still answered signal 0 and its lease
was kept for the hour a stale lease takes)."""

from __future__ import annotations

import socket
import subprocess
import time

from shift_left_dagster.deploy.lease import process_alive


def test_a_killed_process_is_dead_reaped_or_not() -> None:
    running = subprocess.Popen(["sleep", "30"])
    name = f"{socket.gethostname()}:{running.pid}"
    assert process_alive(name) is True
    running.kill()
    time.sleep(0.3)  # killed, not reaped yet: a zombie
    assert process_alive(name) is False
    running.wait()
    assert process_alive(name) is False
    assert process_alive(f"another-host:{running.pid}") is None  # another host's process: unknown
