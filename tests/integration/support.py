"""Test helpers over the REST API: deploy SQL, wait, quiesce, read a table through a SELECT.

Expected results are never read from the engine: seed rows are parsed from
the seed files here, and expectations computed from them in plain Python.
"""

from __future__ import annotations

import itertools
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
from sqlglot import exp

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import Statement
from shift_left_dagster.local.catalog import TableDef, TableId
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.project.analysis import analyze_ddl
from shift_left_dagster.project.config import LOCAL_API_KEY, LOCAL_API_SECRET, local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from shift_left_dagster.project.parsing import parse_statements, split_statements

if TYPE_CHECKING:
    from shift_left_dagster.local.process import InProcessService

PROJECT = Path(__file__).resolve().parents[2] / "flink_project"
_names = itertools.count()
SNAPSHOT = {"sql.snapshot.mode": "now"}  # a SELECT that completes (without it a SELECT runs on)


def client_for(url: str) -> ConfluentClient:
    return ConfluentClient.from_config(local_defaults(url))


def stored_table(service: InProcessService, name: str) -> TableDef:
    """A table of the local service's catalog, as its engine stores it (for tests that look under the API)."""
    found = service.engine.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id,
                                               name=name))
    assert found is not None, name
    return found


def unique(prefix: str) -> str:
    """A statement name no other test uses."""
    return f"{prefix}-{next(_names)}"


def run(client: ConfluentClient, name: str, sql: str, *phases: str, timeout: float = 120.0,
        properties: dict[str, str] | None = None) -> Statement:
    """Create a statement and wait until it reaches one of `phases` (default COMPLETED)."""
    client.create_statement(name, sql, properties=properties)
    return client.wait_for_phase(name, set(phases or ("COMPLETED",)), timeout=timeout)


def quiesce(url: str) -> dict[str, Any]:
    """The service's test extension: run every RUNNING statement until none finds new input."""
    response = requests.post(f"{url}/local/v1/quiesce", auth=(LOCAL_API_KEY, LOCAL_API_SECRET), timeout=600)
    response.raise_for_status()
    return response.json()


def select(client: ConfluentClient, sql: str) -> list[tuple]:
    """Rows of a snapshot query (a SELECT that completes), as the results endpoint encodes them, sorted."""
    name = unique("select")
    client.create_statement(name, sql, properties=SNAPSHOT)
    client.wait_for_phase(name, {"COMPLETED"}, timeout=120)
    rows = [tuple(_hashable(v) for v in r.row) for r in client.statement_results(name)]
    client.delete_statement(name)
    return sorted(rows, key=repr)


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def seed_statements(topic: str) -> list[str]:
    """The seed file's statements (CREATE TABLE, then one INSERT per day)."""
    text = (PROJECT / "seeds" / f"{topic}.sql").read_text()
    return [sql for sql, _line in split_statements(text, f"seeds/{topic}.sql")]


def seed_rows(topic: str) -> list[dict[str, Any]]:
    """The seed records as Python values, in insertion order, read from the SQL by the parser."""
    path = PROJECT / "seeds" / f"{topic}.sql"
    statements = parse_statements(path.read_text(), str(path))
    columns = [c.name for c in analyze_ddl(statements[0]).columns]
    rows = []
    for statement in statements[1:]:
        for values in statement.tree.expression.expressions:
            rows.append(dict(zip(columns, (literal(v) for v in values.expressions), strict=True)))
    return rows


def literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg):
        return -literal(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return Decimal(node.this) if "." in node.this else int(node.this)
    if isinstance(node, exp.Cast) and node.to.is_type("timestamp"):
        return datetime.fromisoformat(node.this.this)
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Anonymous) and node.name.upper() == "ROW":
        return tuple(literal(v) for v in node.expressions)
    if isinstance(node, exp.Array):
        return [literal(v) for v in node.expressions]
    if isinstance(node, exp.Bracket):  # MAP['k', 'v', ...]
        flat = [literal(v) for v in node.expressions]
        return dict(zip(flat[::2], flat[1::2], strict=True))
    raise ValueError(f"seed value {node.sql()} is not a literal this helper reads")


def pipeline_order(table: str) -> list[tuple[str, str, str]]:
    """(table, ddl sql, dml sql) for a table and its ancestors, parents first."""
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines", use_cache=False))
    result = []
    for name in [*graph.ancestors(table), table]:
        entry = graph.tables[name]
        result.append((name, (PROJECT / entry.ddl_path).read_text(), (PROJECT / entry.dml_path).read_text()))
    return result


def deploy_pipelines(client: ConfluentClient, sinks: tuple[str, ...], prefix: str) -> int:
    """Each sink with its ancestors, parents first, each table once: its DDL, then its DML until it runs
    (or completes). The number of statements run."""
    deployed: set[str] = set()
    for sink in sinks:
        for table, ddl, dml in pipeline_order(sink):
            if table not in deployed:
                deployed.add(table)
                run(client, unique(f"{prefix}-ddl"), ddl)
                run(client, unique(f"{prefix}-dml-{table.replace('_', '-')}"), dml, "RUNNING", "COMPLETED")
    return 2 * len(deployed)


def wire(value: Any) -> Any:
    """A Python value as the results endpoint writes it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def wired(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple(wire(v) for v in row) for row in rows), key=repr)


def git(repo: Path, *args: str) -> str:
    """git in a test repository (a fixed identity, so commits work on any machine)."""
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def project_repo(where: Path) -> Path:
    """A copy of the sample project as a git repository with one commit (what the git sensor watches)."""
    import shutil

    repo = where / "project"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns(".shift_left_dagster"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    return repo
