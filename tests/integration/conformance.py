"""Plain HTTP helpers for the conformance suite: what any Confluent client does, with `requests` only.

The suite never uses our own client, so it checks the wire, not our reading of it.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import requests

from shift_left_dagster.local.api import statements_path
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET

AUTH = (LOCAL_API_KEY, LOCAL_API_SECRET)
TERMINAL = {"COMPLETED", "FAILED", "STOPPED"}
_names = itertools.count()


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.statements = base + statements_path()

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        url = path if path.startswith("http") else self.base + path
        return requests.request(method, url, auth=AUTH, timeout=60, **kwargs)

    def create(self, sql: str, name: str | None = None, properties: dict[str, str] | None = None,
               **spec: Any) -> str:
        name = name or f"conf-{next(_names)}-{int(time.time() * 1000) % 100000}"
        body = {"name": name, "spec": {"statement": sql, "properties": properties or {}, **spec}}
        response = requests.post(self.statements, json=body, auth=AUTH, timeout=60)
        assert response.status_code == 201, response.text
        return name

    def statement(self, name: str) -> dict[str, Any]:
        response = requests.get(f"{self.statements}/{name}", auth=AUTH, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def wait(self, name: str, phases: set[str] | None = None, timeout: float = 120.0) -> dict[str, Any]:
        wanted = phases or TERMINAL
        deadline = time.monotonic() + timeout
        while True:
            body = self.statement(name)
            if body["status"]["phase"] in wanted:
                return body
            assert time.monotonic() < deadline, f"{name} stayed {body['status']['phase']}"
            time.sleep(0.1)

    def run(self, sql: str, properties: dict[str, str] | None = None, phases: set[str] | None = None,
            **spec: Any) -> dict[str, Any]:
        return self.wait(self.create(sql, properties=properties, **spec), phases)

    def rows(self, name: str) -> list[list[Any]]:
        """Every row of a completed statement's results, following metadata.next."""
        url: str | None = f"{self.statements}/{name}/results"
        rows: list[list[Any]] = []
        while url:
            page = requests.get(url, auth=AUTH, timeout=60)
            assert page.status_code == 200, page.text
            body = page.json()
            rows += [r["row"] for r in body["results"]["data"]]
            url = body["metadata"]["next"] or None
        return rows

    def query(self, sql: str, properties: dict[str, str] | None = None) -> tuple[list[str], list[list[Any]]]:
        """(column names, rows) of a statement that must complete (a SELECT runs as a snapshot query)."""
        body = self.run(sql, {"sql.snapshot.mode": "now", **(properties or {})})
        assert body["status"]["phase"] == "COMPLETED", body["status"]
        columns = [c["name"] for c in body["status"]["traits"]["schema"]["columns"]]
        return columns, self.rows(body["name"])

    def failure(self, sql: str, properties: dict[str, str] | None = None) -> str:
        """The detail of a statement that must fail."""
        body = self.run(sql, properties)
        assert body["status"]["phase"] == "FAILED", body["status"]
        return body["status"]["detail"]


def error_item(response: requests.Response, status: int) -> dict[str, Any]:
    """The one item of a Cloud-API `errors[]` body, checked against the reference's shape (§2.10)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    item = response.json()["errors"][0]
    assert item["status"] == str(status) and item["detail"]
    return item


def kafka_error(response: requests.Response, status: int, code: int) -> str:
    """The `{error_code, message}` body of Kafka REST and Schema Registry (§4)."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error_code"] == code, body
    return body["message"]
