"""Table definitions: what CREATE TABLE declares, and how a table is stored.

Catalog = environment, database = cluster, table = topic + schema. A table
is an append-only log; each record holds the stored columns plus the system
columns below (partition, offset, record time, changelog op).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field
from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.local.metadata import METADATA_KEYS as KAFKA_METADATA
from shift_left_dagster.local.metadata import WRITABLE as WRITABLE_METADATA
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.types import UnsupportedType, spark_type_of
from shift_left_dagster.project.analysis import analyze_ddl
from shift_left_dagster.project.dialect import MetadataColumnConstraint
from shift_left_dagster.project.parsing import Statement, to_flink_sql
from shift_left_dagster.translation.columns import OFFSET, OP, PARTITION, ROWTIME, SYSTEM_COLUMNS  # noqa: F401 (re-exported)

# Changelog op codes, as the results endpoint and the `op` Kafka header use them.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3

DEFAULT_PARTITIONS = 6  # Confluent Cloud's default bucket count
# Metadata keys a column may read (Confluent's list; views.py says what each holds locally).
METADATA_KEYS = tuple(KAFKA_METADATA)


class TableError(ValueError):
    """A table definition the service refuses, in the words Flink would use."""


class TableId(BaseModel, frozen=True):
    catalog: str
    database: str
    name: str

    def __str__(self) -> str:
        return f"`{self.catalog}`.`{self.database}`.`{self.name}`"


def resolve(table: exp.Table, properties: Mapping[str, str]) -> TableId:
    """catalog.database.table, defaulting to the statement's sql.current-catalog / -database."""
    return TableId(
        catalog=table.catalog or properties.get("sql.current-catalog") or IDENTITY.environment_id,
        database=table.db or properties.get("sql.current-database") or IDENTITY.cluster_id,
        name=table.name,
    )


class ColumnDef(BaseModel):
    name: str
    type: str  # Flink SQL type
    nullable: bool = True
    expression: str | None = None  # computed column: Flink SQL expression
    metadata_key: str | None = None
    virtual: bool = False

    @property
    def stored(self) -> bool:
        """Held in the log: plain columns and writable METADATA columns."""
        return self.expression is None and not self.virtual


class TableDef(BaseModel):
    uid: str
    id: TableId
    columns: list[ColumnDef]
    primary_key: list[str] = Field(default_factory=list)
    distribution: list[str] = Field(default_factory=list)
    partitions: int = DEFAULT_PARTITIONS
    changelog_mode: str = "append"
    options: dict[str, str] = Field(default_factory=dict)
    watermark_column: str | None = None
    watermark_expression: str | None = None  # Flink SQL of the WATERMARK FOR ... AS expression

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def upsert(self) -> bool:
        return self.changelog_mode == "upsert" and bool(self.primary_key)

    @property
    def stored_columns(self) -> list[ColumnDef]:
        return [c for c in self.columns if c.stored]

    @property
    def rowtime_column(self) -> str | None:
        """The writable METADATA FROM 'timestamp' column, whose value becomes the record time."""
        return next((c.name for c in self.stored_columns if c.metadata_key == "timestamp"), None)

    @property
    def key_columns(self) -> list[str]:
        """Columns hashed to choose a record's partition (none: round robin)."""
        return self.distribution or self.primary_key

    def column(self, name: str) -> ColumnDef | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)

    def storage_schema(self) -> T.StructType:
        fields = [T.StructField(c.name, spark_type_of(c.type)) for c in self.stored_columns]
        return T.StructType(
            fields
            + [
                T.StructField(ROWTIME, T.TimestampType()),
                T.StructField(PARTITION, T.IntegerType()),
                T.StructField(OFFSET, T.LongType()),
                T.StructField(OP, T.ByteType()),
            ]
        )


def columns_from_schema(schema: exp.Schema | None) -> tuple[list[ColumnDef], list[str], str | None]:
    """Columns, primary key and watermark column declared in a CREATE TABLE's schema."""
    columns, primary_key, watermark, _expression = schema_parts(schema)
    return columns, primary_key, watermark


def schema_parts(schema: exp.Schema | None) -> tuple[list[ColumnDef], list[str], str | None, str | None]:
    """Columns, primary key, watermark column and watermark expression of a CREATE TABLE's schema."""
    columns: list[ColumnDef] = []
    primary_key: list[str] = []
    watermark: str | None = None
    expression: str | None = None
    for item in schema.expressions if schema is not None else []:
        if isinstance(item, exp.ColumnDef):
            columns.append(column_def(item))
        elif isinstance(item, exp.PrimaryKey):
            primary_key = [e.name for e in item.expressions]
        elif isinstance(item, exp.WatermarkColumnConstraint):
            watermark = item.this.name
            expression = to_flink_sql(item.expression, comments=False) if item.expression is not None else None
    for column in columns:
        if column.name in primary_key:
            column.nullable = False
    return columns, primary_key, watermark, expression


def column_def(node: exp.ColumnDef) -> ColumnDef:
    kind = node.args.get("kind")
    column = ColumnDef(name=node.name, type=to_flink_sql(kind) if kind is not None else "")
    for constraint in node.constraints:
        kind_node = constraint.kind
        if isinstance(kind_node, exp.ComputedColumnConstraint):
            column.expression = to_flink_sql(kind_node.this)
        elif isinstance(kind_node, MetadataColumnConstraint):
            column.metadata_key = kind_node.name or node.name
            column.virtual = bool(kind_node.args.get("virtual"))
        elif isinstance(kind_node, exp.NotNullColumnConstraint) and not kind_node.args.get("allow_null"):
            column.nullable = False
        elif isinstance(kind_node, exp.PrimaryKeyColumnConstraint):
            column.nullable = False
    _check_column(column)
    return column


def _check_column(column: ColumnDef) -> None:
    if column.metadata_key is not None and column.metadata_key not in METADATA_KEYS:
        raise TableError(
            f"Column '{column.name}': metadata key '{column.metadata_key}' is not supported by the local service "
            f"(supported: {', '.join(sorted(METADATA_KEYS))})"
        )
    if column.metadata_key not in (None, *WRITABLE_METADATA) and not column.virtual:
        raise TableError(f"Column '{column.name}': metadata key '{column.metadata_key}' is read-only, "
                         f"declare it VIRTUAL")
    if column.expression is None:
        try:
            spark_type_of(column.type)
        except UnsupportedType as error:
            raise TableError(f"Column '{column.name}': {error}") from None


def table_from_create(statement: Statement, uid: str, table_id: TableId, query_columns: list[ColumnDef]) -> TableDef:
    """The definition a CREATE TABLE [AS SELECT] declares; `query_columns` are a CTAS query's output."""
    info = analyze_ddl(statement)
    create = statement.tree
    schema = create.this if isinstance(create.this, exp.Schema) else None
    declared, primary_key, watermark, watermark_expression = schema_parts(schema)
    if "kafka.partitions" in info.options:
        raise TableError(
            "The 'kafka.partitions' option is not supported anymore. Use 'DISTRIBUTED INTO n BUCKETS' instead."
        )
    names = {c.name.lower() for c in declared}
    columns = declared + [c for c in query_columns if c.name.lower() not in names]
    if not columns:
        raise TableError(f"Table '{table_id.name}' declares no columns")
    for key in primary_key + info.distribution:
        if not any(c.name.lower() == key.lower() for c in columns):
            raise TableError(f"Column '{key}' of the primary key or distribution is not a column of '{table_id.name}'")
    return TableDef(
        uid=uid,
        id=table_id,
        columns=columns,
        primary_key=primary_key,
        distribution=info.distribution,
        partitions=info.buckets or DEFAULT_PARTITIONS,
        changelog_mode=info.changelog_mode,
        options=info.options,
        watermark_column=watermark,
        watermark_expression=watermark_expression,
    )
