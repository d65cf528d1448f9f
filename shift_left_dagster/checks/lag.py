"""statement_lag and statement_stalled: a statement falling behind, judged from the health sensor's observations.

The history is the sensor's cursor (a few numbers per statement, trimmed to what the thresholds look at),
not the Metrics API's per-minute points: "growing over the last M observations" then means the last M
looks the sensor took, at its own interval (seconds in a test, a minute in production), whereas Metrics
API points come one a minute and Confluent Cloud's trail the present by a minute or more; and no query
beyond the one the sensor already makes. A new statement (a new version, a redeploy) starts a new series.
Counts are the running report's (deploy/running.py): records read and written, and records not read yet.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from shift_left_dagster.checks.models import Verdict
from shift_left_dagster.project.config import HealthThresholds

KEPT = 120  # observations kept per statement at most: the cursor stays small whatever the thresholds


class Observation(BaseModel):
    """One look at a statement: when (epoch seconds) and its record counts."""

    at: float
    records_in: int
    records_out: int
    pending_records: int

    @property
    def offered(self) -> int:
        """Records that reached its sources: read, or waiting to be."""
        return self.records_in + self.pending_records


def remember(series: list[Observation], new: Observation, limits: HealthThresholds) -> list[Observation]:
    """`series` with `new` appended, trimmed to what the checks read: the last M observations, and those
    of the last K minutes with the one before them (a stall's baseline)."""
    series = [*series, new]
    older = [i for i, o in enumerate(series) if o.at <= new.at - limits.stalled_minutes * 60]
    first = min(len(series) - limits.growing_observations, older[-1] if older else 0)
    return series[max(0, first):][-KEPT:]


def statement_lag(series: list[Observation], limits: HealthThresholds) -> Verdict:
    """Red when more records wait than `max_pending_records`, or when the pending count grew at each of
    the last `growing_observations` observations."""
    now = series[-1]
    recent = [o.pending_records for o in series[-limits.growing_observations:]]
    growing = len(recent) == limits.growing_observations and all(
        b > a for a, b in zip(recent, recent[1:], strict=False))
    metadata: dict[str, Any] = {"pending_records": now.pending_records,
                                "max_pending_records": limits.max_pending_records,
                                "pending_series": _series(series, "pending_records")}
    if now.pending_records > limits.max_pending_records:
        return False, (f"{now.pending_records} records pending, more than {limits.max_pending_records} "
                       "(health.max_pending_records)"), metadata
    if growing:
        return False, (f"pending records grew at each of the last {len(recent)} observations: "
                       f"{' -> '.join(map(str, recent))} (health.growing_observations)"), metadata
    return True, (f"{now.pending_records} records pending (limit {limits.max_pending_records}, "
                  f"not growing over {limits.growing_observations} observations)"), metadata


def statement_stalled(series: list[Observation], limits: HealthThresholds) -> Verdict:
    """Red when no record came out for `stalled_minutes` while records reached its sources."""
    now = series[-1]
    cutoff = now.at - limits.stalled_minutes * 60
    baseline = next((o for o in reversed(series) if o.at <= cutoff), None)
    metadata: dict[str, Any] = {"records_out": now.records_out, "stalled_minutes": limits.stalled_minutes,
                                "records_out_series": _series(series, "records_out")}
    if baseline is None:
        return True, f"observed for less than {limits.stalled_minutes:g} minutes", metadata
    minutes = (now.at - baseline.at) / 60
    arrived, written = now.offered - baseline.offered, now.records_out - baseline.records_out
    metadata.update(records_arrived=arrived, records_written=written, minutes_observed=round(minutes, 2))
    if written <= 0 < arrived:
        return False, (f"no record out for {minutes:.1f} minutes while {arrived} records came in "
                       f"(health.stalled_minutes {limits.stalled_minutes:g})"), metadata
    return True, f"{written} records out and {arrived} in over the last {minutes:.1f} minutes", metadata


def _series(series: list[Observation], field: str) -> list[list[Any]]:
    """[[ISO time, value], ...]: the recent values as JSON metadata (the current one is a number)."""
    return [[datetime.fromtimestamp(o.at, UTC).isoformat(timespec="seconds"), getattr(o, field)] for o in series]
