"""Running the service: in a thread of this process (tests), or as a detached background process
with a pid file and a state file in its data dir (`shift-left-dagster local start|status|stop`).

A service belongs to one data folder: a URL is adopted only when its health
endpoint reports this folder (and, for a started one, the recorded pid).
The detached service leads its own process group, and its Spark JVM dies
with it (lifetime.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import uvicorn
from pydantic import BaseModel, SecretStr
from pyspark.sql import SparkSession

from shift_left_dagster.local.compaction import CompactionPolicy
from shift_left_dagster.local.connect_offer import (
    DEFAULT_CONNECT_PORT,
    TOKEN_ENV,
    ConnectOffer,
    new_token,
    withdraw_offer,
    write_offer,
)
from shift_left_dagster.local.engine import Engine
from shift_left_dagster.local.health import OtherFolderService, ServiceError, port_is_free, probe
from shift_left_dagster.local.lifetime import TMP_DIR, alive, confine_to, end_group, spark_dies_with_this_process
from shift_left_dagster.local.server import create_app
from shift_left_dagster.local.settings import DEFAULT_PORT, HOST, IDENTITY, credentials, resolve_data_dir
from shift_left_dagster.local.spark import get_spark, start_connect_server, stop_connect_server

PID_FILE, STATE_FILE, LOG_FILE = "service.pid", "service.json", "service.log"
MODULE = "shift_left_dagster.local.process"


__all__ = ["InProcessService", "LocalServiceInfo", "OtherFolderService", "ServiceError", "ensure_running",
           "start", "status", "stop"]

logger = logging.getLogger(__name__)


class LocalServiceInfo(BaseModel):
    """How to reach a local service: what the Dagster resource and `local status --json` use."""

    url: str
    port: int
    pid: int
    organization_id: str = IDENTITY.organization_id
    environment_id: str = IDENTITY.environment_id
    cluster_id: str = IDENTITY.cluster_id
    compute_pool_id: str = IDENTITY.compute_pool_id
    data_dir: str
    spark_connect_port: int | None = None  # the service's Spark offered through Spark Connect (connect_offer.py)
    running: bool = False


class InProcessService:
    """The service on a thread of this process, over a SparkSession it is given (tests share one)."""

    def __init__(self, data_dir: Path, *, port: int = 0, spark_factory: Callable[[], SparkSession] = get_spark,
                 tick_seconds: float = 1.0, compaction: CompactionPolicy = CompactionPolicy()) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.engine = Engine(data_dir, spark_factory=spark_factory, tick_seconds=tick_seconds, compaction=compaction)
        key, secret = credentials()
        config = uvicorn.Config(create_app(self.engine, key, secret), host=HOST, port=self.port,
                                log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="shift-left-local-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def info(self) -> LocalServiceInfo:
        return LocalServiceInfo(url=self.url, port=self.port, pid=os.getpid(), data_dir=str(self.data_dir),
                                running=True)

    def start(self, timeout: float = 30.0) -> InProcessService:
        self.engine.start()
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise ServiceError(f"the in-process service did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self.engine.stop()

    def __enter__(self) -> InProcessService:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


# --- the background process ---------------------------------------------------------------------


def start(data_dir: str | Path | None = None, port: int | None = None, timeout: float = 120.0) -> LocalServiceInfo:
    """Start this folder's service detached (idempotent: a running one is returned as is) and wait until it answers.

    ``port``: None = the recorded port (else the default), or a free one when
    another program holds it; 0 = a free port; N = exactly N, and an error
    (naming both folders) when another folder's service holds it. The port
    chosen is recorded in the state file.
    """
    root = resolve_data_dir(data_dir)
    current = status(root)
    if current.running:
        return current
    root.mkdir(parents=True, exist_ok=True)
    _end_leftovers(root)  # a crashed service's JVM, should one have survived it
    chosen = _choose_port(root, current, port)
    connect_port = _choose_connect_port(root, current, chosen)
    with open(root / LOG_FILE, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", MODULE, "--data-dir", str(root), "--port", str(chosen),
             "--spark-connect-port", str(connect_port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=root, start_new_session=True,
        )
    info = LocalServiceInfo(url=f"http://{HOST}:{chosen}", port=chosen, pid=child.pid, data_dir=str(root),
                            spark_connect_port=connect_port)
    (root / PID_FILE).write_text(f"{child.pid}\n")
    (root / STATE_FILE).write_text(info.model_dump_json(indent=1, exclude={"running"}))
    deadline = time.monotonic() + timeout
    while not _is_ours(info.url, root, child.pid):
        if child.poll() is not None:
            raise ServiceError(f"the local service exited with code {child.returncode} while starting; "
                               f"see {root / LOG_FILE}:\n{_tail(root / LOG_FILE)}")
        if time.monotonic() > deadline:
            raise ServiceError(f"the local service did not answer on {info.url} within {timeout:.0f} s; "
                               f"see {root / LOG_FILE}")
        time.sleep(0.1)
    return info.model_copy(update={"running": True})


def status(data_dir: str | Path | None = None) -> LocalServiceInfo:
    """The recorded service, and whether it is running: our process, answering for this folder with its pid."""
    root = resolve_data_dir(data_dir)
    state = root / STATE_FILE
    if not state.exists():
        return LocalServiceInfo(url=f"http://{HOST}:{DEFAULT_PORT}", port=DEFAULT_PORT, pid=0, data_dir=str(root))
    info = LocalServiceInfo.model_validate_json(state.read_text())
    pid = _owned_pid(root)
    running = pid is not None and _is_ours(info.url, root, pid)
    return info.model_copy(update={"running": running})


def stop(data_dir: str | Path | None = None, timeout: float = 30.0) -> bool:
    """Stop our service (only a pid that is really ours) and what is left of its process group.

    False when no service was running (a crashed one's leftovers are still ended).
    """
    root = resolve_data_dir(data_dir)
    pid = _owned_pid(root)
    if pid is None:
        _end_leftovers(root)
        (root / PID_FILE).unlink(missing_ok=True)
        withdraw_offer(root)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
    end_group(pid, MODULE)  # the service led its group: its JVM and workers are in it
    (root / PID_FILE).unlink(missing_ok=True)
    withdraw_offer(root)  # its Spark Connect server ended with its JVM (uvicorn ends the process on SIGTERM)
    return True


def ensure_running(data_dir: str | Path | None = None) -> LocalServiceInfo:
    """The library entry point (the Dagster resource): start the service if needed, return how to reach it."""
    return start(data_dir)


def _choose_port(root: Path, current: LocalServiceInfo, port: int | None) -> int:
    """The port to start on (see ``start``); never one where another folder's service answers."""
    if port == 0:
        return free_port()
    explicit = port is not None
    wanted = port if port is not None else (current.port if (root / STATE_FILE).exists() else DEFAULT_PORT)
    url = f"http://{HOST}:{wanted}"
    health = probe(url)
    if health is not None and not health.serves(root):
        if explicit:
            raise OtherFolderService(url, root, health.data_dir, health.pid)
        logger.warning("%s is data folder %s's service; starting %s's on a free port", url, health.data_dir, root)
        return free_port()
    if health is not None:
        raise ServiceError(f"a service of data folder {root} that `local start` did not start (pid {health.pid}) "
                           f"answers at {url}; stop it first")
    if not port_is_free(HOST, wanted):
        if explicit:
            raise ServiceError(f"port {wanted} on {HOST} is in use by another program (not a local service)")
        return free_port()
    return wanted


def _choose_connect_port(root: Path, current: LocalServiceInfo, service_port: int) -> int:
    """The Spark Connect server's port, chosen as the service's own: the recorded one, else Spark
    Connect's default, else (taken) a free one."""
    recorded = current.spark_connect_port if (root / STATE_FILE).exists() else None
    for wanted in (recorded, DEFAULT_CONNECT_PORT):
        if wanted and wanted != service_port and port_is_free(HOST, wanted):
            return wanted
    return free_port()


def _end_leftovers(root: Path) -> None:
    """End what survives of the recorded service's process group once the service itself is gone."""
    try:
        recorded = LocalServiceInfo.model_validate_json((root / STATE_FILE).read_text()).pid
    except (OSError, ValueError):
        return
    if recorded > 0 and not alive(recorded):
        ended = end_group(recorded, MODULE)
        if ended:
            logger.warning("ended %d process(es) left by the crashed service of %s: %s", len(ended), root, ended)


def _owned_pid(root: Path) -> int | None:
    """The pid file's pid if it is alive and is this data dir's service (state file and command line agree)."""
    try:
        pid = int((root / PID_FILE).read_text().strip())
        recorded = LocalServiceInfo.model_validate_json((root / STATE_FILE).read_text()).pid
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    args = [part.decode(errors="replace") for part in command]
    ours = pid == recorded and MODULE in args and str(root) in args
    return pid if ours and alive(pid) else None


def _is_ours(url: str, root: Path, pid: int) -> bool:
    """The service at ``url`` answers for ``root`` with ``pid``."""
    health = probe(url)
    return health is not None and health.serves(root) and health.pid == pid


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> None:
    """The detached process: engine + HTTP server until SIGTERM; scratch files under the data folder."""
    parser = argparse.ArgumentParser(prog=MODULE)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--spark-connect-port", type=int, default=None, help="offer Spark through Spark Connect")
    args = parser.parse_args(argv)
    root = resolve_data_dir(args.data_dir)
    shutil.rmtree(root / TMP_DIR, ignore_errors=True)  # a previous run's scratch (a crash leaves some)
    withdraw_offer(root)  # a crashed service's
    os.environ.update(confine_to(root))
    os.environ[TOKEN_ENV] = new_token()  # before Spark starts: its JVM reads it (connect_offer.py)
    tempfile.tempdir = None  # read TMPDIR again
    spark_dies_with_this_process()
    engine = Engine(root)
    engine.start()
    offer = SparkConnectOffer(engine, root, args.spark_connect_port) if args.spark_connect_port else None
    if offer is not None:
        offer.start()
    key, secret = credentials()
    try:
        uvicorn.run(create_app(engine, key, secret), host=HOST, port=args.port, log_level="warning", lifespan="off")
    finally:
        if offer is not None:
            offer.withdraw()
        engine.stop()


class SparkConnectOffer:
    """The service's Spark served through Spark Connect on `port` once the engine's Spark is up, and
    said so in the data folder (connect_offer.py); withdrawn, then stopped, when the service stops.
    Not offered (checks start a Spark of their own) when the server can not start."""

    def __init__(self, engine: Engine, root: Path, port: int) -> None:
        self.engine, self.root, self.port = engine, root, port
        self._lock = threading.Lock()
        self._serving: SparkSession | None = None
        self._withdrawn = False

    def start(self) -> None:
        threading.Thread(target=self._serve, name="shift-left-spark-connect", daemon=True).start()

    def _serve(self) -> None:
        while not self.engine.ready:
            time.sleep(0.1)
        with self._lock:
            if self.engine.startup_error is not None or self._withdrawn:
                return
            spark = get_spark()  # the engine's, started
            try:
                listening = start_connect_server(spark, HOST, self.port)
            except Exception as error:  # a port taken meanwhile, a JVM without the Connect jar
                logger.warning("Spark Connect not offered on %s:%d: %s", HOST, self.port, str(error).splitlines()[0])
                return
            self._serving = spark
            token = SecretStr(os.environ[TOKEN_ENV])
            write_offer(self.root, ConnectOffer(pid=os.getpid(), port=listening, token=token))
        logger.info("Spark Connect offered on %s:%d", HOST, listening)

    def withdraw(self) -> None:
        """No client is sent to a server going away; then the server stops (Spark keeps running)."""
        with self._lock:
            self._withdrawn = True
            withdraw_offer(self.root)
            if self._serving is not None:
                stop_connect_server(self._serving)
                self._serving = None


if __name__ == "__main__":
    main()
