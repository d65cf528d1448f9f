"""A table's SQL made to run on `_ut` twins: every project table it names gets the postfix.

Files written for shift_left name `<table>_ut` already, others name the
tables themselves: both end up on `<table><postfix>`.
"""

from __future__ import annotations

import csv
import io

from sqlglot import exp

from shift_left_dagster.project.parsing import parse_one_statement, split_statements, to_flink_sql


def twins(tables: list[str], postfix: str) -> dict[str, str]:
    """Each table (and its `_ut` spelling) -> its test twin."""
    mapping: dict[str, str] = {}
    for table in tables:
        mapping[table] = mapping[f"{table}_ut"] = f"{table}{postfix}"
    return mapping


def on_twins(text: str, mapping: dict[str, str], source: str = "<sql>") -> list[str]:
    """Every statement of `text` with its tables renamed (catalog and database dropped: twins live in
    the service's default database)."""
    renamed = []
    for sql, _line in split_statements(text, source):
        tree = parse_one_statement(sql, source).tree
        for table in tree.find_all(exp.Table):
            target = mapping.get(table.name) or mapping.get(table.name.lower())
            if target:
                table.set("this", exp.to_identifier(target))
                table.set("db", None)
                table.set("catalog", None)
        renamed.append(to_flink_sql(tree))
    return renamed


def csv_insert(table: str, text: str, types: dict[str, str]) -> str:
    """INSERT ... VALUES of a csv file (a header row, then rows): each value cast to its column's type,
    an empty field is NULL."""
    reader = csv.reader(io.StringIO(text.strip()))
    header = [h.strip() for h in next(reader)]
    lowered = {k.lower(): v for k, v in types.items()}
    rows = []
    for values in reader:
        if not values:
            continue
        cells = []
        for name, value in zip(header, values, strict=False):  # a ragged row: pairs up to the shorter
            kind = lowered.get(name.lower(), "STRING")
            text_value = value.strip()
            literal = "NULL" if text_value == "" else "'" + text_value.replace("'", "''") + "'"
            cells.append(f"CAST({literal} AS {kind})")
        rows.append("(" + ", ".join(cells) + ")")
    columns = ", ".join(f"`{h}`" for h in header)
    return f"INSERT INTO {table} ({columns}) VALUES\n" + ",\n".join(rows)
