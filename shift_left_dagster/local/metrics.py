"""Statement metrics from the engine's own progress, served as Confluent's Metrics API (v2, dataset `cloud`).

Per statement and source table: records read (`num_records_in`), records not
read yet (`pending_records`, the lag), its watermark and late records; per sink
table: records written (`num_records_out`) and the watermark emitted; per task
of the statement's task graph (task_graph.py) the records it received and
emitted; per stateful operator its state's bytes. Values are totals since the statement started (or
the current lag), as `ConfluentClient.statement_metrics` and shift_left read
them. A sampler records the running statements' values every few seconds,
keyed by minute (kept 6 hours), so a query answers one point per `granularity`
bucket of its `intervals` (the last value in each bucket), the current
minute's from the live values.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import cloud_error
from shift_left_dagster.local.group_aggregation import STATE_DIR
from shift_left_dagster.local.metric_descriptors import (
    DESCRIPTORS,
    OPERATOR,
    POOL,
    PREFIX,
    STATEMENT,
    TABLE,
    TASK,
    descriptor_lists,
)
from shift_left_dagster.local.metric_intervals import GRANULARITIES, IntervalError, bucket_start, parse_interval
from shift_left_dagster.local.store import RunState, Store
from shift_left_dagster.local.task_graph import task_graph

logger = logging.getLogger(__name__)
SAMPLE_SECONDS = 10.0
KEEP = timedelta(hours=6)  # the longest interval a PT1M query may ask for; older minutes are forgotten
HISTORY = """CREATE TABLE IF NOT EXISTS metric_samples (
    minute INTEGER NOT NULL, series TEXT NOT NULL, sample TEXT NOT NULL, PRIMARY KEY (minute, series))"""


class Sample(BaseModel):
    """One number of one statement: a metric, the labels saying what it is about, its value."""

    statement: str
    compute_pool_id: str
    metric: str
    table: str | None = None
    task: str | None = None
    operator: str | None = None
    value: int

    def label(self, field: str) -> str | None:
        return {STATEMENT: self.statement, POOL: self.compute_pool_id, TABLE: self.table, TASK: self.task,
                OPERATOR: self.operator}.get(field)

    def series(self) -> str:
        return json.dumps([self.statement, self.metric, self.table, self.task, self.operator])


@lru_cache(maxsize=256)
def _tasks(statement: str, sql: str) -> dict[str, tuple[str, str | None]]:
    """Per table the task graph names (`source:<t>`, `sink:<t>`): its task id and its stateful operator."""
    graph = task_graph(statement, sql) or {"tasks": []}
    found: dict[str, tuple[str, str | None]] = {}
    for task in graph["tasks"]:
        name = task["task_name"]
        if name.startswith("Source: "):
            found["source:" + name.removeprefix("Source: ").lower()] = (task["task_id"], None)
        else:
            first = task["included_operators"][0]
            stateful = first["operator_id"] if first["operator_name"].startswith("Stateful") else None
            found["sink:" + name.rsplit("Sink: ", 1)[-1].lower()] = (task["task_id"], stateful)
    return found


def samples(store: Store, data_dir: Path | None = None, only: Collection[str] | None = None) -> list[Sample]:
    """Every metric of every statement that has run (of `only`, when given), now. The sampler passes the
    running statements: a statement's task graph is parsed from its SQL, once per statement kept in the
    cache, so parsing every statement ever created each time stalls a service holding thousands."""
    out: list[Sample] = []
    with store.transaction() as db:
        statements = [s for s in db.execute("SELECT name, compute_pool_id, body FROM statements").fetchall()
                      if only is None or s[0] in only]
        runs = dict(db.execute("SELECT statement, state FROM runs").fetchall())
        written = db.execute("SELECT b.producer, t.name, SUM(b.rows) FROM batches b JOIN tables t "
                             "ON t.uid = b.table_uid WHERE b.producer IS NOT NULL GROUP BY b.producer, t.name"
                             ).fetchall()
        ends: dict[str, dict[int, int]] = {}
        for uid, partition, end in db.execute("SELECT table_uid, partition, next_offset FROM partitions"):
            ends.setdefault(uid, {})[partition] = end
    pools = {name: pool or "" for name, pool, _ in statements}
    tasks = {name: _tasks(name, json.loads(body)["spec"]["statement"]) for name, _, body in statements}

    def add(name: str, metric: str, value: int, table: str | None = None, role: str = "source") -> None:
        task, operator = tasks[name].get(f"{role}:{(table or '').lower()}", (None, None))
        out.append(Sample(statement=name, compute_pool_id=pools[name], metric=metric, table=table, task=task,
                          operator=operator if metric.startswith("operator/") else None, value=value))

    for name, text in runs.items():
        if name not in pools:
            continue
        state = RunState.model_validate_json(text)
        for table, progress in state.sources.items():
            end = ends.get(progress.table_uid, {})
            upper = {p: min(e, progress.bound.get(p, 0)) if progress.bound is not None else e for p, e in end.items()}
            read = sum(max(0, n - progress.start.get(p, 0)) for p, n in progress.next.items())
            add(name, "num_records_in", read, table)
            add(name, "task/num_records_in", read, table)
            add(name, "task/num_records_out", read, table)  # a source task emits what it reads
            add(name, "pending_records",
                sum(max(0, e - progress.next.get(p, progress.start.get(p, 0))) for p, e in upper.items()), table)
            add(name, "num_late_records_in",
                sum(len(offsets) for scan in progress.dropped.values() for offsets in scan.values()), table)
            if progress.watermark is not None:
                add(name, "current_input_watermark_milliseconds", progress.watermark, table)
        if state.watermarks:  # emitted by event-time operators: about the statement's one sink, when it has one
            sink_tables = [t.removeprefix("sink:") for t in tasks[name] if t.startswith("sink:")]
            add(name, "current_output_watermark_milliseconds", min(state.watermarks.values()),
                sink_tables[0] if len(sink_tables) == 1 else None, "sink")
    for producer, table, rows in written:
        if producer in pools:
            add(producer, "num_records_out", int(rows), table, "sink")
            add(producer, "task/num_records_out", int(rows), table, "sink")
    for sample in [s for s in out if s.metric == "task/num_records_out" and s.table is not None]:
        sinks = [(t, ids) for t, ids in tasks[sample.statement].items() if t.startswith("sink:")]
        if len(sinks) == 1 and sample.task != sinks[0][1][0]:  # one sink task: it receives what sources emit
            add(sample.statement, "task/num_records_in", sample.value, sinks[0][0].removeprefix("sink:"), "sink")
    if data_dir is not None:
        for name in runs:
            folder = data_dir / STATE_DIR / name
            if name in pools and folder.is_dir():
                stateful = [t for t, (_, op) in tasks[name].items() if op is not None]
                size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
                add(name, "operator/state_size_bytes", size, stateful[0].removeprefix("sink:") if stateful else None,
                    "sink")
    return _merged(out)


def _merged(found: list[Sample]) -> list[Sample]:
    """One sample per series: a sink task fed by several sources receives their sum."""
    merged: dict[str, Sample] = {}
    for sample in found:
        key = sample.series()
        if key in merged:
            merged[key] = merged[key].model_copy(update={"value": merged[key].value + sample.value})
        else:
            merged[key] = sample
    return list(merged.values())


# --- history ------------------------------------------------------------------------------------


def record(store: Store, found: list[Sample], at: datetime) -> None:
    """Keep the samples as this minute's values (the last of the minute wins); forget old minutes."""
    minute = int(at.timestamp() // 60)
    with store.transaction() as db:
        db.executemany("INSERT OR REPLACE INTO metric_samples VALUES (?, ?, ?)",
                       [(minute, s.series(), s.model_dump_json()) for s in found])
        db.execute("DELETE FROM metric_samples WHERE minute < ?", (int((at - KEEP).timestamp() // 60),))


def history(store: Store, start: datetime, end: datetime) -> list[tuple[datetime, Sample]]:
    with store.transaction() as db:
        rows = db.execute("SELECT minute, sample FROM metric_samples WHERE minute >= ? AND minute < ?",
                          (int(start.timestamp() // 60), int(end.timestamp() // 60) + 1)).fetchall()
    return [(datetime.fromtimestamp(m * 60, UTC), Sample.model_validate_json(s)) for m, s in rows]


class Sampler(threading.Thread):
    """Records the running statements' metrics every few seconds while the service runs."""

    def __init__(self, store: Store, data_dir: Path | None) -> None:
        super().__init__(name="shift-left-local-metrics", daemon=True)
        self.store, self.data_dir = store, data_dir
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            try:
                running = set(self.store.names_in_phase("RUNNING", "DEGRADED"))  # only they emit metrics
                found = samples(self.store, self.data_dir, running)
                record(self.store, found, datetime.now(UTC))
            except sqlite3.ProgrammingError:  # the store closed: the service is stopping
                return
            except Exception:  # a bad sample must not end the history
                logger.exception("metrics sampling failed")


# --- the query API --------------------------------------------------------------------------------


class Aggregation(BaseModel):
    metric: str
    agg: Literal["SUM", "MIN", "MAX"] = "SUM"


class Filter(BaseModel):
    op: Literal["EQ", "GT", "GTE", "AND", "OR", "NOT"] = "EQ"
    field: str | None = None
    value: str | int | None = None
    filters: list[Filter] = Field(default_factory=list)
    filter: Filter | None = None


class Query(BaseModel):
    aggregations: list[Aggregation] = Field(min_length=1, max_length=1)
    filter: Filter | None = None
    group_by: list[str] = Field(default_factory=list)
    granularity: str
    intervals: list[str] = Field(min_length=1)
    limit: int = Field(default=100, ge=1, le=1000)
    format: Literal["FLAT", "GROUPED"] = "FLAT"

    @model_validator(mode="after")
    def _checked(self) -> Query:
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity '{self.granularity}' is not one of {', '.join(GRANULARITIES)}")
        if self.format == "GROUPED" and not self.group_by:
            raise ValueError("format GROUPED is only allowed when group_by is not empty")
        return self


class QueryError(ValueError):
    """A query the Metrics API answers with 400."""


def _matches(sample: Sample, condition: Filter | None, fields: tuple[str, ...]) -> bool:
    if condition is None:
        return True
    if condition.op == "AND":
        return all(_matches(sample, f, fields) for f in condition.filters)
    if condition.op == "OR":
        return any(_matches(sample, f, fields) for f in condition.filters)
    if condition.op == "NOT":
        return not _matches(sample, condition.filter, fields)
    if condition.field not in fields:
        raise QueryError(f"Invalid filter field '{condition.field}': supported fields are {', '.join(fields)}")
    label, value = sample.label(condition.field), str(condition.value)
    if label is None:
        return False
    return label == value if condition.op == "EQ" else label > value if condition.op == "GT" else label >= value


def answer(query: Query, store: Store, data_dir: Path | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The query's points, one per group and granularity bucket, in FLAT or GROUPED form."""
    metric = query.aggregations[0].metric
    descriptor = DESCRIPTORS.get(metric.removeprefix(PREFIX)) if metric.startswith(PREFIX) else None
    if descriptor is None:
        raise QueryError(f"Invalid metric '{metric}': the local service serves "
                         f"{', '.join(PREFIX + m for m in DESCRIPTORS)}")
    fields = (STATEMENT, POOL, *descriptor.labels)
    for field in query.group_by:
        if field not in fields:
            raise QueryError(f"Invalid group_by field '{field}': {metric} is grouped by {', '.join(fields)}")
    moment = now or datetime.now(UTC)
    current = moment.replace(second=0, microsecond=0)
    spans = [parse_interval(text, moment) for text in query.intervals]
    points = {(at, s.series()): (at, s) for start, end in spans for at, s in history(store, start, end)
              if start <= at < end and at != current}  # (an instant in two intervals counts once)
    if any(start < current + timedelta(minutes=1) and end > current for start, end in spans):
        # the live values stand for this minute, when an interval reaches into it
        points.update({(current, s.series()): (current, s) for s in samples(store, data_dir)})
    step = GRANULARITIES[query.granularity]
    chosen = [(at, s) for at, s in points.values() if s.metric == descriptor.name
              and _matches(s, query.filter, fields)]
    latest: dict[tuple[tuple[str | None, ...], datetime, str], tuple[datetime, int]] = {}
    for at, sample in chosen:  # per group, bucket and series: the last value in the bucket
        bucket = bucket_start(at, step, spans[0][0])
        key = (tuple(sample.label(f) for f in query.group_by), bucket, sample.series())
        if key not in latest or latest[key][0] <= at:
            latest[key] = (at, sample.value)
    combiners: dict[str, Callable[[Iterable[int]], int]] = {"SUM": sum, "MIN": min, "MAX": max}
    combine = combiners[query.aggregations[0].agg]
    groups: dict[tuple[str | None, ...], dict[datetime, list[int]]] = {}
    for (labels, bucket, _), (_, value) in latest.items():
        groups.setdefault(labels, {}).setdefault(bucket, []).append(value)
    data: list[dict[str, Any]] = []
    for labels, buckets in sorted(groups.items(), key=lambda g: tuple(v or "" for v in g[0]))[: query.limit]:
        named = dict(zip(query.group_by, labels, strict=True))
        series = [{"timestamp": b.strftime("%Y-%m-%dT%H:%M:%SZ"), "value": float(combine(v))}
                  for b, v in sorted(buckets.items())]
        data += [{**named, "points": series}] if query.format == "GROUPED" else [{**p, **named} for p in series]
    return {"data": data, "meta": {"pagination": {"page_size": query.limit, "total_size": len(data)}}}


def metrics_routes(store: Store, data_dir: Path | None = None) -> list[Route]:
    """The query and descriptors endpoints, and the sampler that keeps their history."""
    with store.transaction() as db:
        db.execute(HISTORY)
    Sampler(store, data_dir).start()  # the history per-interval points are read from

    def dataset_problem(request: Request) -> Response | None:
        dataset = request.path_params["dataset"]
        return None if dataset == "cloud" else cloud_error(404, f"dataset '{dataset}' not found", code="not_found")

    async def query(request: Request) -> Response:
        problem = dataset_problem(request)
        if problem:
            return problem
        try:
            body = Query.model_validate(await request.json())
            return JSONResponse(answer(body, store, data_dir))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            return cloud_error(400, f"{where + ': ' if where else ''}{first['msg']}", code="bad_request",
                               pointer=f"/{where.replace('.', '/')}" if where else None)
        except (QueryError, IntervalError, ValueError) as error:
            return cloud_error(400, str(error), code="bad_request")

    async def descriptors(request: Request) -> Response:
        problem = dataset_problem(request)
        if problem:
            return problem
        if request.path_params["kind"] not in ("metrics", "resources"):
            return cloud_error(404, f"no resource at {request.url.path}", code="not_found")
        metrics, resources = descriptor_lists(request.query_params.get("resource_type"))
        data = metrics if request.path_params["kind"] == "metrics" else resources
        return JSONResponse({"data": data, "meta": {"pagination": {"page_size": len(data), "total_size": len(data)}},
                             "links": {}})

    return [Route("/v2/metrics/{dataset}/query", query, methods=["POST"]),
            Route("/v2/metrics/{dataset}/descriptors/{kind:str}", descriptors, methods=["GET"])]
