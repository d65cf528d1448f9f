"""The service's Spark JVM ends with the service, and the service writes only under its data folder.

Three layers, because a SIGKILL runs no Python code:
- the JVM is started with a parent-death signal (``prctl(PR_SET_PDEATHSIG)``
  in its ``preexec_fn``): when the thread that launched it ends (the engine
  thread at stop) or the service process dies, the kernel sends it SIGTERM;
- PySpark's own guard: the JVM exits when its stdin pipe from Python closes;
- the service is a session leader, so every process it started shares its
  process group: ``end_group`` ends what is left of a group (only processes
  of this service: PySpark's JVM and workers, the service module), by pid.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shift_left_dagster.local.settings import FAST_START_JAVA_OPTIONS, SPARK_JAVA_OPTIONS_ENV

PR_SET_PDEATHSIG = 1
TMP_DIR = "tmp"  # under the data folder: Spark's local dirs, the JVM's and Python's temp files


def set_parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """Ask Linux to send ``sig`` to this process when its parent thread ends. No-op off Linux."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    prctl = getattr(libc, "prctl", None)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def spark_dies_with_this_process() -> None:
    """Start PySpark's JVM with a parent-death signal (wraps the Popen PySpark's launcher calls).

    PySpark sets its own ``preexec_fn`` (ignore SIGINT); ours runs first, then
    its. If PySpark stops calling ``java_gateway.Popen``, the process-group
    cleanup and PySpark's stdin guard remain.
    """
    import pyspark.java_gateway as java_gateway

    original: Callable[..., Any] = getattr(java_gateway.Popen, "__wrapped__", java_gateway.Popen)

    def popen(*args: Any, **kwargs: Any) -> Any:
        parent = os.getpid()
        theirs = kwargs.get("preexec_fn")

        def preexec() -> None:
            set_parent_death_signal(signal.SIGTERM)
            if os.getppid() != parent:  # the parent died before prctl: the signal will never come
                os._exit(1)
            if theirs is not None:
                theirs()

        kwargs["preexec_fn"] = preexec
        return original(*args, **kwargs)

    popen.__wrapped__ = original  # type: ignore[attr-defined]
    java_gateway.Popen = popen  # type: ignore[assignment,misc]


def confine_to(data_dir: Path) -> dict[str, str]:
    """Environment that keeps Spark's and the JVM's scratch files under ``data_dir/tmp`` (returned, not applied).

    Spark's local dirs (SPARK_LOCAL_DIRS), the driver JVM's java.io.tmpdir (where
    snappy and lz4 unpack native libraries), Python's tempfile, and no
    hsperfdata file in /tmp (-XX:-UsePerfData), for the driver and Spark's launcher.
    """
    tmp = data_dir / TMP_DIR
    tmp.mkdir(parents=True, exist_ok=True)
    jvm = f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"
    return {
        "TMPDIR": str(tmp),
        "SPARK_LOCAL_DIRS": str(tmp),
        "SPARK_LAUNCHER_OPTS": f"{os.environ.get('SPARK_LAUNCHER_OPTS', '')} {jvm}".strip(),
        SPARK_JAVA_OPTIONS_ENV: f"{os.environ.get(SPARK_JAVA_OPTIONS_ENV, FAST_START_JAVA_OPTIONS)} {jvm}",
    }


def group_members(pgid: int) -> list[int]:
    """Pids whose process group is ``pgid`` (from /proc; zombies excluded)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def is_service_process(pid: int, module: str) -> bool:
    """A process this service started: the service module itself, or PySpark's JVM and workers."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return module in command or "pyspark" in command


def end_group(pgid: int, module: str, grace: float = 10.0) -> list[int]:
    """SIGTERM, then after ``grace`` SIGKILL, every process of group ``pgid`` that this service started;
    returns once they are gone (their ports closed: the service's Spark Connect server with its JVM)."""
    ours = [pid for pid in group_members(pgid) if is_service_process(pid, module)]
    for pid in ours:
        _signal(pid, signal.SIGTERM)
    _wait_gone(pgid, ours, grace)
    for pid in group_members(pgid):
        if pid in ours:
            _signal(pid, signal.SIGKILL)
    _wait_gone(pgid, ours, grace)
    return ours


def _wait_gone(pgid: int, pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid in group_members(pgid) for pid in pids):
        time.sleep(0.1)


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ", 1)[-1].startswith("Z"))


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
