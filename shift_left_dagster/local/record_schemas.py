"""Registered schemas (Avro, JSON Schema) as a table's columns and as a check on produced values.

A topic created over Kafka REST takes its columns from its value subject's
latest schema, as Confluent Cloud's Flink reads a topic; without one it is the
raw `key BYTES, val BYTES` table Confluent Cloud shows for a topic without
schemas. A record produced with a schema id or subject is checked against that
schema before it is written.
"""

from __future__ import annotations

import json
from typing import Any

from shift_left_dagster.local.catalog import ColumnDef
from shift_left_dagster.local.schema_registry import SchemaVersion

RAW_COLUMNS = [ColumnDef(name="key", type="BYTES"), ColumnDef(name="val", type="BYTES")]
_AVRO = {"string": "STRING", "int": "INT", "long": "BIGINT", "boolean": "BOOLEAN", "float": "FLOAT",
         "double": "DOUBLE", "bytes": "BYTES"}
_AVRO_LOGICAL = {"timestamp-millis": "TIMESTAMP_LTZ(3)", "timestamp-micros": "TIMESTAMP_LTZ(6)",
                 "local-timestamp-millis": "TIMESTAMP(3)", "local-timestamp-micros": "TIMESTAMP(6)",
                 "date": "DATE"}
_JSON = {"string": "STRING", "integer": "BIGINT", "number": "DOUBLE", "boolean": "BOOLEAN"}


class SchemaMismatch(ValueError):
    """A produced value that does not fit its schema, naming the field."""


def columns_of(schema: SchemaVersion | None) -> list[ColumnDef]:
    """The columns a value schema gives a topic's table (the raw columns without one)."""
    if schema is None or schema.schemaType not in ("AVRO", "JSON"):
        return RAW_COLUMNS
    document = json.loads(schema.schema_)
    fields = _fields(schema.schemaType, document)
    if fields is None:
        return RAW_COLUMNS
    return [ColumnDef(name=name, type=flink, nullable=nullable) for name, (flink, nullable) in fields.items()]


def check(schema: SchemaVersion, data: Any) -> dict[str, Any]:
    """The value's fields, checked against the schema: every field known, every required one given, in
    the Avro JSON encoding's unions unwrapped ({"string": "x"} is "x")."""
    if not isinstance(data, dict):
        raise SchemaMismatch(f"the value must be a JSON object for schema id {schema.id}")
    fields = _fields(schema.schemaType, json.loads(schema.schema_)) or {}
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise SchemaMismatch(f"field '{unknown[0]}' is not in schema id {schema.id}")
    missing = [name for name, (_flink, nullable) in fields.items() if not nullable and data.get(name) is None]
    if missing:
        raise SchemaMismatch(f"field '{missing[0]}' is required by schema id {schema.id}")
    return {name: _unwrapped(value) for name, value in data.items()}


def _fields(schema_type: str, document: Any) -> dict[str, tuple[str, bool]] | None:
    """Field name -> (Flink type, nullable) of a record schema; None for any other schema."""
    if schema_type == "AVRO":
        if not isinstance(document, dict) or document.get("type") != "record":
            return None
        return {f["name"]: _avro_type(f["type"]) for f in document.get("fields", [])}
    if not isinstance(document, dict) or document.get("type") != "object":
        return None
    required = set(document.get("required", []))
    return {name: (_JSON.get(str(spec.get("type")), "STRING"), name not in required)
            for name, spec in document.get("properties", {}).items()}


def _avro_type(avro: Any) -> tuple[str, bool]:
    if isinstance(avro, list):  # a union: nullable when it holds "null", typed by its other branch
        branches = [b for b in avro if b != "null"]
        flink, _ = _avro_type(branches[0]) if branches else ("STRING", True)
        return flink, "null" in avro
    if isinstance(avro, dict):
        if avro.get("logicalType") in _AVRO_LOGICAL:
            return _AVRO_LOGICAL[avro["logicalType"]], False
        if avro.get("logicalType") == "decimal":
            return f"DECIMAL({avro.get('precision', 10)}, {avro.get('scale', 0)})", False
        return _avro_type(avro.get("type"))
    return _AVRO.get(str(avro), "STRING"), avro == "null"


def _unwrapped(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        (branch, inner), = value.items()
        if branch in _AVRO or branch in ("null", "array", "map", "record"):
            return inner
    return value
