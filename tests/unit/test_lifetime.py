"""The parent-death signal the service's Spark JVM is started with (Linux)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shift_left_dagster.local.lifetime import set_parent_death_signal, spark_dies_with_this_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only")


def launched_from_a_thread(popen) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    """Start `sleep 60` from a thread that then ends: the child's parent thread is gone."""
    holder: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: holder.append(popen()))
    thread.start()
    thread.join()
    return holder[0]


def test_a_child_with_the_parent_death_signal_ends_with_the_thread_that_started_it() -> None:
    child = launched_from_a_thread(lambda: subprocess.Popen(
        ["sleep", "60"], preexec_fn=lambda: set_parent_death_signal(signal.SIGTERM)))
    assert child.wait(timeout=10) == -signal.SIGTERM


def test_pyspark_launcher_popen_gets_the_signal_and_keeps_its_own_preexec(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pyspark.java_gateway as java_gateway

    monkeypatch.setattr(java_gateway, "Popen", subprocess.Popen)
    spark_dies_with_this_process()
    spark_dies_with_this_process()  # twice: wraps the original once
    assert java_gateway.Popen.__wrapped__ is subprocess.Popen  # type: ignore[attr-defined]
    marker = tmp_path / "theirs-ran"

    def theirs() -> None:  # PySpark's own preexec_fn (ignores SIGINT); runs in the child
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        marker.write_text("ran")

    child = launched_from_a_thread(lambda: java_gateway.Popen(["sleep", "60"], preexec_fn=theirs))
    assert child.wait(timeout=10) == -signal.SIGTERM
    assert marker.read_text() == "ran"
