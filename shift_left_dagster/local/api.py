"""The HTTP boundary's shapes: request bodies (pydantic), resources and error bodies as Confluent
Cloud sends them."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from shift_left_dagster.local.limits import shorten
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.store import now


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")  # clients send read-only fields back (PUT): accept them


class MetadataIn(_Body):
    labels: dict[str, str] = Field(default_factory=dict)
    resource_version: str | None = None


class StatementSpecIn(_Body):
    statement: str = Field(min_length=1)
    properties: dict[str, str] = Field(default_factory=dict)
    compute_pool_id: str | None = None
    principal: str | None = None
    stopped: bool = False


class StatementIn(_Body):
    name: str
    metadata: MetadataIn = Field(default_factory=MetadataIn)
    spec: StatementSpecIn


class EnvironmentIn(_Body):
    id: str


class PoolSpecIn(_Body):
    display_name: str
    cloud: str
    region: str
    max_cfu: int
    environment: EnvironmentIn


class PoolIn(_Body):
    spec: PoolSpecIn


def new_statement(body: StatementIn, base_url: str) -> dict[str, Any]:
    """The resource a create stores: PENDING, resource_version "1", the default pool when none is given."""
    created = now()
    return {
        "api_version": "sql/v1",
        "kind": "Statement",
        "metadata": {
            "self": f"{base_url}{statements_path()}/{body.name}",
            "created_at": created,
            "updated_at": created,
            "uid": str(uuid.uuid4()),
            "resource_version": "1",
            "labels": body.metadata.labels,
        },
        "name": body.name,
        "organization_id": IDENTITY.organization_id,
        "environment_id": IDENTITY.environment_id,
        "spec": {
            "statement": body.spec.statement,
            "properties": body.spec.properties,
            "compute_pool_id": body.spec.compute_pool_id or IDENTITY.compute_pool_id,
            "principal": body.spec.principal or "u-local",
            "stopped": body.spec.stopped,
            "execution_mode": "streaming",
        },
        "status": {"phase": "PENDING", "detail": "", "traits": {}, "network_kind": "PUBLIC"},
    }


def statements_path() -> str:
    return f"/sql/v1/organizations/{IDENTITY.organization_id}/environments/{IDENTITY.environment_id}/statements"


def pool_resource(pool_id: str, spec: dict[str, Any], base_url: str, phase: str, created_at: str) -> dict[str, Any]:
    env = IDENTITY.environment_id
    return {
        "api_version": "fcpm/v2",
        "kind": "ComputePool",
        "id": pool_id,
        "metadata": {
            "self": f"{base_url}/fcpm/v2/compute-pools/{pool_id}",
            "resource_name": f"crn://confluent.cloud/organization={IDENTITY.organization_id}/environment={env}"
                             f"/flink-region=local.local/compute-pool={pool_id}",
            "created_at": created_at,
            "updated_at": created_at,
        },
        "spec": {**spec, "environment": {"id": env, "related": f"{base_url}/org/v2/environments/{env}",
                                         "resource_name": f"crn://confluent.cloud/organization="
                                                          f"{IDENTITY.organization_id}/environment={env}"}},
        "status": {"phase": phase, "current_cfu": 0},
    }


def cloud_error(status: int, detail: str, code: str | None = None, title: str | None = None,
                headers: dict[str, str] | None = None, pointer: str | None = None,
                parameter: str | None = None) -> JSONResponse:
    """The `errors[]` body of sql/v1 and fcpm/v2 (source.pointer / source.parameter when known)."""
    source = {k: v for k, v in (("pointer", pointer), ("parameter", parameter)) if v}
    item: dict[str, Any] = {"id": uuid.uuid4().hex, "status": str(status), "detail": shorten(detail),
                            "source": source}
    if code:
        item["code"] = code
    if title:
        item["title"] = title
    return JSONResponse({"errors": [item]}, status_code=status, headers=headers)


def kafka_error(status: int, error_code: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The `{error_code, message}` body of Kafka REST and Schema Registry."""
    return JSONResponse({"error_code": error_code, "message": shorten(message)}, status_code=status, headers=headers)
