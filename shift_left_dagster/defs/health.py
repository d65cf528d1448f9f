"""Pipelines stay watched: a sensor that reads the project's statements at an interval and records each
table's health, so a statement that FAILS after its run ended turns red in the UI within one interval.

Each table with a DML statement gets an `AssetObservation` (phase, statement, pool, records in, out and
pending from the Metrics API) and an evaluation of its `statement_healthy` check (a FAILED or FAILING
statement's latest exception in its description); with record counts, also of `statement_lag` and
`statement_stalled` (checks/lag.py, thresholds from the config's `health` section), whose history of
observations is the sensor's cursor. With `redeploy_failed`, a run is requested for the failed tables.
"""

import time
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetObservation,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from pydantic import BaseModel, Field, ValidationError

from shift_left_dagster.checks.lag import Observation, remember, statement_lag, statement_stalled
from shift_left_dagster.checks.models import CheckName, SensorCheck, Verdict
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.deploy.live import HEALTHY_PHASES, StatementKind
from shift_left_dagster.deploy.running import RunningStatement, running_statements


class HealthCursor(BaseModel):
    """What the sensor keeps between ticks: a tick count (run keys) and each statement's recent counts."""

    tick: int = 0
    series: dict[str, list[Observation]] = Field(default_factory=dict)

    @classmethod
    def read(cls, cursor: str | None) -> "HealthCursor":
        """The cursor a tick left; an older sensor's bare tick count, or none, starts the series afresh."""
        if not cursor:
            return cls()
        if cursor.isdigit():
            return cls(tick=int(cursor))
        try:
            return cls.model_validate_json(cursor)
        except ValidationError:
            return cls()


def health_sensor(project: FlinkProject, translator: FlinkTranslator, *, name: str = "flink_statement_health",
                  minimum_interval_seconds: int = 60, redeploy_failed: bool = False,
                  default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED):  # noqa: ANN201
    graph = project.graph
    keys = {table.name: translator.get_asset_key(table) for table in graph.tables.values()}

    @sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
            description="Records the phase and record counts of every deployed statement of the project; FAILED "
                        "turns its statement_healthy check red (with its exception), falling behind its "
                        "statement_lag or statement_stalled check.")
    def flink_health(context: SensorEvaluationContext, confluent: ConfluentFlinkResource):
        try:
            report = running_statements(confluent.get_client(), graph)
        except ConfluentError as error:
            return SkipReason(f"the Flink service did not answer: {error}")
        health = confluent.get_config().health
        cursor = HealthCursor.read(context.cursor)
        series: dict[str, list[Observation]] = {}
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
                metadata={**metadata, "error": row.error or ""}, severity=AssetCheckSeverity.ERROR,
                description=f"statement {row.statement} is {row.phase}"
                            + (f": {row.error}" if row.error else "")
                            + (f", {row.pending_records} records behind" if row.pending_records else "")))
            if not healthy:
                failed.append(row.table)
            observed = _observation(row)
            if observed is not None:
                limits = health.for_table(row.table)
                series[row.statement] = remember(cursor.series.get(row.statement, []), observed, limits)
                for check, verdict in ((SensorCheck.STATEMENT_LAG, statement_lag(series[row.statement], limits)),
                                       (SensorCheck.STATEMENT_STALLED,
                                        statement_stalled(series[row.statement], limits))):
                    events.append(_evaluation(keys[row.table], check, verdict))
        if not events:
            return SkipReason("no deployed statement of this project")
        requests = [RunRequest(run_key=f"redeploy-{'-'.join(failed)}-{cursor.tick}",
                               asset_selection=[keys[t] for t in failed])] if redeploy_failed and failed else []
        return SensorResult(asset_events=events, run_requests=requests,
                            cursor=HealthCursor(tick=cursor.tick + 1, series=series).model_dump_json())

    return flink_health


def _observation(row: RunningStatement) -> Observation | None:
    """This tick's counts of a statement (None: the Metrics API gave none, so lag and stall are not judged)."""
    if row.records_in is None or row.records_out is None or row.pending_records is None:
        return None
    return Observation(at=time.time(), records_in=row.records_in, records_out=row.records_out,
                       pending_records=row.pending_records)


def _evaluation(key: AssetKey, check: SensorCheck, verdict: Verdict) -> AssetCheckEvaluation:
    """A lag/stall verdict as the check's evaluation (red when it fails; the checks never block): the
    current values are numbers (Dagster plots them over evaluations), the recent series JSON."""
    passed, message, metadata = verdict
    return AssetCheckEvaluation(asset_key=key, check_name=check.value, passed=passed, description=message,
                                metadata=metadata, severity=AssetCheckSeverity.ERROR)
