"""Kafka REST v3 topic configs: read and alter a table's topic configuration.

A topic's configs come from Confluent Cloud's defaults, overridden by the
table's `kafka.*` WITH options (the names CREATE TABLE documents), overridden
by what clients set through `configs:alter` (kept in the service's sqlite).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import kafka_error
from shift_left_dagster.local.catalog import TableDef
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.store import Store

SCHEMA = "CREATE TABLE IF NOT EXISTS topic_configs (table_uid TEXT NOT NULL, name TEXT NOT NULL, " \
         "value TEXT NOT NULL, PRIMARY KEY (table_uid, name))"

# Confluent Cloud's topic defaults (a dedicated/standard cluster's values).
DEFAULTS = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "2097164",
    "message.timestamp.type": "CreateTime",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "2",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "104857600",
    "segment.ms": "604800000",
}
# CREATE TABLE option -> topic config it sets
TABLE_OPTIONS = {
    "kafka.cleanup-policy": "cleanup.policy",
    "kafka.retention.time": "retention.ms",
    "kafka.retention.size": "retention.bytes",
    "kafka.max-message-size": "max.message.bytes",
    "kafka.producer.compression.type": "compression.type",
}
_UNITS_MS = {"ms": 1, "milli": 1, "millis": 1, "s": 1000, "sec": 1000, "secs": 1000, "second": 1000,
             "seconds": 1000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
             "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000,
             "days": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")
_SIZE_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 1024, "k": 1024, "mb": 1024**2, "m": 1024**2, "gb": 1024**3,
               "g": 1024**3}


class ConfigEntry(BaseModel):
    name: str
    value: str | None = None
    operation: str = "SET"


class AlterConfigs(BaseModel):
    data: list[ConfigEntry] = Field(min_length=1)


def _config_value(option: str, value: str) -> str:
    """A table option's value in the topic config's unit (durations in ms, sizes in bytes)."""
    config = TABLE_OPTIONS[option]
    if config == "retention.ms":
        match = _DURATION.match(value.lower())
        if match and match.group(2) in _UNITS_MS | {"": 1}:
            millis = int(match.group(1)) * (_UNITS_MS.get(match.group(2)) or 1)
            return str(millis if millis else -1)  # 0 = keep forever
    if config in ("retention.bytes", "max.message.bytes"):
        match = _DURATION.match(value.lower())
        if match and match.group(2) in _SIZE_UNITS:
            return str(int(match.group(1)) * _SIZE_UNITS[match.group(2)])
    if config == "cleanup.policy":
        return value.replace("-", ",")
    return value


class TopicConfigs:
    def __init__(self, store: Store) -> None:
        self.store = store
        with store.transaction() as db:
            db.execute(SCHEMA)

    def configs(self, table: TableDef) -> list[tuple[str, str, bool]]:
        """(name, value, is_default) of every config of the table's topic."""
        with self.store.transaction() as db:
            altered = dict(db.execute("SELECT name, value FROM topic_configs WHERE table_uid = ?",
                                      (table.uid,)).fetchall())
        declared = {TABLE_OPTIONS[k]: _config_value(k, v) for k, v in table.options.items() if k in TABLE_OPTIONS}
        merged = DEFAULTS | declared | altered
        return [(n, merged[n], n not in declared and n not in altered) for n in sorted(merged)]

    def alter(self, table: TableDef, entries: list[ConfigEntry]) -> None:
        with self.store.transaction() as db:
            for entry in entries:
                if entry.operation.upper() == "DELETE":
                    db.execute("DELETE FROM topic_configs WHERE table_uid = ? AND name = ?", (table.uid, entry.name))
                else:
                    db.execute("INSERT OR REPLACE INTO topic_configs VALUES (?, ?, ?)",
                               (table.uid, entry.name, entry.value or ""))


def topic_config_routes(store: Store) -> list[Route]:
    configs = TopicConfigs(store)

    def find(request: Request) -> TableDef | Response:
        cluster, topic = request.path_params["cluster_id"], request.path_params["topic"]
        if cluster != IDENTITY.cluster_id:
            return kafka_error(404, 40402, f"Cluster {cluster} not found.")
        found = next((t for t in store.tables(database=cluster) if t.name == topic), None)
        return found or kafka_error(404, 40403, "This server does not host this topic-partition.")

    def entry(request: Request, table: TableDef, name: str, value: str, default: bool) -> dict[str, Any]:
        cluster = request.path_params["cluster_id"]
        url = f"{str(request.base_url).rstrip('/')}/kafka/v3/clusters/{cluster}/topics/{table.name}/configs/{name}"
        source = "DEFAULT_CONFIG" if default else "DYNAMIC_TOPIC_CONFIG"
        return {"kind": "KafkaTopicConfig",
                "metadata": {"self": url, "resource_name": f"crn:///kafka={cluster}/topic={table.name}/config={name}"},
                "cluster_id": cluster, "topic_name": table.name, "name": name, "value": value,
                "is_read_only": False, "is_sensitive": False, "is_default": default, "source": source,
                "synonyms": [{"name": name, "value": value, "source": source}]}

    async def list_configs(request: Request) -> Response:
        table = find(request)
        if isinstance(table, Response):
            return table
        url = str(request.url).split("?")[0]
        return JSONResponse({"kind": "KafkaTopicConfigList", "metadata": {"self": url, "next": None},
                             "data": [entry(request, table, *c) for c in configs.configs(table)]})

    async def get_config(request: Request) -> Response:
        table = find(request)
        if isinstance(table, Response):
            return table
        name = request.path_params["name"]
        found = next((c for c in configs.configs(table) if c[0] == name), None)
        if found is None:
            return kafka_error(404, 40404, f"Config {name} cannot be found for TOPIC {table.name} in cluster "
                                           f"{request.path_params['cluster_id']}.")
        return JSONResponse(entry(request, table, *found))

    async def alter(request: Request, entries: list[ConfigEntry]) -> Response:
        table = find(request)
        if isinstance(table, Response):
            return table
        for item in entries:
            if item.name not in DEFAULTS:
                return kafka_error(400, 40002, f"Unknown topic config name: {item.name}")
            if item.operation.upper() not in ("SET", "DELETE"):
                return kafka_error(400, 40002, f"Unknown operation {item.operation} for config {item.name}")
            if item.operation.upper() == "SET" and item.value is None:
                return kafka_error(400, 40002, f"Config {item.name}: a value is required to SET it")
        configs.alter(table, entries)
        return Response(status_code=204)

    async def alter_batch(request: Request) -> Response:
        try:
            body = AlterConfigs.model_validate(await request.json())
        except (ValidationError, ValueError) as error:
            return kafka_error(400, 400, f"Invalid request body: {str(error).splitlines()[0]}")
        return await alter(request, body.data)

    async def set_one(request: Request) -> Response:
        try:
            value = (await request.json())["value"]
        except (ValueError, KeyError, TypeError):
            return kafka_error(400, 400, "Invalid request body: expected {\"value\": ...}")
        return await alter(request, [ConfigEntry(name=request.path_params["name"], value=str(value))])

    async def reset_one(request: Request) -> Response:
        return await alter(request, [ConfigEntry(name=request.path_params["name"], operation="DELETE")])

    base = "/kafka/v3/clusters/{cluster_id}/topics/{topic}/configs"
    return [
        Route(base, list_configs, methods=["GET"]),
        Route(base + ":alter", alter_batch, methods=["POST"]),
        Route(base + "/{name}", get_config, methods=["GET"]),
        Route(base + "/{name}", set_one, methods=["PUT"]),
        Route(base + "/{name}", reset_one, methods=["DELETE"]),
    ]
