"""Schema Registry subjects and versions, kept in the service's sqlite next to the catalog.

A table's subjects (`<table>-key`, `<table>-value`, TopicNameStrategy) get
version 1 when first read: the Avro schema Confluent Cloud's avro-registry
format derives from the table's columns. Clients may register more versions.
Soft and permanent deletes follow the registry's rules (a permanent delete
needs a soft delete first), with its `{error_code, message}` errors.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from pydantic import BaseModel
from sqlglot import exp

from shift_left_dagster.local.catalog import TableDef
from shift_left_dagster.local.store import Store
from shift_left_dagster.local.types import parse_type

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_versions (
    subject TEXT NOT NULL, version INTEGER NOT NULL, id INTEGER NOT NULL, schema_type TEXT NOT NULL,
    schema TEXT NOT NULL, refs TEXT NOT NULL, table_uid TEXT, deleted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subject, version));
"""
MAX_VERSION = 2**31 - 1
NAMESPACE = "org.apache.flink.avro.generated"  # what Flink's avro-registry format names its records


class RegistryError(Exception):
    """A Schema Registry error: HTTP status, registry error code, message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class SchemaVersion(BaseModel):
    subject: str
    version: int
    id: int
    schemaType: str = "AVRO"
    schema_: str
    references: list[dict[str, Any]] = []

    def body(self) -> dict[str, Any]:
        """As GET /subjects/{s}/versions/{v} answers (schemaType is left out for AVRO, as the registry does)."""
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id,
                               "schema": self.schema_}
        if self.schemaType != "AVRO":
            out["schemaType"] = self.schemaType
        if self.references:
            out["references"] = self.references
        return out


class SchemaRegistry:
    def __init__(self, store: Store) -> None:
        self.store = store
        with store.transaction() as db:
            db.execute(SCHEMA)

    # --- subjects ---------------------------------------------------------------------------

    def subjects(self, prefix: str = "", deleted: bool = False) -> list[str]:
        """Subjects with a version to show: one whose every version is soft-deleted is listed only with
        `deleted`, as the registry does."""
        names = [n for n, _soft in self.store.subjects(include_deleted=True) if n.startswith(prefix)]
        return [n for n in names if self._versions(n, deleted)]

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return [v.version for v in self._visible(subject, deleted)]

    def version(self, subject: str, version: str, deleted: bool = False) -> SchemaVersion:
        number = _version_number(version)
        versions = self._visible(subject, deleted)
        if number == -1:
            return versions[-1]
        found = next((v for v in versions if v.version == number), None)
        if found is None:
            raise RegistryError(404, 40402, f"Version {number} not found.")
        return found

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: list[dict[str, Any]] | None = None) -> int:
        """POST /subjects/{s}/versions: the schema's id (an identical latest version is not registered twice)."""
        schema_type = (schema_type or "AVRO").upper()
        if schema_type not in ("AVRO", "JSON", "PROTOBUF"):
            raise RegistryError(422, 42201, f"Invalid schema type {schema_type}")
        if schema_type in ("AVRO", "JSON"):
            try:
                json.loads(schema)
            except ValueError as error:
                raise RegistryError(422, 42201, f"Invalid schema: {error}") from None
        refs = json.dumps(references or [])
        state = dict(self.store.subjects(include_deleted=True)).get(subject)
        if state:  # registering into a soft-deleted subject revives it, as the registry does
            with self.store.transaction() as db:
                db.execute("UPDATE subjects SET soft_deleted = 0 WHERE name = ?", (subject,))
        existing = [v for v in self._versions(subject, False) if v.schema_ == schema and v.schemaType == schema_type]
        if existing:
            return existing[0].id
        with self.store.transaction() as db:
            db.execute("INSERT OR IGNORE INTO subjects VALUES (?, NULL, 0)", (subject,))
            version = db.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM schema_versions WHERE subject = ?",
                                 (subject,)).fetchone()[0]
            schema_id = self._id(db, schema, schema_type)
            db.execute("INSERT INTO schema_versions VALUES (?, ?, ?, ?, ?, ?, NULL, 0)",
                       (subject, version, schema_id, schema_type, schema, refs))
        return schema_id

    def delete_version(self, subject: str, version: str, permanent: bool) -> int:
        self._visible(subject, deleted=permanent)
        found = self.version(subject, version, deleted=True)
        row = self._one("SELECT deleted FROM schema_versions WHERE subject = ? AND version = ?", subject,
                        found.version)
        soft = bool(row and row[0])
        if permanent and not soft:
            raise RegistryError(404, 40407, f"Subject '{subject}' Version {found.version} was not deleted first "
                                            f"before being permanently deleted")
        if not permanent and soft:
            raise RegistryError(404, 40406, f"Subject '{subject}' Version {found.version} was soft deleted.Set "
                                            f"permanent=true to delete permanently")
        with self.store.transaction() as db:
            if permanent:
                db.execute("DELETE FROM schema_versions WHERE subject = ? AND version = ?", (subject, found.version))
            else:
                db.execute("UPDATE schema_versions SET deleted = 1 WHERE subject = ? AND version = ?",
                           (subject, found.version))
        return found.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        state = dict(self.store.subjects(include_deleted=True)).get(subject)
        if state is None:
            raise RegistryError(404, 40401, f"Subject '{subject}' not found.")
        if permanent and not state:
            raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently "
                                            f"deleted")
        if not permanent and state:
            raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                                            f"permanently")
        versions = [v.version for v in self._versions(subject, deleted=permanent)]
        with self.store.transaction() as db:
            if permanent:
                db.execute("DELETE FROM schema_versions WHERE subject = ?", (subject,))
            else:
                db.execute("UPDATE schema_versions SET deleted = 1 WHERE subject = ?", (subject,))
        self.store.set_subject_deleted(subject, permanent)
        return versions

    def schema_by_id(self, schema_id: int) -> SchemaVersion:
        row = self._one("SELECT subject, version FROM schema_versions WHERE id = ?", schema_id)
        if row is None:
            raise RegistryError(404, 40403, f"Schema {schema_id} not found")
        return self._versions(row[0], True, only=row[1])[0]

    # --- internals ------------------------------------------------------------------------

    def _visible(self, subject: str, deleted: bool) -> list[SchemaVersion]:
        """A subject's versions (soft-deleted ones too with `deleted`); 40401 when there is none to show."""
        versions = self._versions(subject, deleted) if subject in dict(self.store.subjects(True)) else []
        if not versions:
            raise RegistryError(404, 40401, f"Subject '{subject}' not found.")
        return versions

    def _versions(self, subject: str, deleted: bool, only: int | None = None) -> list[SchemaVersion]:
        self._derive(subject)
        with self.store.transaction() as db:
            rows = db.execute(
                "SELECT version, id, schema_type, schema, refs, deleted FROM schema_versions WHERE subject = ? "
                "AND (? IS NULL OR version = ?) ORDER BY version", (subject, only, only)).fetchall()
        return [SchemaVersion(subject=subject, version=v, id=i, schemaType=t, schema_=s, references=json.loads(r))
                for v, i, t, s, r, d in rows if deleted or not d]

    def _derive(self, subject: str) -> None:
        """Version 1 of a table's subject: the schema its table implies (renewed when the table is recreated)."""
        row = self._one("SELECT table_uid FROM subjects WHERE name = ?", subject)
        table_uid = row[0] if row else None
        with self.store.transaction() as db:
            if row is None:  # the subject was removed (its table dropped): its versions go with it
                db.execute("DELETE FROM schema_versions WHERE subject = ?", (subject,))
                return
            if table_uid is None:
                return
            stale = db.execute("SELECT 1 FROM schema_versions WHERE subject = ? AND table_uid IS NOT NULL "
                               "AND table_uid <> ?", (subject, table_uid)).fetchone()
            if stale:
                db.execute("DELETE FROM schema_versions WHERE subject = ?", (subject,))
            if db.execute("SELECT 1 FROM schema_versions WHERE subject = ?", (subject,)).fetchone():
                return
            definition = db.execute("SELECT definition FROM tables WHERE uid = ?", (table_uid,)).fetchone()
            if definition is None:
                return
            table = TableDef.model_validate_json(definition[0])
            schema = json.dumps(avro_schema(table, key=subject.endswith("-key")), separators=(",", ":"))
            db.execute("INSERT INTO schema_versions VALUES (?, 1, ?, 'AVRO', ?, '[]', ?, 0)",
                       (subject, self._id(db, schema, "AVRO"), schema, table_uid))

    @staticmethod
    def _id(db: sqlite3.Connection, schema: str, schema_type: str) -> int:
        """The registry's global id: the same schema text has the same id under every subject."""
        same = db.execute("SELECT id FROM schema_versions WHERE schema = ? AND schema_type = ?",
                          (schema, schema_type)).fetchone()
        if same:
            return int(same[0])
        return int(db.execute("SELECT COALESCE(MAX(id), 100000) + 1 FROM schema_versions").fetchone()[0])

    def _one(self, sql: str, *args: Any) -> tuple | None:
        with self.store.transaction() as db:
            return db.execute(sql, args).fetchone()


def _version_number(version: str) -> int:
    """'latest' and -1 mean the latest; otherwise 1 .. 2^31-1 (error 42202 as the registry words it)."""
    if version.lower() == "latest":
        return -1
    try:
        number = int(version)
    except ValueError:
        number = 0
    if number == -1 or 1 <= number <= MAX_VERSION:
        return number
    raise RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values "
                                    f"are between [1, 2^31-1] and the string \"latest\"")


# --- the Avro schema of a table ------------------------------------------------------------------


def avro_schema(table: TableDef, key: bool) -> dict[str, Any]:
    """The key or value record of a table, as the avro-registry format derives it from its columns."""
    keys = [k.lower() for k in table.key_columns]
    fields_include = table.options.get("value.fields-include", "except-key")
    columns = [c for c in table.stored_columns if c.metadata_key is None]
    if key:
        chosen = [c for k in keys for c in columns if c.name.lower() == k]
    else:
        chosen = [c for c in columns if fields_include == "all" or c.name.lower() not in keys]
    name = f"{table.name}_{'key' if key else 'value'}"
    return {"type": "record", "name": name, "namespace": NAMESPACE,
            "fields": [_field(c.name, c.type, c.nullable) for c in chosen]}


_PRIMITIVES = {"TEXT": "string", "VARCHAR": "string", "CHAR": "string", "BOOLEAN": "boolean", "TINYINT": "int",
               "SMALLINT": "int", "INT": "int", "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double",
               "VARBINARY": "bytes", "BINARY": "bytes"}


def _field(name: str, flink_type: str, nullable: bool) -> dict[str, Any]:
    return _field_of(name, parse_type(flink_type), nullable)


def _field_of(name: str, node: exp.DataType, nullable: bool) -> dict[str, Any]:
    kind = _avro(node, name)
    if nullable:
        return {"name": name, "type": ["null", kind], "default": None}
    return {"name": name, "type": kind}


def _avro(node: exp.DataType, name: str) -> Any:
    kind = node.this.name
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    numbers = [int(p.this.name) for p in node.expressions if isinstance(p, exp.DataTypeParam)]
    if kind == "DECIMAL":
        precision, scale = (numbers + [10, 0][len(numbers):])[:2]
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    if kind == "DATE":
        return {"type": "int", "logicalType": "date"}
    if kind in ("TIMESTAMP", "TIMESTAMPLTZ"):
        unit = "millis" if (numbers[0] if numbers else 6) <= 3 else "micros"
        return {"type": "long", "logicalType": f"{'local-' if kind == 'TIMESTAMP' else ''}timestamp-{unit}"}
    if kind == "ARRAY":
        return {"type": "array", "items": ["null", _avro(node.expressions[0], name)]}
    if kind == "MAP":
        return {"type": "map", "values": ["null", _avro(node.expressions[1], name)]}
    if kind == "STRUCT":
        return {"type": "record", "name": f"{name}_row",
                "fields": [_field_of(f.name, f.args["kind"], True) for f in node.expressions]}
    raise ValueError(f"type {kind} has no Avro form in the local service")
