"""Statements that describe instead of run: SHOW, DESCRIBE, EXPLAIN and SELECTs over INFORMATION_SCHEMA.

Each completes at once with a bounded result, as on Confluent Cloud. EXPLAIN
compiles its statement exactly as running it would (translation and Spark
analysis against the current catalog) and executes nothing, writes nothing:
a statement that would fail to start fails its EXPLAIN with the same detail.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from shift_left_dagster.local.catalog import TableDef, TableError, TableId, resolve
from shift_left_dagster.local.info_schema import (
    VIEWS,
    Catalog,
    ColumnInfo,
    is_info_schema,
    spark_schema,
    table_columns,
)
from shift_left_dagster.local.jobs import JobError, Jobs, missing_table
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.types import decode_wire, flink_type_name, result_type, wire_column
from shift_left_dagster.project.dialect import StatementSet, split_tokens
from shift_left_dagster.project.parsing import FLINK, FlinkSqlError, Statement, parse_statements
from shift_left_dagster.translation.spark import translate_query

MAX_ROWS = 100_000


@dataclass
class Answer:
    """A completed statement's result: its sql_kind, result schema (traits) and wire-encoded rows."""

    sql_kind: str
    schema: dict[str, Any]
    rows: list[list[Any]]


def _strings(sql_kind: str, names: list[str], rows: list[list[str | None]]) -> Answer:
    columns = [{"name": n, "type": result_type(T.StringType(), True)} for n in names]
    return Answer(sql_kind, {"columns": columns}, rows)


class Introspection:
    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.spark, self.store = jobs.spark, jobs.store

    def answer(self, name: str, sql: str, properties: Mapping[str, str]) -> Answer | None:
        """The result of a describing statement; None for any other statement (it runs as usual)."""
        try:
            chunks = split_tokens(FLINK.tokenize(sql))
        except TokenError:
            return None
        if len(chunks) != 1:
            return None
        tokens = chunks[0]
        words = [t.text.upper() for t in tokens]
        if words[0] == "SHOW":  # the tokenizer reads SHOW as a command: tokenize what follows it
            after = sql[tokens[0].end + 1:tokens[-1].end + 1].strip()
            try:
                shown = [t for chunk in split_tokens(FLINK.tokenize(after)) for t in chunk]
            except TokenError as error:
                raise FlinkSqlError(name, tokens[0].line, str(error).splitlines()[0]) from None
            return self._show(name, [t.text.upper() for t in shown], shown, after, properties)
        if words[0] in ("DESCRIBE", "DESC"):
            extended = len(words) > 1 and words[1] == "EXTENDED"
            rest = tokens[2:] if extended else tokens[1:]
            target = sql[rest[0].start:rest[-1].end + 1] if rest else ""
            return self._describe(name, target, properties, extended)
        if words[0] == "EXPLAIN":  # a command token too: the statement is the text after it
            return self._explain(name, sql[tokens[0].end + 1:tokens[-1].end + 1].strip(), properties)
        if words[0] in ("SELECT", "WITH", "("):
            return self._info_query(name, sql, properties)
        return None

    # --- SHOW -----------------------------------------------------------------------------

    def _show(self, name: str, words: list[str], tokens: list, sql: str,
              properties: Mapping[str, str]) -> Answer:
        catalog = properties.get("sql.current-catalog") or IDENTITY.environment_id
        database = properties.get("sql.current-database") or IDENTITY.cluster_id
        view = Catalog(catalog, self.store.tables(), self._computed_type)
        if words == ["CATALOGS"]:
            return _strings("SHOW_CATALOGS", ["catalog name", "catalog id"], [[c, c] for c in view.catalogs()])
        if words == ["DATABASES"]:
            return _strings("SHOW_DATABASES", ["database name", "database id"], [[d, d] for d in view.databases()])
        if words == ["CURRENT", "CATALOG"]:
            return _strings("SHOW_CURRENT_CATALOG", ["current catalog name"], [[catalog]])
        if words == ["CURRENT", "DATABASE"]:
            return _strings("SHOW_CURRENT_DATABASE", ["current database name"], [[database]])
        if words[:1] == ["TABLES"]:
            return self._show_tables(name, tokens[1:], catalog, database)
        if words[:2] == ["CREATE", "TABLE"] and len(tokens) > 2:
            table = self._table(name, sql[tokens[2].start:tokens[-1].end + 1], properties)
            return _strings("SHOW_CREATE_TABLE", ["SHOW CREATE TABLE"], [[show_create_table(table)]])
        raise FlinkSqlError(name, tokens[0].line if tokens else 1,
                            f"SHOW {' '.join(words)} is not supported by the local service (supported: SHOW CATALOGS, "
                            f"DATABASES, TABLES, CREATE TABLE, CURRENT CATALOG, CURRENT DATABASE)")

    def _show_tables(self, name: str, tokens: list, catalog: str, database: str) -> Answer:
        """SHOW TABLES [FROM|IN [catalog.]database] [[NOT] LIKE 'pattern']."""
        words = [t.text.upper() for t in tokens]
        if words[:1] in (["FROM"], ["IN"]):
            parts: list[str] = []
            i = 1
            while i < len(tokens) and (not parts or tokens[i].text == "."):
                if tokens[i].text == ".":
                    i += 1
                parts.append(tokens[i].text)
                i += 1
            catalog, database = (parts[-2], parts[-1]) if len(parts) > 1 else (catalog, parts[0])
            tokens, words = tokens[i:], words[i:]
        negate = words[:1] == ["NOT"]
        if negate:
            tokens, words = tokens[1:], words[1:]
        pattern = None
        if words[:1] in (["LIKE"], ["ILIKE"]) and len(tokens) == 2:
            pattern = tokens[1].text
        elif words:
            raise FlinkSqlError(name, tokens[0].line, f"unexpected '{tokens[0].text}' in SHOW TABLES")
        names = [t.name for t in self.store.tables() if t.id.catalog == catalog and t.id.database == database]
        if pattern is not None:
            glob = pattern.replace("*", "[*]").replace("?", "[?]").replace("%", "*").replace("_", "?")
            names = [n for n in names if fnmatch.fnmatchcase(n, glob) != negate]
        return _strings("SHOW_TABLES", ["table name"], [[n] for n in sorted(names)])

    # --- DESCRIBE ---------------------------------------------------------------------------

    def _describe(self, name: str, target: str, properties: Mapping[str, str], extended: bool) -> Answer:
        table = self._table(name, target, properties)
        keys = {k.lower() for k in table.key_columns}
        primary = {k.lower() for k in table.primary_key}
        rows: list[list[str | None]] = []
        for column in table_columns(table, self._computed_type):
            if column.hidden and not extended:
                continue
            extras = []
            if column.name.lower() in primary:
                extras.append("PRIMARY KEY")
            if column.name.lower() in keys:
                extras.append("BUCKET KEY")
            extras += [e for e in [_column_extra(column)] if e]
            watermark = table.watermark_column or "$rowtime"
            if column.name == watermark and (extended or table.watermark_column):
                extras.append(f"WATERMARK AS {table.watermark_expression or 'SOURCE_WATERMARK()'}")
            rows.append([column.name, column.type, "NULL" if column.nullable else "NOT NULL",
                         ", ".join(extras) or None])
        return _strings("DESCRIBE", ["Column Name", "Data Type", "Nullable", "Extras"], rows)

    # --- EXPLAIN ----------------------------------------------------------------------------

    def _explain(self, name: str, text: str, properties: Mapping[str, str]) -> Answer:
        if text.upper().startswith("STATEMENT SET"):
            text = "EXECUTE " + text
        statements = parse_statements(text, source=name)
        if len(statements) != 1:
            raise FlinkSqlError(name, 1, f"EXPLAIN takes exactly one statement, found {len(statements)}")
        statement = statements[0]
        tree = statement.tree
        ctas = isinstance(tree, exp.Create) and tree.expression is not None
        if not (ctas or isinstance(tree, (exp.Query, exp.Insert, StatementSet))):
            raise JobError(f"EXPLAIN is supported for SELECT, INSERT INTO, STATEMENT SET and CREATE TABLE AS "
                           f"statements only, not {tree.key.upper()}.")
        if self._info_tables(tree):
            plan = _plan(self._info_frame(tree, properties))
            return _strings("EXPLAIN", ["plan"], [[f"== Information Schema Query ==\n{plan}"]])
        job = self.jobs.compile(name, statement, properties)  # what starting it does first
        if ctas:
            self._check_ctas_target(statement, properties)  # then creating its table
        sections = []
        if job.select is not None:
            frame = self.jobs.bind(job, job.select, empty=True)
            sections.append(f"== Query ==\n{_plan(frame)}")
        for sink in job.sinks:
            result = self.jobs.bind(job, sink.query, incremental=sink.incremental, empty=True)
            shaped = self.jobs.shape(result, sink, incremental=sink.incremental)
            mode = "upsert" if sink.table.upsert else sink.table.changelog_mode
            how = "incremental: new offsets only" if sink.incremental else "recomputed: changelog of the difference"
            sections.append(f"== Sink {sink.table.id} ({mode}; {how}) ==\n{_plan(shaped)}")
        return _strings("EXPLAIN", ["plan"], [["\n".join(sections)]])

    def _check_ctas_target(self, statement: Statement, properties: Mapping[str, str]) -> None:
        """What starting a CREATE TABLE AS checks before it compiles: the target must not exist."""
        create = cast(exp.Create, statement.tree)  # callers pass a CREATE statement
        target = create.this.this if isinstance(create.this, exp.Schema) else create.this
        table_id = resolve(target, properties)
        if create.kind != "TABLE":
            raise TableError(f"CREATE {create.kind} is not supported by the local service (only CREATE TABLE)")
        if self.store.table(table_id) is not None and not create.args.get("exists"):
            raise TableError(f"Table {table_id} already exists.")

    # --- INFORMATION_SCHEMA ---------------------------------------------------------------------

    def _info_query(self, name: str, sql: str, properties: Mapping[str, str]) -> Answer | None:
        try:
            statements = parse_statements(sql, source=name)
        except FlinkSqlError:
            return None  # the ordinary path reports it
        if len(statements) != 1 or not self._info_tables(statements[0].tree):
            return None
        frame = self._info_frame(statements[0].tree, properties)
        schema = frame.schema
        wired = frame.select(*[wire_column(f.name, f.dataType).alias(f"c{i}") for i, f in enumerate(schema.fields)])
        rows = [[decode_wire(row[i], f.dataType) for i, f in enumerate(schema.fields)]
                for row in wired.limit(MAX_ROWS).collect()]
        columns = [{"name": f.name, "type": result_type(f.dataType, f.nullable)} for f in schema.fields]
        return Answer("SELECT", {"columns": columns}, rows)

    @staticmethod
    def _info_tables(tree: exp.Expression) -> list[exp.Table]:
        """The INFORMATION_SCHEMA views a query reads; a query mixing them with tables is refused."""
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        tables = [t for t in tree.find_all(exp.Table) if isinstance(t.this, exp.Identifier)
                  and not (not t.db and t.name in ctes)]
        info = [t for t in tables if is_info_schema(t)]
        if info and len(info) != len(tables):
            raise JobError("INFORMATION_SCHEMA views can only be queried on their own: they can not be joined or "
                           "combined with regular tables.")
        if info and not isinstance(tree, exp.Query):
            raise JobError("INFORMATION_SCHEMA views can only be used in SELECT statements, not in "
                           f"{tree.key.upper()} statements.")
        return info

    def _info_frame(self, tree: exp.Expression, properties: Mapping[str, str]) -> DataFrame:
        """The query over the views, each bound to its rows for the catalog it names (else the current one)."""
        def view_of(table: exp.Table) -> str:
            view = table.name.upper()
            if view not in VIEWS:
                raise missing_table(TableId(catalog=table.catalog or "-", database=table.db, name=table.name))
            return view

        query = translate_query(tree, lambda t: [c.name for c in VIEWS[view_of(t)]])
        tables = self.store.tables()
        for scan in query.scans:
            view = view_of(scan.table)
            catalog = Catalog(scan.table.catalog or properties.get("sql.current-catalog") or IDENTITY.environment_id,
                              tables, self._computed_type)
            if catalog.catalog not in catalog.catalogs():
                raise JobError(f"Catalog '{catalog.catalog}' does not exist or you do not have permission to "
                               f"access it.")
            self.spark.createDataFrame(catalog.rows(view), spark_schema(view)).createOrReplaceTempView(scan.view)
        return self.spark.sql(query.sql)

    # --- helpers -------------------------------------------------------------------------------

    def _table(self, name: str, text: str, properties: Mapping[str, str]) -> TableDef:
        try:
            node = exp.to_table(text.strip().rstrip(";"), dialect=FLINK)
        except (ParseError, TokenError, ValueError) as error:
            raise FlinkSqlError(name, 1, f"expected a table name, found '{text[:200]}': {error}") from None
        table_id = resolve(node, properties)
        table = self.store.table(table_id)
        if table is None:
            raise missing_table(table_id)
        return table

    def _computed_type(self, table: TableDef, column: str) -> str:
        """A computed or METADATA column's type: what Spark derives for its expression."""
        field = next(f for f in self.jobs.views.state(table).schema.fields if f.name == column)
        return flink_type_name(field.dataType)


def _column_extra(column: ColumnInfo) -> str | None:
    if column.expression is not None:
        return f"AS {column.expression}"
    if column.metadata_key is not None:
        return f"METADATA FROM '{column.metadata_key}'" + ("" if column.persisted else " VIRTUAL")
    return None


def _plan(frame: DataFrame) -> str:
    """The optimized logical plan: what the statement would compute, nothing run."""
    return str(frame._jdf.queryExecution().optimizedPlan().toString()).rstrip()


def show_create_table(table: TableDef) -> str:
    """The table's DDL as SHOW CREATE TABLE prints it (connector 'confluent', explicit changelog mode)."""
    lines = []
    for column in table.columns:
        if column.expression is not None:
            lines.append(f"`{column.name}` AS {column.expression}")
            continue
        text = f"`{column.name}` {column.type}" + ("" if column.nullable else " NOT NULL")
        if column.metadata_key is not None:
            text += f" METADATA FROM '{column.metadata_key}'" + (" VIRTUAL" if column.virtual else "")
        lines.append(text)
    if table.watermark_column:
        lines.append(f"WATERMARK FOR `{table.watermark_column}` AS {table.watermark_expression}")
    if table.primary_key:
        keys = ", ".join(f"`{k}`" for k in table.primary_key)
        lines.append(f"PRIMARY KEY ({keys}) NOT ENFORCED")
    body = ",\n".join(f"  {line}" for line in lines)
    text = f"CREATE TABLE {table.id} (\n{body}\n)"
    if table.key_columns:
        keys = ", ".join(f"`{k}`" for k in table.key_columns)
        text += f"\nDISTRIBUTED BY HASH({keys}) INTO {table.partitions} BUCKETS"
    else:
        text += f"\nDISTRIBUTED INTO {table.partitions} BUCKETS"
    options = {"changelog.mode": table.changelog_mode, "connector": "confluent", **table.options}
    pairs = ",\n".join(f"  '{k}' = '{_quote(v)}'" for k, v in sorted(options.items()))
    return f"{text}\nWITH (\n{pairs}\n)"


def _quote(value: str) -> str:
    return value.replace("'", "''")

