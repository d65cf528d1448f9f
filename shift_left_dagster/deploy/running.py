"""What runs: every statement of a project's tables with its phase, pool and record counts.

One report for the `statements` command and the health sensor's observations
(shift_left's `report-running-statements` and `healthcheck`). Record counts
come from the Metrics API (`io.confluent.flink/num_records_in`,
`num_records_out`, `pending_records`), which the local service serves too; when
it can not be read the counts are None and `metrics_error` says why. A FAILED or
FAILING statement's `error` is its latest exception (the statement exceptions
API): the root error a user acts on.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.confluent.models import Phase, StatementMetrics
from shift_left_dagster.deploy.live import LiveState, StatementKind, live_state
from shift_left_dagster.project.graph import ProjectGraph

FAILING_PHASES = frozenset({Phase.FAILED, Phase.FAILING})


class RunningStatement(BaseModel):
    table: str
    product: str | None
    statement: str
    kind: str
    phase: str
    version: int
    serving: bool = Field(description="the version the table's readers see (not a blue/green candidate)")
    compute_pool: str | None
    code: str = Field(description="current | changed in git | removed from git")
    records_in: int | None = None
    records_out: int | None = None
    pending_records: int | None = None
    error: str | None = Field(default=None, description="FAILED or FAILING: its latest exception")

    @property
    def failing(self) -> bool:
        return self.phase in FAILING_PHASES


class RunningReport(BaseModel):
    statements: list[RunningStatement]
    metrics_error: str | None = None


def running_statements(client: ConfluentClient, graph: ProjectGraph, *, product: str | None = None,
                       live: LiveState | None = None) -> RunningReport:
    """The project's labelled statements (of one product when given), sorted by table then name."""
    live = live or live_state(client, with_tables=False)
    serving = live.serving_versions()
    metrics: dict[str, StatementMetrics] = {}
    error = None
    try:
        for pool in sorted({s.compute_pool_id for s in live.statements.values() if s.compute_pool_id}):
            metrics.update(client.statement_metrics(pool))
    except ConfluentError as failure:
        error = f"the Metrics API did not answer: {failure}"
    rows: list[RunningStatement] = []
    for statement in live.statements.values():
        if not statement.table:
            continue
        info = graph.tables.get(statement.table)
        if product and (info is None or info.product != product):
            continue
        code = "removed from git" if info is None else (
            "current" if statement.code_version == info.code_version else "changed in git")
        counts = metrics.get(statement.name)
        rows.append(RunningStatement(
            table=statement.table, product=info.product if info else None, statement=statement.name,
            kind=statement.kind or "", phase=statement.phase, version=statement.version,
            serving=serving.get(statement.table, statement.version) == statement.version,  # none serves: itself
            compute_pool=statement.compute_pool_id,
            code=code, error=latest_exception(client, statement.name) if statement.phase in FAILING_PHASES else None,
            **(counts.model_dump() if counts else {})))
    return RunningReport(statements=sorted(rows, key=lambda r: (r.table, r.statement)), metrics_error=error)


def latest_exception(client: ConfluentClient, name: str) -> str | None:
    """The newest exception of a statement (None: none recorded, or the API did not answer, said so)."""
    try:
        exceptions = client.statement_exceptions(name)
    except ConfluentError as failure:
        return f"(its exceptions could not be read: {failure})"
    return exceptions[0].message if exceptions else None


def render_running(report: RunningReport) -> str:
    """The DML statements as a table (DDL statements are one-shot: listed by --json only)."""
    lines = [f"{'TABLE':30} {'STATEMENT':46} {'PHASE':9} {'VER':>3} {'ROLE':9} {'PENDING':>8} {'IN':>8} "
             f"{'OUT':>8}  CODE"]

    def number(value: int | None) -> str:
        return "?" if value is None else str(value)

    for row in report.statements:
        if row.kind != StatementKind.DML:
            continue
        role = "serving" if row.serving else "candidate"
        lines.append(f"{row.table:30} {row.statement:46} {row.phase:9} {row.version:>3} {role:9} "
                     f"{number(row.pending_records):>8} {number(row.records_in):>8} {number(row.records_out):>8}  "
                     f"{row.code}")
    if report.metrics_error:
        lines.append(f"(record counts unknown: {report.metrics_error})")
    return "\n".join(lines)


def render_failing(report: RunningReport) -> str:
    """Each failing statement and its root error: the first thing the stuck-statement runbook asks for."""
    if not report.statements:
        return "no FAILED or FAILING statement"
    return "\n".join(f"{row.table:30} {row.statement:46} {row.phase:9}\n  root error: {row.error or '(none recorded)'}"
                     for row in report.statements)
