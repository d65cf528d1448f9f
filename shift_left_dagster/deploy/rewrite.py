"""Small AST transforms applied to a table's SQL at deploy time; the git files are never rewritten.

As in sqlglot, each transform is a small function over the tree.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlglot import exp

from shift_left_dagster.project.analysis import source_tables
from shift_left_dagster.project.dialect import OptionsHint
from shift_left_dagster.project.parsing import parse_one_statement, to_flink_sql


def with_source_options(sql: str, options_by_table: dict[str, dict[str, str]]) -> str:
    """Add (or override) `/*+ OPTIONS(...) */` hints on the named source tables of a DML."""
    tree = parse_one_statement(sql).tree
    for table in source_tables(tree):
        wanted = options_by_table.get(table.name)
        if not wanted:
            continue
        hints = table.args.get("hints") or []
        current = hints[0].options if hints and isinstance(hints[0], OptionsHint) else {}
        merged = {**current, **wanted}
        table.set(
            "hints",
            [OptionsHint(expressions=[
                exp.Property(this=exp.Literal.string(k), value=exp.Literal.string(v)) for k, v in merged.items()
            ])],
        )
    return to_flink_sql(tree)


def source_options(sql: str) -> dict[str, dict[str, str]]:
    """Each source table a DML reads, with the `/*+ OPTIONS(...) */` hints on it (what `with_source_options`
    set: e.g. where a reprocessed version starts reading)."""
    found: dict[str, dict[str, str]] = {}
    for table in source_tables(parse_one_statement(sql).tree):
        hints = table.args.get("hints") or []
        found[table.name] = hints[0].options if hints and isinstance(hints[0], OptionsHint) else {}
    return found


def reads_from(sql: str) -> datetime | None:
    """Where a DML starts reading its sources (a reprocessed version's T, from its `scan.startup.mode` =
    `timestamp` hints); None: from earliest."""
    starts = [int(options["scan.startup.timestamp-millis"]) for options in source_options(sql).values()
              if options.get("scan.startup.mode") == "timestamp" and "scan.startup.timestamp-millis" in options]
    return datetime.fromtimestamp(min(starts) / 1000, UTC) if starts else None


def queries_of(sql: str) -> list[str]:
    """The queries a DML runs (one per INSERT of a statement set), as Flink SQL: what EXPLAIN validates
    without needing the sink table in its new shape."""
    tree = parse_one_statement(sql).tree
    return [to_flink_sql(insert.expression) for insert in tree.find_all(exp.Insert)]


def with_insert_columns(sql: str, columns: list[str]) -> str:
    """`INSERT INTO t SELECT ...` -> `INSERT INTO t (c1, c2, ...) SELECT ...`: the statement writes these
    columns only (the others are NULL), so it still runs after nullable columns were added."""
    tree = parse_one_statement(sql).tree
    for insert in tree.find_all(exp.Insert):
        target = insert.this
        if isinstance(target, exp.Table):
            insert.set("this", exp.Schema(this=target, expressions=[exp.to_identifier(c) for c in columns]))
    return to_flink_sql(tree)


def specific_offsets_options(offsets: dict[int, int]) -> dict[str, str]:
    """The hint that starts a source at the given per-partition offsets."""
    spec = ";".join(f"partition:{p},offset:{o}" for p, o in sorted(offsets.items()))
    return {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": spec}


def rename_tables(sql: str, mapping: dict[str, str]) -> str:
    """Rename tables everywhere in a statement (targets included): blue/green versions."""
    tree = parse_one_statement(sql).tree
    for table in tree.find_all(exp.Table):
        if table.name in mapping:
            table.set("this", exp.to_identifier(mapping[table.name]))
    return to_flink_sql(tree)


def with_schema_context(sql: str, context: str) -> str:
    """A CREATE TABLE whose key/value formats use Schema Registry gets `<key|value>.<format>.schema-context`
    = `context` (shift_left's schema-context rule): the subjects live in this environment's context.
    A format not backed by the registry (json, raw) is left alone."""
    tree = parse_one_statement(sql).tree
    properties = tree.args.get("properties") if isinstance(tree, exp.Create) else None
    if properties is None:
        return sql
    options = {p.this.name: p for p in properties.expressions
               if isinstance(p, exp.Property) and isinstance(p.this, exp.Literal)}
    for part in ("key", "value"):
        fmt = options.get(f"{part}.format")
        fmt_name = fmt.args["value"].name if fmt is not None else ("avro-registry" if part == "value" else "")
        if not fmt_name.endswith("-registry"):
            continue
        key = f"{part}.{fmt_name}.schema-context"
        if key in options:
            options[key].set("value", exp.Literal.string(context))
        else:
            properties.append("expressions", exp.Property(this=exp.Literal.string(key),
                                                          value=exp.Literal.string(context)))
    return to_flink_sql(tree)
