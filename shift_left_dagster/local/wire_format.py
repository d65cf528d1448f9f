"""Schema Registry's wire format: a magic byte 0, the schema id (4 bytes, big-endian), then the value
in its schema's encoding (Avro binary, or JSON for JSON Schema).

Confluent Cloud's produce API takes no schema, so clients produce schema'd
records as BINARY data in this format; a typed table's produced record is
decoded here with the registered schema. Avro binary per the Avro
specification: zig-zag varints, length-prefixed bytes and strings, unions as
a branch index, arrays and maps in blocks.
"""

from __future__ import annotations

import json
import struct
from decimal import Decimal
from typing import Any

from shift_left_dagster.local.record_schemas import SchemaMismatch, check
from shift_left_dagster.local.schema_registry import SchemaRegistry

MAGIC = 0


def is_wire_format(payload: bytes) -> bool:
    return len(payload) >= 5 and payload[0] == MAGIC


def decode(payload: bytes, registry: SchemaRegistry) -> dict[str, Any]:
    """The fields of a wire-format record (RegistryError 40403 for an unknown schema id)."""
    schema = registry.schema_by_id(int.from_bytes(payload[1:5], "big"))
    body = payload[5:]
    if schema.schemaType == "JSON":
        return check(schema, json.loads(body))
    if schema.schemaType != "AVRO":
        raise SchemaMismatch(f"schema id {schema.id} is {schema.schemaType}: only AVRO and JSON are decoded here")
    reader = _Reader(body)
    try:
        value = reader.read(json.loads(schema.schema_), {})
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise SchemaMismatch(f"the value is not Avro of schema id {schema.id}: {error}") from None
    if not isinstance(value, dict):
        raise SchemaMismatch(f"schema id {schema.id} is not a record")
    return value


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise IndexError("the value ends early")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def long(self) -> int:
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)

    def blocks(self) -> int:
        """The count of the next block of an array or map (0 at the end)."""
        count = self.long()
        if count < 0:
            self.long()  # the block's byte size
        return abs(count)

    def read(self, schema: Any, names: dict[str, Any]) -> Any:
        if isinstance(schema, list):
            return self.read(schema[self.long()], names)
        if isinstance(schema, str):
            return self._primitive(schema, names)
        kind = schema["type"]
        if kind == "record":
            names[schema["name"]] = schema
            return {f["name"]: self.read(f["type"], names) for f in schema["fields"]}
        if kind == "enum":
            names[schema["name"]] = schema
            return schema["symbols"][self.long()]
        if kind == "fixed":
            names[schema["name"]] = schema
            return self._logical(schema, self.take(schema["size"]))
        if kind == "array":
            items: list[Any] = []
            while count := self.blocks():
                items += [self.read(schema["items"], names) for _ in range(count)]
            return items
        if kind == "map":
            entries: dict[str, Any] = {}
            while count := self.blocks():
                for _ in range(count):
                    key = self.take(self.long()).decode()
                    entries[key] = self.read(schema["values"], names)
            return entries
        return self._logical(schema, self.read(kind, names))

    def _primitive(self, kind: str, names: dict[str, Any]) -> Any:
        if kind == "null":
            return None
        if kind == "boolean":
            return self.take(1) != b"\x00"
        if kind in ("int", "long"):
            return self.long()
        if kind == "float":
            return struct.unpack("<f", self.take(4))[0]
        if kind == "double":
            return struct.unpack("<d", self.take(8))[0]
        if kind in ("bytes", "string"):
            raw = self.take(self.long())
            return raw.decode() if kind == "string" else raw
        return self.read(names[kind], names)  # a named type defined before

    @staticmethod
    def _logical(schema: dict[str, Any], value: Any) -> Any:
        """Logical types as the produce path takes them: timestamps in epoch ms, decimals as Decimal."""
        logical = schema.get("logicalType")
        if logical == "decimal" and isinstance(value, bytes):
            return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-int(schema.get("scale", 0)))
        if logical in ("timestamp-micros", "local-timestamp-micros"):
            return value / 1000
        return value
