"""A throw-away PostgreSQL server for tests: initdb + pg_ctl in a temporary folder, on a free loopback port.

PostgreSQL refuses to run as root, so when the tests run as root (CI in a
fresh Debian container) every server command runs as the `postgres` user
the Debian package creates (else `nobody`), with root's groups dropped. The
server listens on 127.0.0.1 only, trusts local connections (nothing else can
reach it) and is stopped, then deleted, when the context ends.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
SUPERUSER = "sl_dagster"


def find_bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<newest>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return Path(versions[-1]).parent if versions else None


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _server_account() -> pwd.struct_passwd | None:
    """Who runs the server: None (this user) unless we are root, then `postgres`, else `nobody`."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists to run PostgreSQL")


@dataclass(frozen=True)
class PostgresServer:
    """A running server: where to connect, as whom, and the database made for the test."""

    port: int
    database: str
    root: Path
    bin_dir: Path
    host: str = HOST
    user: str = SUPERUSER

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    def dagster_storage_yaml(self) -> str:
        """dagster.yaml's `storage:` block for this server (dagster-postgres)."""
        return ("storage:\n"
                "  postgres:\n"
                "    postgres_db:\n"
                f"      username: {self.user}\n"
                "      password: \"\"\n"
                f"      hostname: {self.host}\n"
                f"      db_name: {self.database}\n"
                f"      port: {self.port}\n")

    def psql(self, sql: str) -> str:
        """One SQL command through psql (unaligned, tuples only), its output stripped."""
        psql = str(self.bin_dir / "psql") if (self.bin_dir / "psql").exists() else shutil.which("psql") or "psql"
        done = subprocess.run([psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.host, "-p",
                               str(self.port), "-U", self.user, "-d", self.database, "-c", sql],
                              capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout.strip()


def _run(command: list[str], account: pwd.struct_passwd | None, timeout: float = 120.0) -> None:
    """A server command, as the server's account; its output in the error when it fails."""
    as_user: dict[str, Any] = {}
    if account is not None:
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "LC_ALL": "C", "LANG": "C"}, cwd="/", **as_user)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


@contextmanager
def throwaway_postgres(database: str = "dagster", bin_dir: Path | None = None) -> Iterator[PostgresServer]:
    """initdb, start on a free loopback port, create `database`; stop (immediate) and delete at exit.

    The folder is made with tempfile (not pytest's tmp_path, whose parents are private to the user
    running the tests) so the server's account can own it.
    """
    bin_dir = bin_dir or find_bin_dir()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    account = _server_account()
    root = Path(tempfile.mkdtemp(prefix="sl-postgres-"))
    data = root / "data"
    if account is not None:
        os.chown(root, account.pw_uid, account.pw_gid)
    port = free_port()
    started = False
    try:
        _run([str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
              "--no-sync", "--no-instructions"], account)
        options = f"-h {HOST} -p {port} -k {root} -c fsync=off -c full_page_writes=off -c max_connections=50"
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", options,
              "-w", "-t", "60", "start"], account)
        started = True
        server = PostgresServer(port=port, database=database, root=root, bin_dir=bin_dir)
        PostgresServer(port=port, database="postgres", root=root, bin_dir=bin_dir).psql(
            f'CREATE DATABASE "{database}"')
        yield server
    finally:
        if started:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], account)
        shutil.rmtree(root, ignore_errors=True)
