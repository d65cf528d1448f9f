"""Schema Registry HTTP paths: subjects, versions and schemas by id, with the registry's error bodies."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import kafka_error
from shift_left_dagster.local.schema_registry import RegistryError, SchemaRegistry
from shift_left_dagster.local.store import Store

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class RegisterIn(BaseModel):
    schema_: str = Field(alias="schema", min_length=1)
    schemaType: str = "AVRO"
    references: list[dict[str, Any]] = Field(default_factory=list)


def _answer(action: Callable[[Request], Any]) -> Callable[[Request], Awaitable[Response]]:
    """Run a registry action; its value as the registry's JSON, a RegistryError as its error body."""
    async def endpoint(request: Request) -> Response:
        try:
            return JSONResponse(await action(request), media_type=MEDIA_TYPE)
        except RegistryError as error:
            return kafka_error(error.status, error.code, error.message)
    return endpoint


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


def registry_routes(store: Store) -> list[Route]:
    registry = SchemaRegistry(store)

    async def list_subjects(request: Request) -> Any:
        return registry.subjects(request.query_params.get("subjectPrefix", ""), _flag(request, "deleted"))

    async def list_versions(request: Request) -> Any:
        return registry.versions(request.path_params["subject"], _flag(request, "deleted"))

    async def get_version(request: Request) -> Any:
        params = request.path_params
        return registry.version(params["subject"], params["version"], _flag(request, "deleted")).body()

    async def get_version_schema(request: Request) -> Any:
        params = request.path_params
        return json.loads(registry.version(params["subject"], params["version"], _flag(request, "deleted")).schema_)

    async def register(request: Request) -> Any:
        try:
            body = RegisterIn.model_validate(await request.json())
        except (ValidationError, ValueError) as error:
            raise RegistryError(422, 42201, f"Invalid schema: {str(error).splitlines()[0]}") from None
        return {"id": registry.register(request.path_params["subject"], body.schema_, body.schemaType,
                                        body.references)}

    async def delete_version(request: Request) -> Any:
        params = request.path_params
        return registry.delete_version(params["subject"], params["version"], _flag(request, "permanent"))

    async def delete_subject(request: Request) -> Any:
        return registry.delete_subject(request.path_params["subject"], _flag(request, "permanent"))

    async def schema_by_id(request: Request) -> Any:
        try:
            schema_id = int(request.path_params["schema_id"])
        except ValueError:
            raise RegistryError(404, 40403, f"Schema {request.path_params['schema_id']} not found") from None
        found = registry.schema_by_id(schema_id)
        body: dict[str, Any] = {"schema": found.schema_}
        if found.schemaType != "AVRO":
            body["schemaType"] = found.schemaType
        return body

    return [
        Route("/subjects", _answer(list_subjects), methods=["GET"]),
        Route("/subjects/{subject}/versions", _answer(list_versions), methods=["GET"]),
        Route("/subjects/{subject}/versions", _answer(register), methods=["POST"]),
        Route("/subjects/{subject}/versions/{version}", _answer(get_version), methods=["GET"]),
        Route("/subjects/{subject}/versions/{version}", _answer(delete_version), methods=["DELETE"]),
        Route("/subjects/{subject}/versions/{version}/schema", _answer(get_version_schema), methods=["GET"]),
        Route("/subjects/{subject}", _answer(delete_subject), methods=["DELETE"]),
        Route("/schemas/ids/{schema_id}", _answer(schema_by_id), methods=["GET"]),
    ]
