"""Pipelines stay watched: a sensor that reads the project's statements at an interval and records each
table's health, so a statement that FAILS after its run ended turns red in the UI within one interval.

Each table with a DML statement gets an `AssetObservation` (phase, statement, pool, records in, out and
pending from the Metrics API) and an evaluation
of its `statement_healthy` check; with `redeploy_failed`, a run is requested for the failed tables.
"""

from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetObservation,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from shift_left_dagster.checks.models import CheckName
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.deploy.live import HEALTHY_PHASES, StatementKind
from shift_left_dagster.deploy.running import running_statements


def health_sensor(project: FlinkProject, translator: FlinkTranslator, *, name: str = "flink_statement_health",
                  minimum_interval_seconds: int = 60, redeploy_failed: bool = False,
                  default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED):  # noqa: ANN201
    graph = project.graph
    keys = {table.name: translator.get_asset_key(table) for table in graph.tables.values()}

    @sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
            description="Records the phase of every deployed statement of the project; FAILED turns its "
                        "statement_healthy check red.")
    def flink_health(context: SensorEvaluationContext, confluent: ConfluentFlinkResource):
        try:
            report = running_statements(confluent.get_client(), graph)
        except ConfluentError as error:
            return SkipReason(f"the Flink service did not answer: {error}")
        events: list[AssetObservation | AssetCheckEvaluation] = []
        failed: list[str] = []
        for row in report.statements:
            if row.kind != StatementKind.DML or row.table not in keys or not row.serving:
                continue
            healthy = row.phase in HEALTHY_PHASES or row.phase in ("PENDING", "STOPPED")
            metadata: dict[str, Any] = {"phase": row.phase, "statement": row.statement,
                                        "compute_pool": row.compute_pool or "", "version": row.version}
            metadata.update({k: v for k, v in (("records_in", row.records_in), ("records_out", row.records_out),
                                               ("pending_records", row.pending_records)) if v is not None})
            events.append(AssetObservation(asset_key=keys[row.table], metadata=metadata))
            events.append(AssetCheckEvaluation(
                asset_key=keys[row.table], check_name=CheckName.STATEMENT_HEALTHY.value, passed=healthy,
                metadata=metadata, severity=AssetCheckSeverity.ERROR,
                description=f"statement {row.statement} is {row.phase}"
                            + (f", {row.pending_records} records behind" if row.pending_records else "")))
            if not healthy:
                failed.append(row.table)
        if not events:
            return SkipReason("no deployed statement of this project")
        requests = [RunRequest(run_key=f"redeploy-{'-'.join(failed)}-{context.cursor or 0}",
                               asset_selection=[keys[t] for t in failed])] if redeploy_failed and failed else []
        return SensorResult(asset_events=events, run_requests=requests,
                            cursor=str(int(context.cursor or 0) + 1))

    return flink_health
