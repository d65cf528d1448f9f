"""A fault-injecting HTTP proxy on 127.0.0.1, in a thread, in front of a real service.

Tests arm faults (``proxy.arm(Fault(...))``): each matches a method and a path
pattern, fires ``times`` times, and decides whether the request reaches the
service first (``landed``): a fault after the service answered is the
ambiguous case a client must not turn into a duplicate. Kinds:

- ``status``: answer ``status`` (429 with ``Retry-After``, 502, 503, 504, ...);
- ``drop``: close the connection without a response;
- ``slow``: hold the response ``delay`` seconds (beyond the client's read timeout).

A slow fault that does not land holds the *request* and forwards it late:
the delayed duplicate arrives after the client's retry. ``chaos`` adds a
seeded random fault to requests no armed fault matches.
"""

from __future__ import annotations

import dataclasses
import http.client
import random
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import urlsplit

Kind = Literal["status", "drop", "slow"]
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


@dataclass
class Fault:
    """One armed fault: what it matches, what it does, how often."""

    method: str
    path: str  # a regex searched in the request path
    kind: Kind
    status: int = 503
    retry_after: float | None = None
    delay: float = 0.0
    landed: bool = False  # forward to the service before the fault
    times: int = 1
    fired: int = field(default=0, init=False)

    def matches(self, method: str, path: str) -> bool:
        return self.fired < self.times and method == self.method and re.search(self.path, path) is not None


@dataclass(frozen=True)
class Seen:
    """One request as the proxy handled it: the fault applied (or None) and whether it reached the service."""

    method: str
    path: str
    fault: str | None
    forwarded: bool


class FaultProxy:
    """The proxy server and its armed faults; a context manager."""

    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._chaos: tuple[random.Random, float, list[Fault]] | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def arm(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.seen.clear()
            self._chaos = None

    def chaos(self, seed: int, rate: float, kinds: list[Fault]) -> None:
        """From now on, each unmatched request gets one of ``kinds`` (method and path ignored) with chance ``rate``."""
        with self._lock:
            self._chaos = (random.Random(seed), rate, kinds)

    def fired(self) -> list[str]:
        """The faults applied so far, in order, as ``METHOD kind`` strings."""
        with self._lock:
            return [f"{s.method} {s.fault}" for s in self.seen if s.fault]

    def unfired(self) -> list[Fault]:
        with self._lock:
            return [f for f in self.faults if f.fired < f.times]

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until no request is held or forwarded (a delayed duplicate has reached the service)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._in_flight == 0:
                    return
            time.sleep(0.05)
        raise TimeoutError(f"the fault proxy still had {self._in_flight} request(s) in flight after {timeout} s")

    # --- handling -------------------------------------------------------------------------------

    def _take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            self._in_flight += 1
            fault = next((f for f in self.faults if f.matches(method, path)), None)
            if fault is not None:
                fault.fired += 1
            elif self._chaos is not None:
                rng, rate, kinds = self._chaos
                if rng.random() < rate:
                    fault = dataclasses.replace(rng.choice(kinds), method=method, path=path)
            return fault

    def _done(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)
            self._in_flight -= 1

    def _forward(self, method: str, path: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.upstream, timeout=120)
        try:
            connection.request(method, path, body=body or None, headers=dict(headers))
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: a drop never hits a pooled request

            def _handle(self) -> None:
                method, path = self.command, self.path
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP]
                fault = proxy._take(method, path)
                forwarded = False
                try:
                    if fault is not None and fault.kind == "slow" and not fault.landed:
                        time.sleep(fault.delay)  # the request itself arrives late
                    answer = None
                    if fault is None or fault.landed or fault.kind == "slow":
                        answer = proxy._forward(method, path, headers, body)
                        forwarded = True
                    if fault is not None and fault.kind == "slow" and fault.landed:
                        time.sleep(fault.delay)
                    if fault is not None and fault.kind == "drop":
                        self._drop()
                    elif fault is not None and fault.kind == "status":
                        self._status(fault)
                    elif answer is not None:
                        self._relay(*answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): what a slow fault is for
                finally:
                    label = None if fault is None else (
                        f"{fault.kind}{fault.status if fault.kind == 'status' else ''}"
                        f"{' after landing' if fault.landed else ''}")
                    proxy._done(Seen(method, path, label, forwarded))

            def _drop(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def _status(self, fault: Fault) -> None:
                payload = b'{"errors":[{"status":"%d","detail":"injected by the fault proxy"}]}' % fault.status
                self.send_response(fault.status)
                if fault.retry_after is not None:
                    self.send_header("Retry-After", f"{fault.retry_after:g}")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _relay(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in _HOP_BY_HOP and key.lower() not in ("content-length", "date", "server"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
                pass

        return Handler
