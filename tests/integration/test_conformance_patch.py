"""PATCH .../statements/{name} with JSON Patch (reference §2, §2.5): stop, resume from the saved offsets,
pool change on resume, resource_version, and the fields that can not change."""

from __future__ import annotations

import pytest

from tests.integration.conformance import Api, error_item
from tests.integration.support import quiesce

pytestmark = pytest.mark.service
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def patch(api: Api, name: str, operations: list[dict]) -> object:
    return api.call("PATCH", f"{api.statements}/{name}", json=operations, headers=JSON_PATCH)


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    api = Api(local_service.url)
    for sql in ("CREATE TABLE patch_src (id INT)", "CREATE TABLE patch_sink (id INT)",
                "INSERT INTO patch_src VALUES (1), (2), (3)"):
        assert api.run(sql)["status"]["phase"] == "COMPLETED"
    return api


def test_stop_and_resume_lose_and_duplicate_nothing(api: Api, local_service) -> None:  # type: ignore[no-untyped-def]
    name = api.create("INSERT INTO patch_sink SELECT id FROM patch_src")
    api.wait(name, {"RUNNING"})
    quiesce(local_service.url)

    stopped = patch(api, name, [{"op": "replace", "path": "/spec/stopped", "value": True}])
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["spec"]["stopped"] is True and stopped.json()["name"] == name
    body = api.wait(name, {"STOPPED"})
    # latest_offsets: topic -> "partition:P,offset:O;..." once stopped (§2.5)
    offsets = body["status"]["latest_offsets"]["patch_src"]
    assert all(part.startswith("partition:") and ",offset:" in part for part in offsets.split(";"))

    api.run("INSERT INTO patch_src VALUES (4), (5)")
    quiesce(local_service.url)
    assert api.statement(name)["status"]["phase"] == "STOPPED"
    assert sorted(api.query("SELECT id FROM patch_sink")[1]) == [["1"], ["2"], ["3"]]  # it really stopped

    resumed = patch(api, name, [{"op": "REPLACE", "path": "/spec/stopped", "value": False}])  # spec spells ops upper
    assert resumed.status_code == 200, resumed.text
    api.wait(name, {"RUNNING"})
    quiesce(local_service.url)
    assert sorted(api.query("SELECT id FROM patch_sink")[1]) == [["1"], ["2"], ["3"], ["4"], ["5"]]
    api.call("DELETE", f"{api.statements}/{name}")


def test_resource_version_is_honoured(api: Api) -> None:
    name = api.create("SELECT 1", stopped=True)
    current = api.wait(name, {"STOPPED"})
    version = current["metadata"]["resource_version"]
    stale = patch(api, name, [{"op": "test", "path": "/metadata/resource_version", "value": "0"},
                              {"op": "add", "path": "/metadata/labels/team", "value": "a"}])
    assert error_item(stale, 409)["source"]["pointer"] == "/metadata/resource_version"
    fresh = patch(api, name, [{"op": "test", "path": "/metadata/resource_version", "value": version},
                              {"op": "add", "path": "/metadata/labels/team", "value": "a"}])
    assert fresh.status_code == 200 and fresh.json()["metadata"]["labels"]["team"] == "a"
    assert int(fresh.json()["metadata"]["resource_version"]) > int(version)
    # a PUT with the version read before the PATCH is now stale too
    assert api.call("PUT", f"{api.statements}/{name}", json=current).status_code == 409


def test_pool_changes_only_on_resume(api: Api) -> None:
    pool = api.call("POST", "/fcpm/v2/compute-pools", json={"spec": {
        "display_name": "patch-pool", "cloud": "AWS", "region": "us-east-1", "max_cfu": 5,
        "environment": {"id": api.statement(api.create("SELECT 1", stopped=True))["environment_id"]}}}).json()["id"]
    name = api.create("SELECT 1", stopped=True)
    api.wait(name, {"STOPPED"})
    moved = patch(api, name, [{"op": "replace", "path": "/spec/compute_pool_id", "value": pool}])
    assert "resum" in error_item(moved, 400)["detail"]
    resumed = patch(api, name, [{"op": "replace", "path": "/spec/compute_pool_id", "value": pool},
                                {"op": "replace", "path": "/spec/stopped", "value": False}])
    assert resumed.status_code == 200 and resumed.json()["spec"]["compute_pool_id"] == pool
    unknown = api.create("SELECT 1", stopped=True)
    api.wait(unknown, {"STOPPED"})
    missing = patch(api, unknown, [{"op": "replace", "path": "/spec/compute_pool_id", "value": "lfcp-nope"},
                                   {"op": "replace", "path": "/spec/stopped", "value": False}])
    assert "lfcp-nope" in error_item(missing, 400)["detail"]


@pytest.mark.parametrize(("operations", "status", "pointer"), [
    ([{"op": "replace", "path": "/spec/statement", "value": "SELECT 2"}], 400, "/spec/statement"),
    ([{"op": "replace", "path": "/name", "value": "other"}], 400, "/name"),
    ([{"op": "replace", "path": "/status/phase", "value": "RUNNING"}], 400, "/status/phase"),
    ([{"op": "replace", "path": "/spec/stopped", "value": "yes"}], 422, "/spec/stopped"),
    ([{"op": "move", "from": "/spec/principal", "path": "/spec/compute_pool_id"}], 400, "/spec/compute_pool_id"),
    ([{"op": "test", "path": "/spec/stopped", "value": False}], 422, "/spec/stopped"),
])
def test_refused_patches(api: Api, operations: list[dict], status: int, pointer: str) -> None:
    name = api.create("SELECT 1", stopped=True)
    before = api.wait(name, {"STOPPED"})
    assert error_item(patch(api, name, operations), status)["source"]["pointer"] == pointer
    assert api.statement(name)["metadata"]["resource_version"] == before["metadata"]["resource_version"]


def test_malformed_and_missing(api: Api) -> None:
    error_item(patch(api, "no-such-statement", [{"op": "replace", "path": "/spec/stopped", "value": True}]), 404)
    name = api.create("SELECT 1", stopped=True)
    api.wait(name, {"STOPPED"})
    error_item(patch(api, name, {"op": "replace"}), 400)  # not an array
    error_item(patch(api, name, [{"path": "/spec/stopped"}]), 400)  # no op
