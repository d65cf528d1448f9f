"""Kafka REST v3 produce (`POST /kafka/v3/clusters/{cluster}/topics/{topic}/records`): records into a
table's log.

A produced record is written by the engine thread (`Engine.on_engine_thread`),
as a batch of the table's log like any statement's write, so the running
statements reading the table read it in their next run. Values are JSON,
STRING or BINARY as Confluent Cloud's produce API takes them (BINARY into a
typed table: the Schema Registry wire format, decoded with the registered
schema, as Confluent Cloud clients send schema'd records), or AVRO /
JSONSCHEMA data checked against a registered schema named by `schema_id` or
`subject` (+ `schema_version`), as Confluent's REST Proxy v3 takes them.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pyspark.sql import types as T
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import kafka_error
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME, TableDef
from shift_left_dagster.local.engine import Engine
from shift_left_dagster.local.kafka_topics import body_problem, topic_table
from shift_left_dagster.local.record_schemas import SchemaMismatch, check
from shift_left_dagster.local.schema_registry import RegistryError, SchemaRegistry
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.storage import NotNullViolation
from shift_left_dagster.local.store import Batch
from shift_left_dagster.local.types import spark_type_of
from shift_left_dagster.local.wire_format import decode, is_wire_format


class DataIn(BaseModel):
    type: str | None = None
    data: Any = None
    schema_id: int | None = None
    subject: str | None = None
    subject_name_strategy: str | None = None
    schema_version: int | None = None


class RecordIn(BaseModel):
    partition_id: int | None = None
    headers: list[dict[str, Any]] = Field(default_factory=list)
    key: DataIn | None = None
    value: DataIn | None = None
    timestamp: datetime | None = None


class ProduceError(ValueError):
    """A record the produce API refuses: HTTP status, Kafka REST error code, message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def produce_routes(engine: Engine) -> list[Route]:
    registry = SchemaRegistry(engine.store)

    def produce_one(cluster: str, table: TableDef, document: Any) -> dict[str, Any]:
        """Write one record (on the engine thread) and give its delivery report; ProduceError when refused."""
        try:
            record = RecordIn.model_validate(document)
            if record.partition_id is not None:  # refused, not ignored: the client would read another partition
                raise ProduceError(400, 400, "partition_id is not supported by the local service: a record goes to "
                                             "the partition the table's key hashes it to (leave partition_id out)")
            row, sizes = _row(registry, table, record)
            stamp = record.timestamp or datetime.now(UTC)
            values = [stamp if c.metadata_key == "timestamp" and row.get(c.name) is None else
                      _spark_value(row.get(c.name), spark_type_of(c.type), c.name) for c in table.stored_columns]
            if engine.startup_error:
                raise ProduceError(503, 503, engine.startup_error)
            batch = engine.on_engine_thread(lambda: _append(engine, table, values, stamp))
        except TimeoutError:
            raise ProduceError(503, 503, "the engine did not take the record within 60 s: it is busy or "
                                         "stopping, retry") from None
        except RegistryError as error:
            raise ProduceError(error.status, error.code, error.message) from None
        except (ValidationError, NotNullViolation, TypeError, ValueError) as error:  # Spark checks values too
            raise ProduceError(400, 400, body_problem(error)) from None
        partition, (offset, _end) = next(iter(batch.ranges.items()))
        return {"error_code": 200, "cluster_id": cluster, "topic_name": table.name, "partition_id": partition,
                "offset": offset, "timestamp": stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                **{part: ({"type": data.type or "JSON", "size": sizes[part]} if data else None)
                   for part, data in (("key", record.key), ("value", record.value))}}

    async def produce(request: Request) -> Response:
        """One record, or (streaming mode) records as concatenated JSON answered by one delivery report each,
        in order, each with its own error_code."""
        cluster, topic = request.path_params["cluster_id"], request.path_params["topic"]
        if cluster != IDENTITY.cluster_id:
            return kafka_error(404, 40402, f"Cluster {cluster} not found.")
        table = topic_table(engine.store, cluster, topic)
        if table is None:
            return kafka_error(404, 40403, "This server does not host this topic-partition.")
        try:
            documents = _documents((await request.body()).decode())
        except ValueError:
            return kafka_error(400, 400, "the request body is not JSON")
        reports = []
        for document in documents:
            try:
                reports.append(await run_in_threadpool(produce_one, cluster, table, document))
            except ProduceError as error:
                if len(documents) == 1:
                    return kafka_error(error.status, error.code, str(error))
                reports.append({"error_code": error.status, "message": str(error)})
        if len(documents) == 1:
            return JSONResponse(reports[0])
        return Response("\n".join(json.dumps(r) for r in reports), media_type="application/json")

    return [Route("/kafka/v3/clusters/{cluster_id}/topics/{topic}/records", produce, methods=["POST"])]


def _documents(body: str) -> list[Any]:
    """The JSON documents of a body: one record, or concatenated records (streaming mode)."""
    decoder, documents, at = json.JSONDecoder(), [], 0
    while True:
        at = len(body) - len(body[at:].lstrip())  # past the white space between records
        if at == len(body):
            break
        document, at = decoder.raw_decode(body, at)
        documents.append(document)
    if not documents:
        raise ValueError("no record")
    return documents


def _row(registry: SchemaRegistry, table: TableDef, record: RecordIn) -> tuple[dict[str, Any], dict[str, int]]:
    """The record as a row of the table's stored columns (key fields, then value fields), and the size of
    its key and value."""
    row: dict[str, Any] = {}
    sizes: dict[str, int] = {}
    raw = [c.name for c in table.stored_columns] == ["key", "val"]
    for part, data in (("key", record.key), ("value", record.value)):
        if data is None:
            continue
        fields = _decoded(registry, table.name, part, data)
        sizes[part] = len(fields if isinstance(fields, bytes) else json.dumps(fields).encode())
        if not raw and isinstance(fields, bytes):  # a schema'd record as Confluent Cloud clients produce it
            if not is_wire_format(fields):
                raise ProduceError(400, 400, f"the {part} of {table.name} is BINARY but not in the Schema "
                                             f"Registry wire format (magic byte 0, schema id, encoded value)")
            try:
                fields = decode(fields, registry)
            except SchemaMismatch as error:
                raise ProduceError(400, 400, f"{part}: {error}") from None
        if raw:
            row["key" if part == "key" else "val"] = fields if isinstance(fields, bytes) else \
                json.dumps(fields).encode()
        elif isinstance(fields, dict):
            row.update(fields)
        elif part == "value" or fields is not None:
            raise ProduceError(400, 400, f"the {part} must be a JSON object of {table.name}'s columns")
    stored = {c.name.lower(): c.name for c in table.stored_columns}  # names match as Flink's, in any case
    unknown = [name for name in row if name.lower() not in stored]
    if unknown:
        raise ProduceError(400, 400, f"field '{unknown[0]}' is not a column of {table.name}")
    return {stored[name.lower()]: value for name, value in row.items()}, sizes


def _decoded(registry: SchemaRegistry, topic: str, part: str, data: DataIn) -> Any:
    """The data of a key or value: JSON as given, a STRING as UTF-8 bytes, BINARY base64-decoded, AVRO /
    JSONSCHEMA checked against its registered schema."""
    kind = (data.type or ("AVRO" if data.schema_id or data.subject else "JSON")).upper()
    if kind == "BINARY":
        try:
            return base64.b64decode(str(data.data), validate=True)
        except (binascii.Error, ValueError):
            raise ProduceError(400, 400, f"{part}.data is not base64 for type BINARY") from None
    if kind == "STRING":
        return str(data.data).encode()
    if kind == "JSON" and data.schema_id is None and data.subject is None:
        return data.data
    if kind not in ("AVRO", "JSONSCHEMA", "JSON"):
        raise ProduceError(400, 400, f"{part}.type '{data.type}' is not supported here: use JSON, STRING, BINARY, "
                                     f"AVRO or JSONSCHEMA")
    if data.schema_id is not None:
        schema = registry.schema_by_id(data.schema_id)
    else:
        subject = data.subject or f"{topic}-{part}"
        schema = registry.version(subject, str(data.schema_version or "latest"))
    expected = "AVRO" if kind == "AVRO" else "JSON"
    if schema.schemaType != expected:
        raise ProduceError(400, 400, f"{part}: schema id {schema.id} is {schema.schemaType}, not {kind}")
    try:
        return check(schema, data.data)
    except SchemaMismatch as error:
        raise ProduceError(400, 400, f"{part}: {error}") from None


def _append(engine: Engine, table: TableDef, values: list[Any], stamp: datetime) -> Batch:
    """Write one record (its stored columns' values) as a batch of the table's log and register it (on
    the engine thread)."""
    logs = engine.logs
    schema = T.StructType([T.StructField(c.name, spark_type_of(c.type)) for c in table.stored_columns]
                          + [T.StructField(ROWTIME, T.TimestampType()), T.StructField(OP, T.ByteType())])
    frame = logs.spark.createDataFrame([(*values, stamp, INSERT)], schema)
    batch = logs.write(table, frame, None, collect=True, small_input=True)
    assert batch is not None  # one record was written
    engine.store.append_batches([batch])
    return batch


def _spark_value(value: Any, kind: T.DataType, name: str) -> Any:
    """A JSON value as the Python value Spark takes for a column of this type."""
    if value is None:
        return None
    try:
        if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
            moment = datetime.fromtimestamp(value / 1000, UTC) if isinstance(value, (int, float)) else \
                datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            return moment.replace(tzinfo=None) if isinstance(kind, T.TimestampNTZType) else moment
        if isinstance(kind, T.DateType):
            return date.fromordinal(date(1970, 1, 1).toordinal() + value) if isinstance(value, int) else \
                date.fromisoformat(str(value))
        if isinstance(kind, T.DecimalType):
            return Decimal(str(value))
        if isinstance(kind, T.BinaryType):
            return value if isinstance(value, bytes) else base64.b64decode(str(value))
        if isinstance(kind, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)) and not isinstance(value, bool):
            return int(value) if isinstance(value, int) or str(value).lstrip("-").isdigit() else _refuse(name, value)
        if isinstance(kind, (T.DoubleType, T.FloatType)) and isinstance(value, (int, float)):
            return float(value)
        if isinstance(kind, T.StringType) and not isinstance(value, (dict, list)):
            return value if isinstance(value, str) else json.dumps(value)
    except (ValueError, TypeError, binascii.Error):
        _refuse(name, value)
    return value


def _refuse(name: str, value: Any) -> Any:
    raise ProduceError(400, 400, f"field '{name}': {json.dumps(value)[:100]} does not fit its column type")
