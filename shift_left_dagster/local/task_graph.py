"""GET .../statements/{name}/task-graph: the query profile's task graph of a running statement.

Confluent answers `{"Graph": "<JSON text>"}` whose document holds `tasks`,
each with `task_id`, `task_name`, `input_tasks` and `included_operators`.
Locally a statement is one source task per table it reads and one task per
sink, fed by the sources its query reads (stateful ones named after why they
keep state).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlglot import exp

from shift_left_dagster.project.analysis import state_reasons, table_name, tables_read
from shift_left_dagster.project.dialect import StatementSet
from shift_left_dagster.project.parsing import FlinkSqlError, parse_statements


def _task_id(statement: str, name: str) -> str:
    return hashlib.md5(f"{statement}/{name}".encode()).hexdigest()  # noqa: S324 - an id, not a secret


def task_graph(statement: str, sql: str) -> dict[str, Any] | None:
    """The task graph document of a statement's SQL (None when it has no query to profile)."""
    try:
        parsed = parse_statements(sql, source=statement)
    except FlinkSqlError:
        return None
    if len(parsed) != 1:
        return None
    tree = parsed[0].tree
    if isinstance(tree, StatementSet):
        sinks = [(table_name(_target(i)), i.expression) for i in tree.expressions]
    elif isinstance(tree, exp.Insert):
        sinks = [(table_name(_target(tree)), tree.expression)]
    elif isinstance(tree, exp.Create) and tree.expression is not None:
        sinks = [(table_name(_target(tree)), tree.expression)]
    elif isinstance(tree, exp.Query):
        sinks = [("(results)", tree)]
    else:
        return None
    tasks: list[dict[str, Any]] = []
    sources: dict[str, str] = {}
    for _sink, query in sinks:
        for source in tables_read(query):
            if source not in sources:
                sources[source] = _task_id(statement, f"source:{source}")
                tasks.append({"task_id": sources[source], "task_name": f"Source: {source}", "input_tasks": [],
                              "included_operators": [_operator(statement, 0, f"TableSourceScan(table=[[{source}]])")]})
    for sink, query in sinks:
        reasons = state_reasons(query)
        compute = f"Stateful ({', '.join(reasons)})" if reasons else "Calc"
        name = f"{compute} -> Sink: {sink}"
        tasks.append({"task_id": _task_id(statement, f"sink:{sink}"), "task_name": name,
                      "input_tasks": [{"task_id": sources[s], "num": i} for i, s in enumerate(tables_read(query))],
                      "included_operators": [_operator(statement, 0, compute),
                                             _operator(statement, 1, f"Sink(table=[[{sink}]])")]})
    return {"tasks": tasks}


def _target(node: exp.Expression) -> exp.Table:
    target = node.this
    return target.this if isinstance(target, exp.Schema) else target


def _operator(statement: str, number: int, name: str) -> dict[str, Any]:
    return {"num": number, "operator_id": _task_id(statement, f"op:{name}"), "operator_name": name}


def task_graph_body(statement: str, sql: str) -> dict[str, str] | None:
    """The endpoint's body: the graph as a JSON string under "Graph"."""
    graph = task_graph(statement, sql)
    return {"Graph": json.dumps(graph)} if graph is not None else None
