"""Column-level lineage: which parent columns each column of a table is computed from.

sqlglot does the work: stars become the visible columns by the translator's rule
(project/stars.py), `qualify` with a schema built from the parents' DDLs
qualifies every column, `sqlglot.lineage` walks CTEs,
subqueries, joins, set operations and UNNEST. Flink's window TVFs are first
rewritten into the derived table they stand for (the source's columns plus
window_start/window_end/window_time computed from the DESCRIPTOR column).
A column that cannot be traced is reported as unknown with a reason: a
lineage problem never stops a project from loading.

Results are kept on disk by the hash of what they depend on (the DML, the
table's columns, the parents' columns, this module), as the inventory keeps
its analyses, so loading definitions does not re-trace unchanged tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any, NamedTuple, cast

import sqlglot
from pydantic import BaseModel, Field
from sqlglot import exp
from sqlglot.dialects.dialect import NormalizationStrategy
from sqlglot.lineage import Node, lineage
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import build_scope
from sqlglot.schema import MappingSchema

from shift_left_dagster.project import stars
from shift_left_dagster.project.analysis import WINDOW_TVFS
from shift_left_dagster.project.dialect import Flink, StatementSet, TableArgument
from shift_left_dagster.project.errors import ProjectError
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import batches, paused_gc
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement
from shift_left_dagster.project.stars import expand_stars

ROWTIME = "$rowtime"  # Confluent's system column: readable on every table, never part of SELECT *
WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
QUOTED_LAST = re.compile(r'"((?:[^"]|"")*)"$')


class FlinkLineage(Flink):
    """Flink identifiers are case-sensitive: keep them as written while qualifying."""

    NORMALIZATION_STRATEGY = NormalizationStrategy.CASE_SENSITIVE


DIALECT = FlinkLineage()


class ParentColumn(NamedTuple):
    table: str  # a project table, or a raw topic the project reads
    column: str


class TableLineage(BaseModel):
    """Target column -> the parent columns it is computed from (empty: from none, e.g. COUNT(*) or a literal)."""

    table: str
    columns: dict[str, list[ParentColumn]] = Field(default_factory=dict)
    unknown: dict[str, str] = Field(default_factory=dict)  # target column -> why it could not be traced


def compute_lineage(
    table: str, dml_sql: str, columns: Sequence[str] | None, schemas: Mapping[str, Sequence[str]]
) -> TableLineage:
    """Lineage of `table` from its DML; `columns` are the DDL's written columns (None: no DDL), `schemas`
    the column names of the tables the DML reads (a table missing here has an unknown schema)."""
    try:
        return _lineage(table, dml_sql, columns, schemas)
    except Exception as error:  # noqa: BLE001 - the last resort: a lineage bug must not stop a project loading
        return _unknown(table, columns or [], f"lineage failed: {type(error).__name__}: {error}")


def _lineage(
    table: str, dml_sql: str, columns: Sequence[str] | None, schemas: Mapping[str, Sequence[str]]
) -> TableLineage:
    try:
        tree = parse_one_statement(dml_sql, f"dml of {table}").tree
    except FlinkSqlError as error:
        return _unknown(table, columns or [], f"the DML does not parse: {error}")
    statements = tree.expressions if isinstance(tree, StatementSet) else [tree]
    inserts = [s for s in statements if isinstance(s, exp.Insert) and _target(s).name == table]
    if not inserts:
        return _unknown(table, columns or [], f"the DML does not insert into {table}")
    parts = [_insert_lineage(insert, columns, schemas) for insert in inserts]
    result = TableLineage(table=table)
    for name in dict.fromkeys(c for part in parts for c in [*part.columns, *part.unknown]):
        reasons = [part.unknown[name] for part in parts if name in part.unknown]
        if reasons:
            result.unknown[name] = "; ".join(dict.fromkeys(reasons))
        else:
            result.columns[name] = sorted({p for part in parts for p in part.columns.get(name, [])})
    return result


def _insert_lineage(
    insert: exp.Insert, columns: Sequence[str] | None, schemas: Mapping[str, Sequence[str]]
) -> TableLineage:
    """One INSERT: the query's outputs mapped to the target columns by position (or by its column list)."""
    target = insert.this
    table = _target(insert).name
    explicit = [c.name for c in target.expressions] if isinstance(target, exp.Schema) else []
    query = insert.expression
    if isinstance(query, exp.Values):  # literals: from no column
        return TableLineage(table=table, columns={name: [] for name in dict.fromkeys([*(columns or []), *explicit])})
    if not isinstance(query, exp.Query):
        return _unknown(table, explicit or columns or [], "the INSERT does not read a query")
    if query.find(exp.MatchRecognize):
        return _unknown(table, explicit or columns or [], "MATCH_RECOGNIZE is not traced (its outputs are "
                                                          "partition columns and measures)")
    schema = _schema(schemas)
    try:
        qualified = _qualified(query, schema, schemas)
        selects = qualified.selects
        if explicit or columns is not None:
            written = explicit or list(columns or [])
        else:
            written = [s.alias_or_name for s in selects]
        unexpanded = [s for s in selects if isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star)]
        if unexpanded:
            sources = ", ".join(sorted({t.name for t in qualified.find_all(exp.Table)})) or "its sources"
            return _unknown(table, written, f"SELECT * over {sources}, whose columns are unknown (no DDL)")
        if len(selects) != len(written):
            return _unknown(table, written, f"the query returns {len(selects)} columns for the "
                                            f"{len(written)} written of {table}")
        nodes = lineage(None, qualified, schema, dialect=DIALECT, scope=build_scope(qualified), copy=False,
                        trim_selects=False)  # trimming copies every select: half the time, unused
    except Exception as error:  # noqa: BLE001 - sqlglot raises many kinds; lineage must never break a load
        return _unknown(table, explicit or columns or [], f"sqlglot cannot trace the query: {error}")
    assert isinstance(nodes, dict)  # lineage(None, ...) maps every output to its node
    result = TableLineage(table=table)
    names = [s.alias_or_name for s in selects]
    for position, name in enumerate(written):
        output = names[position]
        if names.count(output) > 1:
            result.unknown[name] = f"the query returns {output!r} more than once"
            continue
        parents, problem = _parents(nodes[output], schemas)
        if problem:
            result.unknown[name] = problem
        else:
            result.columns[name] = parents
    for name in columns or []:  # not in the INSERT's column list: written NULL, from no column
        if name not in written:
            result.columns[name] = []
    if columns:  # the DDL's order
        order = {name: i for i, name in enumerate([*columns, *written])}
        result.columns = dict(sorted(result.columns.items(), key=lambda item: order[item[0]]))
    return result


def _qualified(query: exp.Query, schema: MappingSchema, schemas: Mapping[str, Sequence[str]]) -> exp.Query:
    for table in query.find_all(exp.Table):  # project keys are last name parts; catalog/db are environment
        table.set("db", None)
        table.set("catalog", None)
    _rewrite_window_tvfs(query)
    expand_stars(query, lambda table: schemas.get(table.name))  # the translator's rule; unknown tables stay `*`
    return qualify(query, dialect=DIALECT, schema=schema, validate_qualify_columns=False, identify=False,
                   expand_alias_refs=False)  # Flink resolves WHERE/GROUP BY names to columns, not aliases


def _rewrite_window_tvfs(query: exp.Query) -> None:
    """TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), ...)) AS w -> (SELECT t.*, t.ts AS window_start, ... FROM t) AS w."""
    for table in list(query.find_all(exp.Table)):
        call = table.this
        tvf = call.expressions[0] if isinstance(call, exp.Anonymous) and call.expressions else None
        if not (isinstance(tvf, exp.Anonymous) and tvf.name.upper() in WINDOW_TVFS):
            continue
        source = next((a.this for a in tvf.expressions if isinstance(a, TableArgument)), None)
        descriptor = next((a for a in tvf.expressions if isinstance(a, exp.Anonymous)
                           and a.name.upper() == "DESCRIPTOR" and a.expressions), None)
        if not isinstance(source, exp.Table) or descriptor is None:
            continue  # left as is: the columns it yields are reported unknown
        name = source.name
        time = exp.column(descriptor.expressions[0].name, table=name)
        select = exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(name)),
                            *(exp.alias_(time.copy(), w) for w in WINDOW_COLUMNS)).from_(source.copy())
        table.replace(select.subquery(table.alias or name))


def _parents(node: Node, schemas: Mapping[str, Sequence[str]]) -> tuple[list[ParentColumn], str | None]:
    """The table columns at the leaves of a lineage node, or why they can't be named."""
    found: set[ParentColumn] = set()
    for leaf in node.walk():
        if leaf.downstream:
            continue
        source = leaf.source
        if leaf.name == "*" or leaf.name.endswith(".*"):
            what = source.name if isinstance(source, exp.Table) else "a subquery"
            return [], f"SELECT * over {what}, whose columns are unknown (no DDL)"
        if isinstance(source, exp.Placeholder):
            return [], f"cannot tell which table {leaf.name} comes from (a source without DDL?)"
        if isinstance(source, exp.Table):
            if not isinstance(source.this, exp.Identifier):
                return [], f"computed by the table function {source.this.sql(dialect=DIALECT)}"
            column = _column_name(leaf.name)
            if source.name in schemas and column not in schemas[source.name] and column != ROWTIME:
                return [], f"{source.name} has no column {column}"
            found.add(ParentColumn(source.name, column))
        # any other leaf is an expression of no column: a literal, COUNT(*), CURRENT_TIMESTAMP
    return sorted(found), None


def _column_name(text: str) -> str:
    """`alias.column` as sqlglot writes a leaf (default dialect: "..." quotes) -> column, without a parse."""
    quoted = QUOTED_LAST.search(text)
    return quoted.group(1).replace('""', '"') if quoted else text.rsplit(".", 1)[-1]


def _schema(schemas: Mapping[str, Sequence[str]]) -> MappingSchema:
    """Every column plus $rowtime, which stays out of star expansion (it is not visible)."""
    mapping: dict[str, object] = {table: {**dict.fromkeys(cols, "UNKNOWN"), ROWTIME: "UNKNOWN"}
                                  for table, cols in schemas.items()}
    visible: dict[str, object] = {table: set(cols) for table, cols in schemas.items()}
    return MappingSchema(mapping, visible=visible, dialect=DIALECT)


def _target(insert: exp.Insert) -> exp.Table:
    target = insert.this
    return target.this if isinstance(target, exp.Schema) else target


def _unknown(table: str, columns: Sequence[str], reason: str) -> TableLineage:
    return TableLineage(table=table, unknown=dict.fromkeys(columns, reason))


# -- a project's tables, cached ---------------------------------------------------------------


class LineageCacheFile(BaseModel):
    version: str
    entries: dict[str, TableLineage]
    # when every table of one inventory was traced: its source and each table's entry, so a load of that
    # same inventory finds its tables' entries without computing their keys (Inventory.source)
    inventory: str = ""
    tables: dict[str, str] = Field(default_factory=dict)


def lineage_version() -> str:
    """Changes with this module, the star rule or sqlglot: cache entries of another version are never read."""
    digest = hashlib.blake2b(sqlglot.__version__.encode(), digest_size=12)
    for module in (__file__, cast(str, stars.__file__)):  # a source module: never None
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()


class ProjectLineage:
    """The lineage of a graph's tables, traced on demand, kept on disk by content hash."""

    def __init__(self, graph: ProjectGraph):
        self.graph = graph
        base = os.environ.get("SHIFT_LEFT_DAGSTER_CACHE")
        self.file = (Path(base) if base else graph.inventory.root / ".shift_left_dagster" / "cache") / "lineage.json"
        self.version = lineage_version()
        self.stored: dict[str, TableLineage] = {}
        self.used: dict[str, TableLineage] = {}
        self.memo: dict[str, TableLineage] = {}
        self.every: dict[str, TableLineage] | None = None
        self.keys: dict[str, str] = {}  # table -> its entry's key, once known
        self.stored_for: tuple[str, dict[str, str]] = ("", {})  # LineageCacheFile.inventory and .tables
        try:
            with paused_gc():  # thousands of small models, no cycles (as the inventory's cache)
                data = LineageCacheFile.model_validate_json(self.file.read_bytes())
            if data.version == self.version:
                self.stored, self.stored_for = data.entries, (data.inventory, data.tables)
        except (OSError, ValueError):
            pass

    def of(self, name: str) -> TableLineage:
        if name not in self.memo:
            self.graph.require(name)
            job = self._job(name)
            key = self.keys[name] = _key(job)
            found = self.stored.get(key)
            self.used[key] = self.memo[name] = found if found is not None else _trace(job)
        return self.memo[name]

    def all(self) -> dict[str, TableLineage]:
        """Every table, traced once (on every core when many changed), the cache saved: what definitions read."""
        if self.every is None and self._stored_for_this_inventory():
            self.keys = dict(self.stored_for[1])
            self.used = {key: self.stored[key] for key in self.keys.values()}
            self.memo = {name: self.stored[key] for name, key in self.keys.items()}
            self.every = {name: self.memo[name] for name in self.graph.tables}
        if self.every is None:
            jobs = {_key(job): job for job in (self._job(n) for n in self.graph.tables if n not in self.memo)}
            missing = [job for key, job in jobs.items() if key not in self.stored]
            traced = {result.table: result for result in _trace_all(missing)}
            for key, job in jobs.items():
                self.used[key] = self.memo[job[0]] = traced[job[0]] if key not in self.stored else self.stored[key]
                self.keys[job[0]] = key
            self.every = {name: self.memo[name] for name in self.graph.tables}
            self.save()
        return self.every

    def _stored_for_this_inventory(self) -> bool:
        """The cache was saved once every table of this very inventory was traced, and holds their entries."""
        source, tables = self.stored_for
        return (bool(source) and source == self.graph.inventory.source and not self.memo
                and tables.keys() == self.graph.tables.keys() and all(k in self.stored for k in tables.values()))

    def save(self) -> None:
        """Write what was traced; once every table was visited, only their entries (stale ones go), with the
        inventory they are of."""
        every = len(self.memo) == len(self.graph.tables)
        entries = dict(self.used) if every else {**self.stored, **self.used}
        stored_for = (self.graph.inventory.source, dict(self.keys)) if every else ("", {})
        if entries.keys() == self.stored.keys() and stored_for == self.stored_for:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.file.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(LineageCacheFile(version=self.version, entries=entries, inventory=stored_for[0],
                                                  tables=stored_for[1]).model_dump_json())
            os.replace(temporary, self.file)  # atomic: a concurrent reader sees old or new
            self.stored, self.stored_for = entries, stored_for
        except OSError:
            pass  # a read-only project still loads: the cache only saves time

    def _job(self, name: str) -> Job:
        """What a table's lineage depends on: its DML, its written columns, the columns of what it reads."""
        table = self.graph.tables[name]
        columns = [c.name for c in table.ddl.columns if not c.computed] if table.ddl and table.ddl.columns else None
        schemas = {}
        for parent in table.dml.tables_read if table.dml else []:
            ddl = self.graph.tables[parent].ddl if parent in self.graph.tables else None
            if ddl is not None and ddl.columns:  # no columns (CREATE TABLE ... LIKE): schema unknown, not empty
                schemas[parent] = [c.name for c in ddl.columns]
        return name, table.dml_sql, columns, schemas


Job = tuple[str, str | None, list[str] | None, dict[str, list[str]]]  # name, DML, written columns, schemas read


def _key(job: Job) -> str:
    name, dml, columns, schemas = job
    digest = hashlib.blake2b(digest_size=16)
    for part in (name, dml or "", repr(columns), repr(sorted(schemas.items()))):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def _trace(job: Job) -> TableLineage:
    name, dml, columns, schemas = job
    if not dml:
        return TableLineage(table=name)  # written outside the project: nothing to trace
    return compute_lineage(name, dml, columns, schemas)


def _trace_batch(jobs: list[Job]) -> list[TableLineage]:
    return [_trace(job) for job in jobs]


PARALLEL_THRESHOLD = 64  # below this, starting processes costs more than it saves (as the inventory's)


def _trace_all(jobs: list[Job]) -> list[TableLineage]:
    workers = os.cpu_count() or 1
    if len(jobs) < PARALLEL_THRESHOLD or workers == 1:
        return _trace_batch(jobs)
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
        return [result for part in pool.map(_trace_batch, batches(jobs, workers)) for result in part]


def project_lineage(graph: ProjectGraph) -> ProjectLineage:
    """One ProjectLineage per graph, so every asset of a definitions build shares it; kept on the graph, so
    it is freed with it (a weak-keyed table would never free either: the lineage holds its graph)."""
    found = graph.derived.get(ProjectLineage)
    if not isinstance(found, ProjectLineage):
        found = graph.derived[ProjectLineage] = ProjectLineage(graph)
    return found


def table_lineage(graph: ProjectGraph, name: str) -> TableLineage:
    return project_lineage(graph).of(name)


# -- reports (the CLI's) ----------------------------------------------------------------------


def lineage_report(traced: ProjectLineage, table: str, column: str | None = None) -> dict[str, Any]:
    """A table's columns with their parent columns; or one column traced up to the raw topics."""
    result = traced.of(table)
    if column is not None:
        if column not in result.columns and column not in result.unknown:
            raise ProjectError([f"unknown column {column!r}: {table} has {', '.join(_order(traced, table))}"])
        return _trace_column(traced, table, column)
    columns = {}
    for name in _order(traced, table):
        parents = [{"table": p.table, "column": p.column} for p in result.columns.get(name, [])]
        columns[name] = {"parents": parents, "unknown": result.unknown.get(name)}
    return {"table": table, "columns": columns}


def _trace_column(traced: ProjectLineage, table: str, column: str) -> dict[str, Any]:
    if table not in traced.graph.tables:
        return {"table": table, "column": column, "external": True, "unknown": None, "parents": []}
    result = traced.of(table)
    parents = [_trace_column(traced, p.table, p.column) for p in result.columns.get(column, [])]
    return {"table": table, "column": column, "external": False, "unknown": result.unknown.get(column),
            "parents": parents}


def _order(traced: ProjectLineage, table: str) -> list[str]:
    """The DDL's column order (unknown columns in their place)."""
    result = traced.of(table)
    ddl = traced.graph.tables[table].ddl
    named = [c.name for c in ddl.columns] if ddl else []
    found = {*result.columns, *result.unknown}
    return [n for n in named if n in found] + [n for n in [*result.columns, *result.unknown] if n not in named]


def render_lineage(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2)
    if fmt != "tree":
        raise ValueError(f"unknown format {fmt!r}: use json or tree")
    if "columns" not in report:
        return "\n".join(_column_lines(report, root=True))
    lines = [report["table"]]
    entries = list(report["columns"].items())
    for index, (name, entry) in enumerate(entries):
        sources = ", ".join(f"{p['table']}.{p['column']}" for p in entry["parents"]) or "(no column)"
        text = f"{name} ? unknown: {entry['unknown']}" if entry["unknown"] else f"{name} <- {sources}"
        lines.append(("└── " if index == len(entries) - 1 else "├── ") + text)
    return "\n".join(lines)


def _column_lines(node: dict[str, Any], root: bool = False) -> list[str]:
    label = f"{node['table']}.{node['column']}"
    lines = [label if root else f"<- {label}"]
    branches = [_column_lines(p) for p in node["parents"]]
    if node["unknown"]:
        branches.append([f"? unknown: {node['unknown']}"])
    for index, sub in enumerate(branches):
        last = index == len(branches) - 1
        lines.append(("└── " if last else "├── ") + sub[0])
        lines.extend(("    " if last else "│   ") + line for line in sub[1:])
    return lines
