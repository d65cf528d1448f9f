"""The oracle corpus: one YAML file per case under corpus/, read into typed cases.

A case is Confluent Cloud Flink SQL as a user writes it: CREATE TABLE
statements (`tables`), one `INSERT INTO` (`dml`), and input rows per table
(`rows`, inserted before the DML starts; `more_rows`, inserted once it caught
up: the local engine's incremental paths). `project: <table>` takes the DML
and DDL of a table of the sample project (flink_project/pipelines) and the
DDLs of what it reads (project tables, or raw topics from flink_project/seeds).

Rows list the values of the columns an INSERT ... VALUES takes (physical and
writable METADATA columns), in declaration order, as YAML scalars, lists (ARRAY,
MULTISET) and mappings (MAP, ROW by field name); timestamps are strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlglot import exp
from sqlglot.tokens import TokenType

from shift_left_dagster.project.analysis import analyze_ddl, analyze_dml
from shift_left_dagster.project.dialect import MetadataColumnConstraint
from shift_left_dagster.project.parsing import (
    FLINK,
    Statement,
    parse_one_statement,
    parse_statements,
    to_flink_sql,
)

CORPUS = Path(__file__).parent / "corpus"
PROJECT = Path(__file__).resolve().parents[2] / "flink_project"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Flink SQL type
    expression: str | None = None  # a computed column's expression
    metadata_key: str | None = None
    virtual: bool = False

    @property
    def insertable(self) -> bool:
        """Written by INSERT ... VALUES: physical columns and writable METADATA columns."""
        return self.expression is None and not self.virtual


@dataclass(frozen=True)
class Like:
    source: str
    options: list[str]  # e.g. ["EXCLUDING ALL", "INCLUDING CONSTRAINTS"]


@dataclass(frozen=True)
class TableSpec:
    name: str
    ddl: str  # the Confluent DDL as written
    columns: list[Column]
    primary_key: list[str]
    watermark: str | None  # the WATERMARK clause (Flink SQL), if declared
    changelog_mode: str
    options: dict[str, str]
    like: Like | None = None
    distribution: list[str] = field(default_factory=list)  # DISTRIBUTED BY HASH(...) columns
    buckets: int | None = None  # DISTRIBUTED ... INTO n BUCKETS

    @property
    def partitions(self) -> int:
        """The topic's partitions (Confluent's default is 6 buckets)."""
        return self.buckets or 6

    @property
    def key_columns(self) -> list[str]:
        """The columns hashed to choose a row's partition (none: round robin)."""
        return self.distribution or self.primary_key

    @property
    def insertable(self) -> list[Column]:
        return [c for c in self.columns if c.insertable]

    @property
    def timestamp_column(self) -> str | None:
        """The column mapped to the record timestamp ($rowtime), METADATA FROM 'timestamp'."""
        return next((c.name for c in self.columns if c.metadata_key == "timestamp"), None)


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    tables: list[TableSpec]  # creation order: sources, then the sink
    dml: str
    sink: str
    rows: dict[str, list[list[Any]]] = field(default_factory=dict)
    more_rows: dict[str, list[list[Any]]] = field(default_factory=dict)
    # False: only the changelog kinds the sink received are judged, not its rows (a case or variant whose
    # rows reach Flink in an order the harness can not reproduce: drawn.idle_between; `judge: kinds` in YAML)
    judge_rows: bool = True

    def table(self, name: str) -> TableSpec:
        found = next((t for t in self.tables if t.name.lower() == name.lower()), None)
        if found is None:
            raise KeyError(f"{self.name}: no table {name}")
        return found

    @property
    def sources(self) -> list[TableSpec]:
        return [t for t in self.tables if t.name.lower() != self.sink.lower()]

    def all_rows(self, table: str) -> list[list[Any]]:
        return [*self.rows.get(table, []), *self.more_rows.get(table, [])]


def load_corpus(folder: Path = CORPUS) -> list[Case]:
    return [load_case(path) for path in sorted(folder.glob("*.yaml"))]


def load_case(path: Path) -> Case:
    body = yaml.safe_load(path.read_text())
    ddls: list[str] = []
    dml = body.get("dml")
    if body.get("project"):
        project_ddls, dml = _project_sql(body["project"])
        ddls += project_ddls
    ddls += [s.sql for s in parse_statements(body["tables"], f"{path.name}:tables")] if body.get("tables") else []
    if not dml:
        raise ValueError(f"{path.name}: no dml (give `dml`, or `project: <table>`)")
    # The DML is not parsed here: one our dialect can not read must still reach both engines.
    target, _columns, _query = split_insert(dml)
    tables = [table_spec(parse_one_statement(sql, f"{path.name}:ddl")) for sql in ddls]
    judge = body.get("judge", "rows")
    if judge not in ("rows", "kinds"):
        raise ValueError(f"{path.name}: judge: {judge!r} (write `rows`, the default, or `kinds`)")
    case = Case(name=path.stem, about=str(body.get("about", "")).strip(), tables=tables, dml=dml.strip().rstrip(";"),
                sink=target, rows=_rows(body.get("rows")), more_rows=_rows(body.get("more_rows")),
                judge_rows=judge == "rows")
    for table in [*case.rows, *case.more_rows]:
        case.table(table)  # rows of a table the case does not create are a corpus error
    case.table(case.sink)
    return case


def split_insert(dml: str) -> tuple[str, list[str] | None, str]:
    """(target, column list, query text) of an INSERT INTO, cut from the text itself (never rewritten)."""
    tokens = [t for t in FLINK.tokenize(dml) if t.token_type != TokenType.SEMICOLON]
    if len(tokens) < 3 or [t.text.upper() for t in tokens[:2]] != ["INSERT", "INTO"]:
        raise ValueError("the dml must be one INSERT INTO ... statement")
    at = 2
    while at + 2 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT:
        at += 2
    target = tokens[at].text
    at += 1
    columns = None
    if tokens[at].token_type == TokenType.L_PAREN and tokens[at + 1].text.upper() not in ("SELECT", "WITH", "VALUES"):
        end = next(i for i in range(at, len(tokens)) if tokens[i].token_type == TokenType.R_PAREN)
        columns = [t.text for t in tokens[at + 1:end] if t.token_type != TokenType.COMMA]
        at = end + 1
    return target, columns, dml[tokens[at].start:tokens[-1].end + 1]


def table_spec(statement: Statement) -> TableSpec:
    """A CREATE TABLE as the oracle needs it (columns with computed expressions, LIKE clause)."""
    info = analyze_ddl(statement)
    create = statement.tree
    definitions = {c.name: c for c in create.this.expressions if isinstance(c, exp.ColumnDef)} \
        if isinstance(create.this, exp.Schema) else {}
    columns = []
    for column in info.columns:
        node = definitions[column.name]
        expression, virtual = None, False
        for constraint in node.constraints:
            if isinstance(constraint.kind, exp.ComputedColumnConstraint):
                expression = to_flink_sql(constraint.kind.this, comments=False)
            elif isinstance(constraint.kind, MetadataColumnConstraint):
                virtual = bool(constraint.kind.args.get("virtual"))
        columns.append(Column(name=column.name, type=column.type, expression=expression,
                              metadata_key=column.metadata_key, virtual=virtual))
    like = None
    properties = create.args.get("properties")
    for prop in properties.expressions if properties else []:
        if isinstance(prop, exp.LikeProperty):
            like = Like(source=prop.this.name,
                        options=[f"{o.name.upper()} {o.text('value').upper()}" for o in prop.expressions])
    return TableSpec(name=info.table, ddl=statement.sql, columns=columns, primary_key=info.primary_key,
                     watermark=info.watermark, changelog_mode=info.changelog_mode, options=info.options, like=like,
                     distribution=info.distribution, buckets=info.buckets)


def _rows(section: dict[str, list[list[Any]]] | None) -> dict[str, list[list[Any]]]:
    return {name: [list(r) for r in rows] for name, rows in (section or {}).items()}


def _project_sql(table: str) -> tuple[list[str], str]:
    """DDLs (what the table's DML reads, then the table) and the DML of a sample-project table."""
    dml = _project_file("dml", table)
    ddls = []
    for read in analyze_dml(parse_one_statement(dml, f"dml.{table}.sql")).tables_read:
        seed = PROJECT / "seeds" / f"{read}.sql"
        if seed.is_file():
            ddls.append(parse_statements(seed.read_text(), seed.name)[0].sql)
        else:
            ddls.append(_project_file("ddl", read))
    return [*ddls, _project_file("ddl", table)], dml


def _project_file(kind: str, table: str) -> str:
    found = list((PROJECT / "pipelines").glob(f"**/sql-scripts/{kind}.{table}.sql"))
    if len(found) != 1:
        raise ValueError(f"sample project: {kind}.{table}.sql found {len(found)} times")
    return found[0].read_text()
