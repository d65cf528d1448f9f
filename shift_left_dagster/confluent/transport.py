"""The HTTP session of the Confluent client: who gets the API key, and where redirects may carry it.

requests does the work as designed: credentials go on each request through
``auth=`` (so ``~/.netrc`` never replaces the configured key), and redirects
are followed by the session, whose ``should_strip_auth`` keeps the key only
for trusted hosts. The key's secret stays a ``SecretStr`` until a header is
built, so no repr of these objects can show it.
"""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

import requests
from pydantic import SecretStr
from requests.auth import AuthBase

USER_AGENT = "shift-left-dagster/0.1"
MAX_REDIRECTS = 5
CONFLUENT_DOMAIN = "confluent.cloud"


class ApiKeyAuth(AuthBase):
    """HTTP Basic with one API's key and secret, attached to each request of that API."""

    def __init__(self, key: str, secret: SecretStr) -> None:
        self.key = key
        self._secret = secret

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = basic_auth_header(self.key, self._secret)
        return request

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKeyAuth) and (self.key, self._secret) == (other.key, other._secret)

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"ApiKeyAuth(key={self.key!r}, secret=**********)"


class ConfluentSession(requests.Session):
    """A Session whose redirects keep the key only on trusted hosts, and never take one from ~/.netrc.

    requests would strip auth on any cross-host redirect, yet the Flink
    gateway may redirect to another Confluent host (the CLI re-attaches it);
    and on each redirect it would apply a ``~/.netrc`` entry of the new host.
    """

    def __init__(self) -> None:
        super().__init__()
        self.max_redirects = MAX_REDIRECTS
        self.headers["User-Agent"] = USER_AGENT
        self.headers["Accept"] = "application/json"

    def should_strip_auth(self, old_url: str, new_url: str) -> bool:
        return not is_trusted_redirect(old_url, new_url)

    def rebuild_auth(self, prepared_request: requests.PreparedRequest, response: requests.Response) -> None:
        """Strip Authorization where ``should_strip_auth`` says so; never add ~/.netrc credentials."""
        original = response.request.url or ""
        if "Authorization" in prepared_request.headers and self.should_strip_auth(original, prepared_request.url or ""):
            del prepared_request.headers["Authorization"]


def is_trusted_redirect(old_url: str, new_url: str) -> bool:
    """The same origin as the hop redirected from, or an https ``*.confluent.cloud`` host."""
    old, new = urlsplit(old_url), urlsplit(new_url)
    if (new.scheme, new.hostname, new.port) == (old.scheme, old.hostname, old.port):
        return True
    host = new.hostname or ""
    return new.scheme == "https" and (host == CONFLUENT_DOMAIN or host.endswith("." + CONFLUENT_DOMAIN))


def basic_auth_header(key: str, secret: SecretStr) -> str:
    raw = f"{key}:{secret.get_secret_value()}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")
