"""Statement metrics from the engine's own progress, served as Confluent's telemetry query API.

Per statement and source table: records read (`num_records_in`), records not
read yet (`pending_records`, the lag); per sink table: records written
(`num_records_out`). Values are totals since the statement started, reported
as one point at the current minute (what `ConfluentClient.statement_metrics`
reads, here as on Confluent Cloud).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import cloud_error
from shift_left_dagster.local.store import RunState, Store

PREFIX = "io.confluent.flink/"
METRICS = ("num_records_in", "num_records_out", "pending_records")
STATEMENT, POOL, TABLE = "resource.flink_statement.name", "resource.compute_pool.id", "metric.table_name"
FIELDS = (STATEMENT, POOL, TABLE)


class Sample(BaseModel):
    """One number of one statement: a metric, the table it is about, its value."""

    statement: str
    compute_pool_id: str
    metric: str
    table: str
    value: int


def samples(store: Store) -> list[Sample]:
    """Every metric of every statement that has run."""
    out: list[Sample] = []
    with store.transaction() as db:
        statements = db.execute("SELECT name, compute_pool_id FROM statements").fetchall()
        runs = dict(db.execute("SELECT statement, state FROM runs").fetchall())
        written = db.execute("SELECT b.producer, t.name, SUM(b.rows) FROM batches b JOIN tables t "
                             "ON t.uid = b.table_uid WHERE b.producer IS NOT NULL GROUP BY b.producer, t.name"
                             ).fetchall()
        ends: dict[str, dict[int, int]] = {}
        for uid, partition, end in db.execute("SELECT table_uid, partition, next_offset FROM partitions"):
            ends.setdefault(uid, {})[partition] = end
    pools = {name: pool or "" for name, pool in statements}
    for name, text in runs.items():
        if name not in pools:
            continue
        state = RunState.model_validate_json(text)
        for table, progress in state.sources.items():
            end = ends.get(progress.table_uid, {})
            upper = {p: min(e, progress.bound.get(p, 0)) if progress.bound is not None else e for p, e in end.items()}
            read = sum(max(0, n - progress.start.get(p, 0)) for p, n in progress.next.items())
            pending = sum(max(0, e - progress.next.get(p, progress.start.get(p, 0))) for p, e in upper.items())
            out.append(Sample(statement=name, compute_pool_id=pools[name], metric="num_records_in", table=table,
                              value=read))
            out.append(Sample(statement=name, compute_pool_id=pools[name], metric="pending_records", table=table,
                              value=pending))
    for producer, table, rows in written:
        if producer in pools:
            out.append(Sample(statement=producer, compute_pool_id=pools[producer], metric="num_records_out",
                              table=table, value=int(rows)))
    return out


# --- the telemetry query API --------------------------------------------------------------------


class Aggregation(BaseModel):
    metric: str
    agg: Literal["SUM", "MIN", "MAX"] = "SUM"


class Filter(BaseModel):
    op: Literal["EQ", "AND", "OR", "NOT"] = "EQ"
    field: str | None = None
    value: str | int | None = None
    filters: list[Filter] = Field(default_factory=list)
    filter: Filter | None = None


class Query(BaseModel):
    aggregations: list[Aggregation] = Field(min_length=1, max_length=1)
    filter: Filter | None = None
    group_by: list[str] = Field(default_factory=list)
    granularity: str = "PT1M"
    intervals: list[str] = Field(default_factory=list)
    limit: int = Field(default=100, ge=1, le=1000)
    format: Literal["FLAT", "GROUPED"] = "FLAT"


class QueryError(ValueError):
    """A query the telemetry API answers with 400."""


def _matches(sample: Sample, condition: Filter | None) -> bool:
    if condition is None:
        return True
    if condition.op == "AND":
        return all(_matches(sample, f) for f in condition.filters)
    if condition.op == "OR":
        return any(_matches(sample, f) for f in condition.filters)
    if condition.op == "NOT":
        return not _matches(sample, condition.filter)
    if condition.field not in FIELDS:
        raise QueryError(f"Invalid filter field '{condition.field}': supported fields are {', '.join(FIELDS)}")
    return _label(sample, condition.field) == str(condition.value)


def _label(sample: Sample, field: str) -> str:
    return {STATEMENT: sample.statement, POOL: sample.compute_pool_id, TABLE: sample.table}[field]


def answer(query: Query, store: Store) -> dict[str, Any]:
    """The query's data points (one per group, at the current minute) in FLAT or GROUPED form."""
    metric = query.aggregations[0].metric
    if not metric.startswith(PREFIX) or metric.removeprefix(PREFIX) not in METRICS:
        raise QueryError(f"Invalid metric '{metric}': the local service serves "
                         f"{', '.join(PREFIX + m for m in METRICS)}")
    for field in query.group_by:
        if field not in FIELDS:
            raise QueryError(f"Invalid group_by field '{field}': supported fields are {', '.join(FIELDS)}")
    chosen = [s for s in samples(store) if s.metric == metric.removeprefix(PREFIX) and _matches(s, query.filter)]
    groups: dict[tuple[str, ...], list[int]] = {}
    for sample in chosen:
        groups.setdefault(tuple(_label(sample, f) for f in query.group_by), []).append(sample.value)
    combiners: dict[str, Callable[[Iterable[int]], int]] = {"SUM": sum, "MIN": min, "MAX": max}
    combine = combiners[query.aggregations[0].agg]
    stamp = datetime.now(UTC).replace(second=0, microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    data: list[dict[str, Any]] = []
    for key, values in sorted(groups.items())[: query.limit]:
        labels = dict(zip(query.group_by, key, strict=True))
        point = {"timestamp": stamp, "value": float(combine(values))}
        data.append({**labels, "points": [point]} if query.format == "GROUPED" else {**point, **labels})
    return {"data": data, "meta": {"pagination": {"page_size": query.limit, "total_size": len(data)}}}


def metrics_routes(store: Store) -> list[Route]:
    async def query(request: Request) -> Response:
        if request.path_params["dataset"] != "cloud":
            return cloud_error(404, f"dataset '{request.path_params['dataset']}' not found", code="not_found")
        try:
            body = Query.model_validate(await request.json())
            return JSONResponse(answer(body, store))
        except ValidationError as error:
            first = error.errors()[0]
            return cloud_error(400, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}", code="bad_request")
        except (QueryError, ValueError) as error:
            return cloud_error(400, str(error), code="bad_request")

    return [Route("/v2/metrics/{dataset}/query", query, methods=["POST"])]
