"""Kafka REST v3 topic creation (`POST /kafka/v3/clusters/{cluster}/topics`): a topic is a table.

Its columns come from its value subject's latest schema when one is
registered, as Confluent Cloud's Flink reads a topic; without one it is the
raw `key BYTES, val BYTES` table, and has no subject.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import kafka_error
from shift_left_dagster.local.catalog import DEFAULT_PARTITIONS, TableDef, TableId
from shift_left_dagster.local.record_schemas import columns_of
from shift_left_dagster.local.schema_registry import RegistryError, SchemaRegistry, SchemaVersion
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.store import Store
from shift_left_dagster.local.topic_configs import ConfigEntry, TopicConfigs

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")  # Kafka's legal topic names
MAX_PARTITIONS = 4096


class ConfigIn(BaseModel):
    name: str
    value: str | None = None


class TopicIn(BaseModel):
    topic_name: str
    partitions_count: int | None = Field(default=None, ge=1, le=MAX_PARTITIONS)
    replication_factor: int | None = None
    configs: list[ConfigIn] = Field(default_factory=list)
    validate_only: bool = False


def topic_body(base: str, cluster: str, table: TableDef) -> dict[str, Any]:
    """A KafkaTopic resource as Kafka REST v3 answers it."""
    url = f"{base}/kafka/v3/clusters/{cluster}/topics/{table.name}"
    return {"kind": "KafkaTopic", "metadata": {"self": url, "resource_name": f"crn:///kafka={cluster}/topic="
                                                                             f"{table.name}"},
            "cluster_id": cluster, "topic_name": table.name, "is_internal": False,
            "replication_factor": 3, "partitions_count": table.partitions,
            "partitions": {"related": f"{url}/partitions"}, "configs": {"related": f"{url}/configs"},
            "partition_reassignments": {"related": f"{url}/partitions/-/reassignment"}}


def topic_table(store: Store, cluster: str, topic: str) -> TableDef | None:
    return store.table(TableId(catalog=IDENTITY.environment_id, database=cluster, name=topic))


def body_problem(error: Exception) -> str:
    """What is wrong with a request body, naming the field."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return "the request body is not JSON" if isinstance(error, json.JSONDecodeError) else str(error)


def topic_create_routes(store: Store) -> list[Route]:
    registry, configs = SchemaRegistry(store), TopicConfigs(store)

    async def create_topic(request: Request) -> Response:
        cluster = request.path_params["cluster_id"]
        if cluster != IDENTITY.cluster_id:
            return kafka_error(404, 40402, f"Cluster {cluster} not found.")
        try:
            body = TopicIn.model_validate(await request.json())
        except (ValidationError, ValueError) as error:
            return kafka_error(400, 400, body_problem(error))
        if not TOPIC_NAME.match(body.topic_name):
            return kafka_error(400, 40002, f"Topic name '{body.topic_name[:300]}' is illegal: it must be 1 to 249 "
                                           f"characters of ASCII letters, digits, '.', '_' and '-'")
        if topic_table(store, cluster, body.topic_name) is not None:
            return kafka_error(400, 40002, f"Topic '{body.topic_name}' already exists.")
        value_schema = _latest(registry, f"{body.topic_name}-value")
        table = TableDef(uid=uuid.uuid4().hex, id=TableId(catalog=IDENTITY.environment_id, database=cluster,
                                                          name=body.topic_name),
                         columns=columns_of(value_schema), partitions=body.partitions_count or DEFAULT_PARTITIONS)
        if not body.validate_only:
            store.create_table(table)
            if value_schema is None:  # a topic without schemas has no subject (none derived from key/val BYTES)
                store.set_subject_deleted(f"{body.topic_name}-value", permanent=True)
            configs.alter(table, [ConfigEntry(name=c.name, value=c.value) for c in body.configs
                                  if c.value is not None])
        return JSONResponse(topic_body(str(request.base_url).rstrip("/"), cluster, table), status_code=201)

    return [Route("/kafka/v3/clusters/{cluster_id}/topics", create_topic, methods=["POST"])]


def _latest(registry: SchemaRegistry, subject: str) -> SchemaVersion | None:
    try:
        return registry.version(subject, "latest")
    except RegistryError:
        return None
