"""The TLS proxy shift_left reaches the local service through (no Spark: a small HTTP server stands in).

`requests` goes through HTTPS_PROXY as shift_left's does: a named host is
answered over TLS with a certificate from the throw-away CA (made by
`cryptography` and, as a fallback, by the `openssl` command), the request
reaches the target with its path, body and auth, marked https; another
host is refused; a client that does not trust the CA fails.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from shift_left_dagster.local import throwaway_ca
from shift_left_dagster.local.tls_proxy import TlsProxy

HOST = "flink.us-east-1.aws.confluent.cloud"


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it received."""

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps({"path": self.path, "body": body.decode(), "host": self.headers["Host"],
                             "proto": self.headers["X-Forwarded-Proto"], "auth": self.headers["Authorization"]})
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def target() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(params=["cryptography", "openssl"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "openssl":
        if shutil.which("openssl") is None:
            pytest.skip("no openssl command")
        monkeypatch.setattr(throwaway_ca, "_with_cryptography", throwaway_ca._with_openssl)
    return str(request.param)


def test_a_named_host_reaches_the_target_over_tls(target: str, backend: str, tmp_path: Path) -> None:
    with TlsProxy(target, [HOST, "api.confluent.cloud"], tmp_path) as proxy:
        proxies = {"https": proxy.url}
        answer = requests.post(f"https://{HOST}/sql/v1/statements?page_size=2", json={"a": 1}, auth=("k", "s"),
                               proxies=proxies, verify=str(proxy.certificates.ca), timeout=10)
        assert answer.status_code == 201
        echoed = answer.json()
        assert echoed["path"] == "/sql/v1/statements?page_size=2" and json.loads(echoed["body"]) == {"a": 1}
        assert (echoed["host"], echoed["proto"]) == (HOST, "https") and echoed["auth"].startswith("Basic ")
        assert [(s.method, s.host, s.status) for s in proxy.seen] == [("POST", HOST, 201)]

        with pytest.raises(requests.exceptions.ProxyError):  # not a Confluent host the config names
            requests.get("https://example.com/", proxies=proxies, verify=str(proxy.certificates.ca), timeout=10)
        with pytest.raises(requests.exceptions.SSLError):  # the system's CAs do not know the throw-away one
            requests.get(f"https://{HOST}/", proxies=proxies, verify=True, timeout=10)
