"""The local service's Spark, offered to other processes through Spark Connect: where it listens and
the token it wants.

The service starts a Connect server inside its own Spark (127.0.0.1 only) and, once it listens,
writes `spark_connect.json` in its data folder (mode 0600: it holds the token); it removes the file
when it stops. A check in another process (a Dagster run worker, `shift-left-dagster check`) reads
the file and runs on that Spark instead of starting a JVM of its own. No Spark here: the checks'
session choice and `local status` import it.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from pathlib import Path

from pydantic import BaseModel, SecretStr, ValidationError

from shift_left_dagster.local.lifetime import alive
from shift_left_dagster.local.settings import HOST

OFFER_FILE = "spark_connect.json"
# Read by the JVM when its Connect server starts (Spark's CONNECT_AUTHENTICATE_TOKEN_ENV): set in the
# service's environment before Spark starts, so the token is never in Spark's configuration.
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
DEFAULT_CONNECT_PORT = 15002  # Spark Connect's own default


class ConnectOffer(BaseModel):
    """A running service's Connect server: its process, its port, its token."""

    pid: int
    port: int
    token: SecretStr

    def url(self) -> str:
        """sc:// URL with the token. `localhost`, not 127.0.0.1: pyspark sends a token without TLS only
        to localhost (gRPC local credentials); the server listens on 127.0.0.1."""
        return f"sc://localhost:{self.port}/;token={self.token.get_secret_value()}"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_offer(data_dir: Path, offer: ConnectOffer) -> None:
    """Written whole (a reader never sees half a file), readable by this user only."""
    temporary = data_dir / f".{OFFER_FILE}.tmp"
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(json.dumps({"pid": offer.pid, "port": offer.port, "token": offer.token.get_secret_value()}))
    temporary.replace(data_dir / OFFER_FILE)


def withdraw_offer(data_dir: Path, wait_seconds: float = 15.0) -> None:
    """Remove the offer, then wait (bounded) until its port is closed: the JVM's sockets outlive the
    service process by a moment, and a caller of `local stop` expects the server gone when it returns."""
    try:
        port: int | None = ConnectOffer.model_validate_json((data_dir / OFFER_FILE).read_text()).port
    except (OSError, ValidationError):
        port = None
    (data_dir / OFFER_FILE).unlink(missing_ok=True)
    deadline = time.monotonic() + wait_seconds
    while port is not None and _listening(port) and time.monotonic() < deadline:
        time.sleep(0.1)


def read_offer(data_dir: str | Path) -> ConnectOffer | None:
    """The offer of the service of `data_dir` if that service is alive and its server listens; None
    otherwise (no service, no Connect server, a crashed service's file)."""
    try:
        offer = ConnectOffer.model_validate_json((Path(data_dir) / OFFER_FILE).read_text())
    except (OSError, ValidationError):
        return None
    return offer if alive(offer.pid) and _listening(offer.port) else None


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0
