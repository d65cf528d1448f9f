"""What a Flink statement does, read from its AST: tables written and read, state form, schema.

Decided from the sqlglot tree, never from regexes, so comments, strings and
CTE names can not fool it.
"""

from __future__ import annotations

from sqlglot import exp

from shift_left_dagster.project.dialect import (
    Distribution,
    MetadataColumnConstraint,
    StatementSet,
    TableArgument,
)
from shift_left_dagster.project.facts import Column, DdlInfo, DmlInfo, JoinCounts, StateForm
from shift_left_dagster.project.parsing import Statement, to_flink_sql

WINDOW_TVFS = {"TUMBLE", "HOP", "CUMULATE", "SESSION"}


def table_name(table: exp.Table) -> str:
    """The project key of a table reference: its last name part (catalog/database are environment)."""
    return table.name


def analyze_ddl(statement: Statement) -> DdlInfo:
    create = statement.tree
    if not isinstance(create, exp.Create) or create.kind != "TABLE":
        raise ValueError("not a CREATE TABLE statement")
    target = create.this
    table = target.this if isinstance(target, exp.Schema) else target
    info = DdlInfo(table=table_name(table))
    if isinstance(target, exp.Schema):
        for item in target.expressions:
            if isinstance(item, exp.ColumnDef):
                info.columns.append(_column(item))
            elif isinstance(item, exp.PrimaryKey):
                info.primary_key = [e.name for e in item.expressions]
            elif isinstance(item, exp.WatermarkColumnConstraint):
                info.watermark = to_flink_sql(item, copy=False)
    for prop in (create.args.get("properties") or exp.Properties()).expressions:
        if isinstance(prop, Distribution):
            info.distribution = [e.name for e in prop.expressions or []]
            buckets = prop.args.get("buckets")
            info.buckets = int(buckets.name) if buckets is not None else None
        elif type(prop) is exp.Property:
            info.options[prop.name] = prop.text("value")
    info.changelog_mode = info.options.get(
        "changelog.mode", "upsert" if info.primary_key else "append"
    )
    query = create.expression
    if isinstance(query, exp.Query):
        info.tables_read = tables_read(query)
    return info


def _column(column: exp.ColumnDef) -> Column:
    kind = column.args.get("kind")
    computed = False
    metadata_key = None
    nullable = True
    comment = None
    for constraint in column.constraints:
        kind_node = constraint.kind
        if isinstance(kind_node, exp.CommentColumnConstraint):
            comment = kind_node.name
        elif isinstance(kind_node, exp.ComputedColumnConstraint):
            computed = True
        elif isinstance(kind_node, MetadataColumnConstraint):
            metadata_key = kind_node.name or column.name
            computed = bool(kind_node.args.get("virtual"))
        elif isinstance(kind_node, exp.NotNullColumnConstraint) and not kind_node.args.get(
            "allow_null"
        ):
            nullable = False
        elif isinstance(kind_node, exp.PrimaryKeyColumnConstraint):
            nullable = False
    return Column(
        name=column.name,
        type=to_flink_sql(kind, copy=False) if kind is not None else "",
        nullable=nullable,
        computed=computed,
        metadata_key=metadata_key,
        comment=comment,
    )


def analyze_dml(statement: Statement) -> DmlInfo:
    tree = statement.tree
    inserts = tree.expressions if isinstance(tree, StatementSet) else [tree]
    if not inserts or not all(isinstance(i, exp.Insert) for i in inserts):
        raise ValueError("expected INSERT INTO ... or EXECUTE STATEMENT SET")
    nodes = list(tree.walk())  # walked once for every question below: walks are most of the analysis
    written: list[str] = []
    read: list[str] = []
    for insert in inserts:
        target = insert.this
        target_table = target.this if isinstance(target, exp.Schema) else target
        written.append(table_name(target_table))
        read.extend(table_name(t) for t in _source_tables(nodes if insert is tree else list(insert.walk())))
    reasons = _state_reasons(nodes)
    return DmlInfo(
        tables_written=_unique(written),
        tables_read=sorted(set(read)),
        state_form=StateForm.STATEFUL if reasons else StateForm.STATELESS,
        state_reasons=reasons,
        joins=_join_counts(nodes),
    )


def source_tables(tree: exp.Expr | None) -> list[exp.Table]:
    """Table references a statement reads: not CTE names, not INSERT targets."""
    return [] if tree is None else _source_tables(list(tree.walk()))


def _source_tables(nodes: list[exp.Expr]) -> list[exp.Table]:
    ctes = {node.alias_or_name for node in nodes if isinstance(node, exp.CTE)}
    targets = set()
    for insert in (node for node in nodes if isinstance(node, exp.Insert)):
        target = insert.this
        targets.add(id(target.this if isinstance(target, exp.Schema) else target))
    return [
        table
        for table in nodes
        if isinstance(table, exp.Table) and table.name and id(table) not in targets
        and not (table.name in ctes and not table.args.get("db"))
    ]


def tables_read(tree: exp.Expr | None) -> list[str]:
    """Names of the tables a statement reads, sorted."""
    return sorted({table_name(t) for t in source_tables(tree)})


def state_reasons(tree: exp.Expression) -> list[str]:
    """Why a statement keeps state (empty: stateless). Rules from DESIGN.md, "State form"."""
    return _state_reasons(list(tree.walk()))


def _state_reasons(nodes: list[exp.Expr]) -> list[str]:
    reasons: list[str] = []

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    for node in nodes:
        if isinstance(node, exp.Join):
            if isinstance(node.this, (exp.Unnest, exp.Lateral)):
                continue  # CROSS JOIN UNNEST: one input row -> many output rows, no state
            version = node.this.args.get("version") if isinstance(node.this, exp.Table) else None
            add("temporal join" if version is not None else f"{_join_kind(node)} join")
        elif isinstance(node, exp.Exists) or isinstance(node, exp.Subquery) and not isinstance(
                node.parent, (exp.From, exp.Join)):
            add("subquery join (IN, EXISTS or a scalar subquery)")  # Flink plans a semi, anti or outer join
        elif isinstance(node, exp.Group):
            add("GROUP BY aggregation")
        elif isinstance(node, exp.Distinct) and isinstance(node.parent, exp.Select):
            add("SELECT DISTINCT")
        elif isinstance(node, exp.Window):
            function = node.this.sql_name() if isinstance(node.this, exp.Func) else "OVER"
            if isinstance(node.this, exp.RowNumber):
                add("ROW_NUMBER deduplication / top-n")
            else:
                add(f"OVER window ({function})")
        elif isinstance(node, exp.AggFunc) and not isinstance(node.parent, exp.Window):
            add("aggregate function")
        elif isinstance(node, exp.MatchRecognize):
            add("MATCH_RECOGNIZE")
        elif isinstance(node, TableArgument) and isinstance(node.parent, exp.Func):
            function = node.parent.name.upper() if isinstance(node.parent, exp.Anonymous) else ""
            add(f"window TVF {function}".strip() if function in WINDOW_TVFS else "table function")
        elif isinstance(node, exp.Union) and node.args.get("distinct"):
            add("UNION (distinct)")
        elif isinstance(node, (exp.Intersect, exp.Except)):
            add(node.key.upper())
    return reasons


def _join_kind(join: exp.Join) -> str:
    side = (join.side or "").upper()
    kind = (join.kind or "").upper()
    return " ".join(part for part in (side, kind) if part) or "inner"


def _join_counts(nodes: list[exp.Expr]) -> JoinCounts:
    counts = JoinCounts()
    for join in (node for node in nodes if isinstance(node, exp.Join)):
        if isinstance(join.this, (exp.Unnest, exp.Lateral)):
            continue
        counts.count((join.side or "").upper(), (join.kind or "").upper())
    return counts


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
