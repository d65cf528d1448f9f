"""INFORMATION_SCHEMA: Confluent's metadata views, answered from the catalog.

Each view has the columns, order and types Confluent Cloud declares for it
(io.confluent.flink.table.infoschema.InfoSchemaTables; the docs' "Information
Schema" page). A query over them runs on Spark like any SELECT, over rows
built here from the table definitions. Catalog = environment, schema =
database = cluster; locally an id and its name are the same string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.local.catalog import ROWTIME, TableDef
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.types import parse_type

SCHEMA_NAME = "INFORMATION_SCHEMA"
SCHEMA_ID = "db-information-schema"
YES, NO = "YES", "NO"
STRING, INT = "STRING", "INT"

Row = list[object]


@dataclass(frozen=True)
class ViewColumn:
    name: str
    type: str  # STRING or INT, the only types the information schema uses
    nullable: bool = False


def _columns(spec: str) -> tuple[ViewColumn, ...]:
    """'NAME TYPE [NULL]' comma separated -> columns (NOT NULL unless NULL is said)."""
    out = []
    for part in spec.split(","):
        words = part.split()
        out.append(ViewColumn(words[0], words[1], nullable=len(words) > 2))
    return tuple(out)


_TABLE_IDS = "TABLE_CATALOG_ID STRING, TABLE_CATALOG STRING, TABLE_SCHEMA_ID STRING, TABLE_SCHEMA STRING, " \
             "TABLE_NAME STRING"
_CONSTRAINT_IDS = "CONSTRAINT_CATALOG_ID STRING, CONSTRAINT_CATALOG STRING, CONSTRAINT_SCHEMA_ID STRING, " \
                  "CONSTRAINT_SCHEMA STRING, CONSTRAINT_NAME STRING"

VIEWS: dict[str, tuple[ViewColumn, ...]] = {
    "CATALOGS": _columns("CATALOG_ID STRING, CATALOG_NAME STRING"),
    "INFORMATION_SCHEMA_CATALOG_NAME": _columns("CATALOG_ID STRING, CATALOG_NAME STRING"),
    "SCHEMATA": _columns("CATALOG_ID STRING, CATALOG_NAME STRING, SCHEMA_ID STRING, SCHEMA_NAME STRING"),
    "DATABASES": _columns("CATALOG_ID STRING, CATALOG_NAME STRING, SCHEMA_ID STRING, SCHEMA_NAME STRING"),
    "TABLES": _columns(
        f"{_TABLE_IDS}, TABLE_TYPE STRING, IS_DISTRIBUTED STRING, DISTRIBUTION_ALGORITHM STRING NULL, "
        "DISTRIBUTION_BUCKETS INT NULL, IS_WATERMARKED STRING, WATERMARK_COLUMN STRING NULL, "
        "WATERMARK_EXPRESSION STRING NULL, WATERMARK_IS_HIDDEN STRING NULL, COMMENT STRING NULL"),
    "TABLE_OPTIONS": _columns(f"{_TABLE_IDS}, OPTION_KEY STRING, OPTION_VALUE STRING"),
    "COLUMNS": _columns(
        f"{_TABLE_IDS}, COLUMN_NAME STRING, ORDINAL_POSITION INT, IS_NULLABLE STRING, DATA_TYPE STRING, "
        "FULL_DATA_TYPE STRING, IS_HIDDEN STRING, IS_GENERATED STRING, GENERATION_EXPRESSION STRING NULL, "
        "IS_METADATA STRING, METADATA_KEY STRING NULL, IS_PERSISTED STRING, "
        "DISTRIBUTION_ORDINAL_POSITION INT NULL, COMMENT STRING NULL"),
    "TABLE_CONSTRAINTS": _columns(
        f"{_CONSTRAINT_IDS}, {_TABLE_IDS}, CONSTRAINT_TYPE STRING, ENFORCED STRING"),
    "KEY_COLUMN_USAGE": _columns(f"{_CONSTRAINT_IDS}, {_TABLE_IDS}, COLUMN_NAME STRING, ORDINAL_POSITION INT"),
}


class InfoSchemaError(ValueError):
    """A query the information schema does not answer, in Flink's words."""


def is_info_schema(table: exp.Table) -> bool:
    return isinstance(table.this, exp.Identifier) and table.db.upper() == SCHEMA_NAME


def spark_schema(view: str) -> T.StructType:
    kinds = {STRING: T.StringType(), INT: T.IntegerType()}
    return T.StructType([T.StructField(c.name, kinds[c.type], c.nullable) for c in VIEWS[view]])


# --- types as Flink prints them -------------------------------------------------------------

_ROOTS = {
    "TEXT": "VARCHAR", "VARCHAR": "VARCHAR", "NVARCHAR": "VARCHAR", "CHAR": "CHAR", "NCHAR": "CHAR",
    "BOOLEAN": "BOOLEAN", "BINARY": "BINARY", "VARBINARY": "VARBINARY", "DECIMAL": "DECIMAL",
    "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INTEGER", "BIGINT": "BIGINT", "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE", "DATE": "DATE", "TIME": "TIME", "TIMESTAMP": "TIMESTAMP", "DATETIME": "TIMESTAMP",
    "TIMESTAMPNTZ": "TIMESTAMP", "TIMESTAMPLTZ": "TIMESTAMP_LTZ", "TIMESTAMPTZ": "TIMESTAMP_LTZ",
    "ARRAY": "ARRAY", "LIST": "MULTISET", "MAP": "MAP", "STRUCT": "ROW",
}
MAX_LENGTH = 2147483647


def type_root(flink_type: str) -> str:
    """DATA_TYPE: the type root (VARCHAR for STRING, INTEGER for INT, TIMESTAMP_LTZ, ROW, ...)."""
    return _ROOTS.get(parse_type(flink_type).this.name, parse_type(flink_type).this.name)


def full_type(flink_type: str) -> str:
    """FULL_DATA_TYPE: Flink's serializable form (STRING -> VARCHAR(2147483647), TIMESTAMP_LTZ(3) ->
    TIMESTAMP(3) WITH LOCAL TIME ZONE)."""
    return _full(parse_type(flink_type))


def _full(node: exp.DataType) -> str:
    kind = node.this.name
    params = [p.this.name if isinstance(p, exp.DataTypeParam) else p.name for p in node.expressions]
    if kind in ("TEXT", "VARCHAR", "NVARCHAR"):
        return f"VARCHAR({params[0] if params else MAX_LENGTH})"
    if kind in ("CHAR", "NCHAR", "BINARY"):
        return f"{'BINARY' if kind == 'BINARY' else 'CHAR'}({params[0] if params else 1})"
    if kind == "VARBINARY":
        return f"VARBINARY({params[0] if params else MAX_LENGTH})"
    if kind == "DECIMAL":
        precision, scale = (params + ["10", "0"][len(params):])[:2]
        return f"DECIMAL({precision}, {scale})"
    if kind in ("TIMESTAMP", "DATETIME", "TIMESTAMPNTZ"):
        return f"TIMESTAMP({params[0] if params else 6})"
    if kind in ("TIMESTAMPLTZ", "TIMESTAMPTZ"):
        return f"TIMESTAMP({params[0] if params else 6}) WITH LOCAL TIME ZONE"
    if kind == "TIME":
        return f"TIME({params[0] if params else 0})"
    if kind in ("ARRAY", "LIST"):
        return f"{'ARRAY' if kind == 'ARRAY' else 'MULTISET'}<{_full(node.expressions[0])}>"
    if kind == "MAP":
        return f"MAP<{_full(node.expressions[0])}, {_full(node.expressions[1])}>"
    if kind == "STRUCT":
        fields = [f"`{f.name}` {_full(f.args['kind'])}" for f in node.expressions if isinstance(f, exp.ColumnDef)]
        return f"ROW<{', '.join(fields)}>"
    return _ROOTS.get(kind, kind) if kind != "INT" else "INT"


# --- rows -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnInfo:
    """One column of a table as the information schema and DESCRIBE show it."""

    name: str
    type: str  # Flink SQL type
    nullable: bool
    hidden: bool = False
    expression: str | None = None
    metadata_key: str | None = None
    persisted: bool = True


def table_columns(table: TableDef, computed_type: Callable[[TableDef, str], str]) -> list[ColumnInfo]:
    """Declared columns, then the system column $rowtime (hidden, METADATA FROM 'timestamp' VIRTUAL)."""
    out = []
    for column in table.columns:
        kind = column.type or computed_type(table, column.name)
        out.append(ColumnInfo(name=column.name, type=kind, nullable=column.nullable, expression=column.expression,
                              metadata_key=column.metadata_key, persisted=column.stored))
    out.append(ColumnInfo(name=ROWTIME, type="TIMESTAMP_LTZ(3)", nullable=False, hidden=True,
                          metadata_key="timestamp", persisted=False))
    return out


class Catalog:
    """The rows of every view for one catalog (the one named before .INFORMATION_SCHEMA)."""

    def __init__(self, catalog: str, tables: Iterable[TableDef],
                 computed_type: Callable[[TableDef, str], str]) -> None:
        self.catalog = catalog
        self.all_tables = list(tables)
        self.tables = [t for t in self.all_tables if t.id.catalog == catalog]
        self.computed_type = computed_type

    def catalogs(self) -> list[str]:
        return sorted({IDENTITY.environment_id} | {t.id.catalog for t in self.all_tables})

    def databases(self) -> list[str]:
        names = {t.id.database for t in self.tables}
        if self.catalog == IDENTITY.environment_id:
            names.add(IDENTITY.cluster_id)
        return sorted(names)

    def rows(self, view: str) -> list[Row]:
        builders: dict[str, Callable[[], list[Row]]] = {
            "CATALOGS": lambda: [[c, c] for c in self.catalogs()],
            "INFORMATION_SCHEMA_CATALOG_NAME": lambda: [[self.catalog, self.catalog]],
            "SCHEMATA": self._schemata,
            "DATABASES": self._schemata,
            "TABLES": self._tables,
            "TABLE_OPTIONS": self._options,
            "COLUMNS": self._columns,
            "TABLE_CONSTRAINTS": self._constraints,
            "KEY_COLUMN_USAGE": self._key_columns,
        }
        return builders[view]()

    def _ids(self, table: TableDef) -> Row:
        return [self.catalog, self.catalog, table.id.database, table.id.database, table.name]

    def _schemata(self) -> list[Row]:
        rows: list[Row] = [[self.catalog, self.catalog, d, d] for d in self.databases()]
        return rows + [[self.catalog, self.catalog, SCHEMA_ID, SCHEMA_NAME]]

    def _tables(self) -> list[Row]:
        rows: list[Row] = []
        for table in self.tables:
            distributed = bool(table.key_columns)
            watermark = table.watermark_column or ROWTIME
            expression = table.watermark_expression if table.watermark_column else "SOURCE_WATERMARK()"
            rows.append(self._ids(table) + [
                "BASE TABLE", YES if distributed else NO, "HASH" if distributed else None,
                table.partitions if distributed else None, YES, watermark, expression,
                NO if table.watermark_column else YES, None])
        for view in VIEWS:
            rows.append([self.catalog, self.catalog, SCHEMA_ID, SCHEMA_NAME, view, "VIEW", NO, None, None, NO,
                         None, None, None, None])
        return rows

    def _options(self) -> list[Row]:
        return [self._ids(t) + [k, v] for t in self.tables for k, v in sorted(t.options.items())]

    def _columns(self) -> list[Row]:
        rows: list[Row] = []
        for table in self.tables:
            keys = {k.lower(): i + 1 for i, k in enumerate(table.key_columns)}
            for position, column in enumerate(table_columns(table, self.computed_type), start=1):
                rows.append(self._ids(table) + [
                    column.name, position, YES if column.nullable else NO, type_root(column.type),
                    full_type(column.type), YES if column.hidden else NO, YES if column.expression else NO,
                    column.expression, YES if column.metadata_key else NO, column.metadata_key,
                    YES if column.persisted else NO, keys.get(column.name.lower()), None])
        return rows

    def _constraint_name(self, table: TableDef) -> str:
        return f"PK_{'_'.join(table.primary_key)}"

    def _constraints(self) -> list[Row]:
        return [[self.catalog, self.catalog, t.id.database, t.id.database, self._constraint_name(t)]
                + self._ids(t) + ["PRIMARY KEY", NO] for t in self.tables if t.primary_key]

    def _key_columns(self) -> list[Row]:
        rows: list[Row] = []
        for table in (t for t in self.tables if t.primary_key):
            for position, column in enumerate(table.primary_key, start=1):
                rows.append([self.catalog, self.catalog, table.id.database, table.id.database,
                             self._constraint_name(table)] + self._ids(table) + [column, position])
        return rows
