"""An HTTPS proxy on 127.0.0.1 that answers Confluent Cloud's host names with the local service.

Confluent's own tools (shift_left 0.1.52) call fixed hosts: api.confluent.cloud,
api.telemetry.confluent.cloud, flink.<region>.<provider>.confluent.cloud and
the Kafka REST host derived from `bootstrap.servers`. `requests` and `httpx`
honour HTTPS_PROXY, so no system file needs editing: this proxy answers
CONNECT for those hosts (and refuses every other), terminates TLS with a
certificate from a throw-away CA (throwaway_ca.py) and forwards each decrypted
request to the local service, marked `X-Forwarded-Proto: https` so the links
the service returns keep the https host the tool called.

    python -m shift_left_dagster.local.tls_proxy --config config.yaml --target http://127.0.0.1:8084
"""

from __future__ import annotations

import argparse
import http.client
import ssl
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from shift_left_dagster.local.throwaway_ca import CertificateFiles, make_certificates

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection",
               "proxy-authorization", "content-length"}


def hosts_for(config: Mapping[str, Any]) -> list[str]:
    """The hosts a shift_left config makes the tool call (ccloud_client.py and flink_sql_adapter.py of 0.1.52)."""
    cloud = config.get("confluent_cloud") or {}
    region = cloud.get("cloud_region") or cloud.get("region") or ""
    provider = cloud.get("cloud_provider") or cloud.get("provider") or "aws"
    hosts = ["api.confluent.cloud", "api.telemetry.confluent.cloud", f"flink.{region}.{provider}.confluent.cloud"]
    bootstrap = str((config.get("kafka") or {}).get("bootstrap.servers") or "").split(":")[0]
    if bootstrap.startswith(("lkc-", "pkc-")) and "." in bootstrap:
        hosts.append(bootstrap)  # its Kafka REST host
        if bootstrap.startswith("lkc-") and bootstrap.count("-") >= 3:
            hosts.append("flink-" + bootstrap.split("-", 2)[2])  # the Flink host ccloud_client.py derives from it
    return list(dict.fromkeys(hosts))


@dataclass(frozen=True)
class Seen:
    """One forwarded request, as the proxy saw it: what a test counts (how many, any 5xx)."""

    method: str
    host: str
    path: str
    status: int


class TlsProxy:
    """The proxy on a thread of this process; `env` is what the tool's process needs."""

    def __init__(self, target: str, hosts: Iterable[str], folder: Path | None = None, port: int = 0) -> None:
        self.hosts = frozenset(hosts)
        self.folder = folder or Path(tempfile.mkdtemp(prefix="shift-left-tls-"))
        self.certificates: CertificateFiles = make_certificates(self.folder, sorted(self.hosts))
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(self.certificates.cert, self.certificates.key)
        split = urlsplit(target)
        self.target = (split.hostname or "127.0.0.1", split.port or 80)
        self.seen: list[Seen] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Connect)
        self._server.daemon_threads = True
        self._server.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="shift-left-tls-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def env(self) -> dict[str, str]:
        """Environment of a process whose requests/httpx calls go through this proxy and trust its CA."""
        ca = str(self.certificates.ca)
        return {"HTTPS_PROXY": self.url, "https_proxy": self.url, "REQUESTS_CA_BUNDLE": ca, "SSL_CERT_FILE": ca,
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}

    def start(self) -> TlsProxy:
        self._thread.start()
        return self

    def serve(self) -> None:
        """Serve on this thread until interrupted (the command line's way)."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> TlsProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Connect(BaseHTTPRequestHandler):
    """The proxy's side of a CONNECT: TLS for a known host, then each request inside it forwarded."""

    protocol_version = "HTTP/1.1"

    def do_CONNECT(self) -> None:  # noqa: N802 (http.server's naming)
        proxy: TlsProxy = self.server.proxy  # type: ignore[attr-defined]
        host = self.path.rpartition(":")[0]
        if host not in proxy.hosts:
            self.send_error(403, f"{host} is not served by the local service's TLS proxy")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        try:
            tls = proxy.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client gave up or distrusts the CA: nothing to forward
        _Forward(tls, self.client_address, self.server, host=host, proxy=proxy)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


class _Forward(BaseHTTPRequestHandler):
    """Requests arriving inside one TLS connection, each sent to the local service and answered."""

    protocol_version = "HTTP/1.1"

    def __init__(self, request: Any, client_address: Any, server: Any, *, host: str, proxy: TlsProxy) -> None:
        self.host, self.proxy = host, proxy
        super().__init__(request, client_address, server)

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"], headers["X-Forwarded-Proto"] = self.host, "https"
        connection = http.client.HTTPConnection(*self.proxy.target, timeout=600)
        try:
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except OSError as error:
            self.send_error(502, f"the local service at {self.proxy.target} did not answer: {error}")
            return
        finally:
            connection.close()
        self.proxy.seen.append(Seen(self.command, self.host, self.path, response.status))
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in _HOP_BY_HOP | {"date", "server"}:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the shift_left config.yaml the tool reads")
    parser.add_argument("--target", default="http://127.0.0.1:8084", help="the local service (local status --json)")
    parser.add_argument("--port", type=int, default=8443, help="the proxy's port on 127.0.0.1")
    parser.add_argument("--dir", type=Path, default=None, help="where the CA and certificate go (default: a temp dir)")
    args = parser.parse_args(argv)
    proxy = TlsProxy(args.target, hosts_for(yaml.safe_load(args.config.read_text())), args.dir, args.port)
    print("# in the shell that runs shift_left:")
    print("export " + " ".join(f"{k}={v}" for k, v in proxy.env.items() if k.isupper()))
    print(f"# serving {', '.join(sorted(proxy.hosts))} -> {args.target}; Ctrl-C stops", flush=True)
    proxy.serve()


if __name__ == "__main__":
    main()
