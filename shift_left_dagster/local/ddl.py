"""CREATE TABLE, DROP TABLE and ALTER TABLE against the catalog: they complete at once."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import cast

from sqlglot import exp

from shift_left_dagster.local.catalog import TableDef, TableError, TableId, column_def, resolve, table_from_create
from shift_left_dagster.local.like import like_clause, table_like
from shift_left_dagster.local.options import check_options
from shift_left_dagster.local.storage import TableLogs, drop_table
from shift_left_dagster.local.store import Store
from shift_left_dagster.project.parsing import Statement, to_flink_sql

SQL_KINDS = {exp.Create: "CREATE_TABLE", exp.Drop: "DROP_TABLE", exp.Alter: "ALTER_TABLE"}


class Ddl:
    def __init__(self, store: Store, logs: TableLogs) -> None:
        self.store, self.logs = store, logs

    def run(self, statement: Statement, properties: Mapping[str, str]) -> None:
        tree = statement.tree
        if isinstance(tree, exp.Create):
            self.create(statement, properties)
        elif isinstance(tree, exp.Drop):
            self._drop(tree, properties)
        elif isinstance(tree, exp.Alter):
            self._alter(tree, properties)
        else:
            raise TableError(f"{type(tree).__name__} is not a DDL statement")

    def create(self, statement: Statement, properties: Mapping[str, str],
               query_table: TableDef | None = None) -> TableDef:
        """CREATE TABLE [IF NOT EXISTS]; for CREATE TABLE AS, `query_table` carries the query's columns."""
        create = cast(exp.Create, statement.tree)  # callers pass a CREATE statement
        if create.kind == "CATALOG":
            raise TableError("CREATE CATALOG is not supported: on Confluent Cloud a catalog is an environment, "
                             "created outside Flink SQL (the local service has one, 'sql.current-catalog')")
        if create.kind != "TABLE":
            raise TableError(f"CREATE {create.kind} is not supported by the local service (only CREATE TABLE)")
        target = create.this.this if isinstance(create.this, exp.Schema) else create.this
        table_id = resolve(target, properties)
        existing = self.store.table(table_id)
        if existing is not None:
            if create.args.get("exists"):
                return existing
            raise TableError(f"Table {table_id} already exists.")
        like = like_clause(create)
        if like is not None:
            source = self.store.table(resolve(like.this, properties))
            if source is None:
                raise TableError(f"Source table '{like.this.name}' of the LIKE clause not found.")
            table = table_like(statement, uuid.uuid4().hex, table_id, source)
        else:
            columns = query_table.columns if query_table else []
            table = table_from_create(statement, uuid.uuid4().hex, table_id, columns)
        check_options(table.options)
        self.store.create_table(table)
        return table

    def _drop(self, tree: exp.Drop, properties: Mapping[str, str]) -> None:
        if (tree.args.get("kind") or "").upper() != "TABLE":
            raise TableError(f"DROP {tree.args.get('kind')} is not supported by the local service (only DROP TABLE)")
        for target in tree.args.get("tables") or [tree.this]:
            table_id = resolve(target, properties)
            table = self.store.table(table_id)
            if table is None:
                if tree.args.get("exists"):
                    continue
                raise TableError(f"Table with identifier '{_dotted(table_id)}' does not exist.")
            drop_table(self.store, self.logs.root, table.uid)

    def _alter(self, tree: exp.Alter, properties: Mapping[str, str]) -> None:
        table_id = resolve(tree.this, properties)
        table = self.store.table(table_id)
        if table is None:
            raise TableError(f"Table with identifier '{_dotted(table_id)}' does not exist.")
        for action in tree.args.get("actions") or []:
            if isinstance(action, exp.AlterSet) and all(isinstance(e, exp.EQ) for e in action.expressions):
                for pair in action.expressions:
                    table.options[pair.left.name] = pair.right.name
                check_options(table.options)
                table.changelog_mode = table.options.get("changelog.mode", table.changelog_mode)
            elif isinstance(action, (exp.Schema, exp.ColumnDef)):
                added = action.expressions if isinstance(action, exp.Schema) else [action]
                for node in added:
                    if not isinstance(node, exp.ColumnDef):
                        raise TableError(f"ALTER TABLE ADD {to_flink_sql(node)} is not supported by the local service")
                    if table.column(node.name) is not None:
                        raise TableError(f"Column '{node.name}' already exists in table '{table.name}'.")
                    table.columns.append(column_def(node))
            else:
                raise TableError(f"ALTER TABLE {to_flink_sql(action)} is not supported by the local service "
                                 f"(supported: SET (...), ADD columns)")
        self.store.replace_table(table)


def _dotted(table_id: TableId) -> str:
    return f"{table_id.catalog}.{table_id.database}.{table_id.name}"
