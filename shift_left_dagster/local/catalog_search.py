"""Stream Catalog basic search (`GET /catalog/v1/search/basic`): topics and subjects by name.

Confluent's catalog is Apache Atlas: a search answers an Atlas search result
whose entities carry their type, guid, status and attributes; a topic's
qualified name is `<schema registry>:<cluster>:<topic>`. Here the query is a
case-insensitive substring of the name (Atlas's full-text match on names).
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import kafka_error
from shift_left_dagster.local.schema_registry import SchemaRegistry
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.store import Store

REGISTRY_ID = "lsrc-local"  # the local schema registry's cluster id, the first part of qualified names
DEFAULT_LIMIT, MAX_LIMIT = 100, 500  # Confluent Cloud's default and cap on listed entities


def _entity(type_name: str, name: str, qualified: str) -> dict[str, Any]:
    return {"typeName": type_name, "guid": str(uuid.uuid5(uuid.NAMESPACE_URL, qualified)), "status": "ACTIVE",
            "displayText": name, "classificationNames": [], "labels": [], "isIncomplete": False,
            "attributes": {"name": name, "nameLower": name.lower(), "qualifiedName": qualified}}


def catalog_search_routes(store: Store) -> list[Route]:
    registry = SchemaRegistry(store)

    def entities(type_name: str) -> list[dict[str, Any]]:
        if type_name == "kafka_topic":
            return [_entity(type_name, t.name, f"{REGISTRY_ID}:{IDENTITY.cluster_id}:{t.name}")
                    for t in store.tables(database=IDENTITY.cluster_id)]
        return [_entity(type_name, s, f"{REGISTRY_ID}:.:{s}") for s in registry.subjects()]

    async def search(request: Request) -> Response:
        params = request.query_params
        types = params.getlist("types") or params.getlist("type") or ["kafka_topic", "sr_subject"]
        unknown = [t for t in types if t not in ("kafka_topic", "sr_subject")]
        if unknown:
            return kafka_error(400, 400, f"Invalid type '{unknown[0]}': the local catalog searches kafka_topic "
                                         f"and sr_subject")
        try:
            limit, offset = int(params.get("limit", DEFAULT_LIMIT)), int(params.get("offset", 0))
        except ValueError:
            return kafka_error(400, 400, "limit and offset must be integers")
        query = params.get("query", "").strip("*").lower()
        found = [e for t in types for e in entities(t) if query in e["attributes"]["nameLower"]]
        found.sort(key=lambda e: (e["typeName"], e["attributes"]["name"]))
        page = found[max(offset, 0): max(offset, 0) + max(1, min(limit, MAX_LIMIT))]
        return JSONResponse({"searchParameters": {"query": params.get("query"), "types": types, "limit": limit,
                                                  "offset": offset, "includeDeletedEntities": False},
                             "types": types, "entities": page})

    return [Route("/catalog/v1/search/basic", search, methods=["GET"])]
