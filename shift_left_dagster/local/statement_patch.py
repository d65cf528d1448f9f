"""JSON Patch (RFC 6902) on a statement: the fields Confluent lets a client change, nothing else.

PATCH takes an array of operations (Confluent's spec spells `op` upper-case,
clients send lower-case; both are accepted). Writable paths are the ones PUT
may change: `/spec/stopped`, `/spec/compute_pool_id`, `/spec/principal` and
the labels. `test` may check any path, `/metadata/resource_version` included,
which is how a PATCH honours the version it was computed from.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

WRITABLE = ("/spec/stopped", "/spec/compute_pool_id", "/spec/principal", "/metadata/labels")
OPS = ("add", "replace", "remove", "test", "move", "copy")


class PatchOp(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    op: str
    path: str
    value: Any = None
    from_: str | None = Field(default=None, alias="from")


class PatchError(ValueError):
    """A patch the statement refuses: HTTP status, Confluent error code, the pointer it is about."""

    def __init__(self, status: int, code: str, detail: str, pointer: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.pointer = status, code, detail, pointer


def apply_patch(resource: dict[str, Any], operations: list[PatchOp]) -> dict[str, Any]:
    """The resource after the operations (the input is left alone); PatchError on the first refused one."""
    document = copy.deepcopy(resource)
    for operation in operations:
        op = operation.op.lower()
        if op not in OPS:
            raise PatchError(400, "bad_request", f"unknown JSON Patch operation '{operation.op}'", operation.path)
        parts = _pointer(operation.path)
        if op == "test":
            found = _get(document, parts, operation.path)
            if found != operation.value:
                if operation.path == "/metadata/resource_version":
                    raise PatchError(409, "conflict", f"The statement was modified since it was read "
                                                      f"(resource_version {operation.value} is stale, current is "
                                                      f"{found}): read it again and retry", operation.path)
                raise PatchError(422, "unprocessable_entity", f"test failed: {operation.path} is {found!r}, "
                                                              f"not {operation.value!r}", operation.path)
            continue
        if op in ("move", "copy"):
            raise PatchError(400, "bad_request", f"'{op}' is not supported on a statement: use replace",
                             operation.path)
        if not any(operation.path == w or operation.path.startswith("/metadata/labels/") for w in WRITABLE):
            raise PatchError(400, "bad_request", f"{operation.path} can not be changed; writable fields are "
                                                 f"{', '.join(WRITABLE)}", operation.path)
        _check_value(operation.path, op, operation.value)
        parent = _get(document, parts[:-1], operation.path)
        if not isinstance(parent, dict):
            raise PatchError(422, "unprocessable_entity", f"{operation.path} has no parent object", operation.path)
        if op == "remove":
            if parts[-1] not in parent:
                raise PatchError(422, "unprocessable_entity", f"{operation.path} does not exist", operation.path)
            if operation.path == "/spec/stopped":
                raise PatchError(400, "bad_request", "/spec/stopped can not be removed", operation.path)
            del parent[parts[-1]]
        elif op == "replace" and parts[-1] not in parent and parts[:2] != ["metadata", "labels"]:
            raise PatchError(422, "unprocessable_entity", f"{operation.path} does not exist", operation.path)
        else:
            parent[parts[-1]] = operation.value
    return document


def _check_value(path: str, op: str, value: Any) -> None:
    if op == "remove":
        return
    if path == "/spec/stopped" and not isinstance(value, bool):
        raise PatchError(422, "unprocessable_entity", "/spec/stopped must be a boolean", path)
    if path in ("/spec/compute_pool_id", "/spec/principal") and not (isinstance(value, str) and value):
        raise PatchError(422, "unprocessable_entity", f"{path} must be a non-empty string", path)
    if path == "/metadata/labels" and not (isinstance(value, dict) and
                                           all(isinstance(v, str) for v in value.values())):
        raise PatchError(422, "unprocessable_entity", "/metadata/labels must map strings to strings", path)
    if path.startswith("/metadata/labels/") and not isinstance(value, str):
        raise PatchError(422, "unprocessable_entity", f"{path} must be a string", path)


def _pointer(path: str) -> list[str]:
    """RFC 6901: '/a/b~1c' -> ['a', 'b/c']."""
    if not path.startswith("/"):
        raise PatchError(400, "bad_request", f"'{path}' is not a JSON pointer", path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _get(document: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if not isinstance(document, dict) or part not in document:
            raise PatchError(422, "unprocessable_entity", f"{path} does not exist", path)
        document = document[part]
    return document
