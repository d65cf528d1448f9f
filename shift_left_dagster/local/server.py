"""The HTTP app: Confluent Cloud's sql/v1, fcpm/v2, Kafka REST v3 and Schema Registry paths, served
from the engine's store, plus /local/v1 extensions (health, quiesce)."""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.confluent.models import POOL_NAME_PATTERN, is_valid_statement_name
from shift_left_dagster.local.api import (
    PoolIn,
    StatementIn,
    cloud_error,
    kafka_error,
    new_statement,
    pool_resource,
    statements_path,
)
from shift_left_dagster.local.catalog import TableDef
from shift_left_dagster.local.catalog_search import catalog_search_routes
from shift_left_dagster.local.control_plane import control_plane_routes
from shift_left_dagster.local.engine import (
    COMPLETED,
    DELETING,
    FAILED,
    PENDING,
    RUNNING,
    STOPPED,
    STOPPING,
    Engine,
    on_its_way,
)
from shift_left_dagster.local.kafka_produce import produce_routes
from shift_left_dagster.local.kafka_topics import topic_body, topic_create_routes
from shift_left_dagster.local.limits import shorten
from shift_left_dagster.local.metrics import metrics_routes
from shift_left_dagster.local.registry_api import registry_routes
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.statement_patch import PatchError, PatchOp, apply_patch
from shift_left_dagster.local.store import Duplicate, now
from shift_left_dagster.local.task_graph import task_graph_body
from shift_left_dagster.local.topic_configs import topic_config_routes

DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, RESULT_PAGE_SIZE = 10, 100, 1000
MAX_CFU_VALUES = (5, 10, 20, 30, 40, 50)
MAX_STATEMENT_BYTES = 4 * 1024 * 1024
_KAFKA_PATHS = re.compile(r"^/(kafka/|subjects|schemas/|catalog/)")
_STARTED = now()

Handler = Callable[[Request], Awaitable[Response]]


def create_app(engine: Engine, api_key: str, api_secret: str) -> Starlette:
    """The service's ASGI app over a started engine."""
    handlers = _Handlers(engine)
    routes = [
        Route("/local/v1/health", handlers.health, methods=["GET"]),
        Route("/local/v1/quiesce", handlers.quiesce, methods=["POST"]),
        Route(statements_path(), handlers.list_statements, methods=["GET"]),
        Route(statements_path(), handlers.create_statement, methods=["POST"]),
        Route(statements_path() + "/{name}", handlers.get_statement, methods=["GET"]),
        Route(statements_path() + "/{name}", handlers.update_statement, methods=["PUT"]),
        Route(statements_path() + "/{name}", handlers.patch_statement, methods=["PATCH"]),
        Route(statements_path() + "/{name}", handlers.delete_statement, methods=["DELETE"]),
        Route(statements_path() + "/{name}/results", handlers.results, methods=["GET"]),
        Route(statements_path() + "/{name}/exceptions", handlers.exceptions, methods=["GET"]),
        Route(statements_path() + "/{name}/task-graph", handlers.task_graph, methods=["GET"]),
        Route("/fcpm/v2/compute-pools", handlers.list_pools, methods=["GET"]),
        Route("/fcpm/v2/compute-pools", handlers.create_pool, methods=["POST"]),
        Route("/fcpm/v2/compute-pools/{pool_id}", handlers.get_pool, methods=["GET"]),
        Route("/kafka/v3/clusters/{cluster_id}/topics", handlers.list_topics, methods=["GET"]),
        Route("/kafka/v3/clusters/{cluster_id}/topics/{topic}", handlers.get_topic, methods=["GET"]),
        Route("/kafka/v3/clusters/{cluster_id}/topics/{topic}", handlers.delete_topic, methods=["DELETE"]),
        *topic_create_routes(engine.store),
        *produce_routes(engine),
        *topic_config_routes(engine.store),
        *registry_routes(engine.store),
        *catalog_search_routes(engine.store),
        *metrics_routes(engine.store, engine.data_dir),
        *control_plane_routes(),
    ]
    middleware = [Middleware(BaseHTTPMiddleware, dispatch=_authenticate(api_key, api_secret))]
    handlers_by_status = {404: _no_route, 405: _no_route}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers_by_status)


async def _no_route(request: Request, error: Exception) -> Response:
    """Unknown paths and wrong methods, in the error shape of the API the path belongs to."""
    status = getattr(error, "status_code", 404)
    headers = dict(getattr(error, "headers", None) or {})
    what = "Not Found" if status == 404 else "Method Not Allowed"
    if _KAFKA_PATHS.match(request.url.path):
        return kafka_error(status, status, f"HTTP {status} {what}", headers=headers)
    detail = (f"no resource at {request.url.path}" if status == 404 else
              f"{request.method} is not allowed on {request.url.path} (allowed: {headers.get('Allow', '')})")
    return cloud_error(status, detail, code="not_found" if status == 404 else "method_not_allowed", title=what,
                       headers=headers)


def _authenticate(api_key: str, api_secret: str) -> Callable[[Request, Handler], Awaitable[Response]]:
    expected = f"{api_key}:{api_secret}".encode()

    async def dispatch(request: Request, call_next: Handler) -> Response:
        request_id = uuid.uuid4().hex
        if request.url.path != "/local/v1/health" and not _authorized(request, expected):
            challenge = {"WWW-Authenticate": 'Basic error="invalid_key", error_description="Invalid API key or secret"',
                         "X-Request-Id": request_id}
            if _KAFKA_PATHS.match(request.url.path):
                return kafka_error(401, 40101, "Unauthorized", headers=challenge)
            return cloud_error(401, "Invalid API key or secret: authentication failed", code="unauthorized",
                               headers=challenge)
        response = await call_next(request)
        response.headers["X-Request-Id"] = request_id
        return response

    return dispatch


def _authorized(request: Request, expected: bytes) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(given, expected)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _not_found(name: str) -> JSONResponse:
    return cloud_error(404, f"Statement resource={name} does not exist", code="not_found", title="Not Found")


class _Handlers:
    """Route handlers; sync ones run in starlette's thread pool (sqlite calls, the quiesce wait)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store

    # --- extensions ------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "ready": self.engine.ready, "pid": os.getpid(),
                             "started_at": _STARTED, "startup_error": self.engine.startup_error,
                             "organization_id": IDENTITY.organization_id, "environment_id": IDENTITY.environment_id,
                             "data_dir": str(self.engine.data_dir)})

    def quiesce(self, request: Request) -> Response:
        try:
            return JSONResponse(self.engine.quiesce(float(request.query_params.get("timeout", "300"))))
        except TimeoutError as error:
            return cloud_error(504, str(error), code="timeout")

    # --- statements ---------------------------------------------------------------------------

    async def create_statement(self, request: Request) -> Response:
        try:
            body = StatementIn.model_validate(await _json(request))
        except (ValidationError, ValueError) as error:
            return cloud_error(400, _invalid(error), code="bad_request", title="Bad Request")
        if not is_valid_statement_name(body.name):
            return cloud_error(
                400, f"Statement name '{shorten(body.name, 100)}' is invalid: use at most 72 lowercase "
                     f"alphanumeric characters, '-' or '.', starting and ending with an alphanumeric character",
                code="invalid_name", title="Bad Request")
        if len(body.spec.statement.encode()) > MAX_STATEMENT_BYTES:  # Confluent's documented limit and words
            return cloud_error(400, f"This query is too large to process (exceeds {MAX_STATEMENT_BYTES} bytes)",
                               code="bad_request", title="Bad Request")
        pool = body.spec.compute_pool_id
        if pool and pool not in self._pool_ids():
            return cloud_error(400, f"logical compute pool={pool} not found", code="bad_request")
        resource = new_statement(body, _base(request))
        try:
            self.store.create_statement(resource)
        except Duplicate:
            return cloud_error(409, f"Statement name '{body.name}' already exists in environment "
                                    f"'{IDENTITY.environment_id}'", code="resource_already_exists",
                               title="Resource Already exists")
        self.engine.wake()
        return JSONResponse(resource, status_code=201, headers={"Location": resource["metadata"]["self"]})

    async def get_statement(self, request: Request) -> Response:
        """The statement; one on its way is answered when it moves (Engine.moved), so a poller sees a DDL
        complete when it does."""
        name = request.path_params["name"]
        body = self.store.statement(name)
        if body is not None and on_its_way(body):
            body = await run_in_threadpool(self.engine.moved, name)
        return JSONResponse(body) if body else _not_found(name)

    async def list_statements(self, request: Request) -> Response:
        params = request.query_params
        try:
            size = int(params.get("page_size", DEFAULT_PAGE_SIZE))
        except ValueError:
            return cloud_error(400, "page_size must be an integer", code="bad_request", parameter="page_size")
        after = _page_token(params.get("page_token"))
        if after is None:
            return _bad_token(params.get("page_token", ""))
        if not 1 <= size <= MAX_PAGE_SIZE:
            return cloud_error(400, f"page_size must be between 1 and {MAX_PAGE_SIZE}", code="bad_request")
        labels = {}
        for pair in filter(None, (p.strip() for p in params.get("label_selector", "").split(","))):
            key, sep, value = pair.partition("=")
            if not sep:
                return cloud_error(400, f"label_selector entry '{pair}' is not key=value", code="bad_request")
            labels[key.strip()] = value.strip()
        pool = params.get("spec.compute_pool_id")
        page, last = self.store.statements(compute_pool_id=pool, after=after, limit=size, labels=labels)
        base = f"{_base(request)}{statements_path()}"
        following = None  # no next page: null, as the other lists (an empty string is not a URL)
        if last is not None:
            query = {k: v for k, v in params.items() if k != "page_token"} | {"page_size": str(size),
                                                                                "page_token": str(last)}
            following = f"{base}?{urlencode(query)}"
        return JSONResponse({"api_version": "sql/v1", "kind": "StatementList",
                             "metadata": {"self": base, "next": following}, "data": page})

    async def update_statement(self, request: Request) -> Response:
        """PUT: the whole statement as last read, modified; 202 without body."""
        name = request.path_params["name"]
        try:
            body = StatementIn.model_validate(await _json(request))
        except (ValidationError, ValueError) as error:
            return cloud_error(400, _invalid(error), code="bad_request", title="Bad Request")
        updated = self._update(name, lambda current: body)
        return updated if isinstance(updated, Response) else Response(status_code=202)

    async def patch_statement(self, request: Request) -> Response:
        """PATCH (JSON Patch): the same rules as PUT on the patched statement; 200 with the statement."""
        name = request.path_params["name"]
        try:
            raw = await _json(request)
            if not isinstance(raw, list):
                raise ValueError("the body must be a JSON Patch array of operations")
            operations = [PatchOp.model_validate(op) for op in raw]
        except (ValidationError, ValueError) as error:
            return cloud_error(400, _invalid(error), code="bad_request", title="Bad Request")

        def patched(current: dict[str, Any]) -> StatementIn:
            return StatementIn.model_validate(apply_patch(current, operations))

        updated = self._update(name, patched)
        return updated if isinstance(updated, Response) else JSONResponse(updated)

    def _update(self, name: str, wanted: Callable[[dict[str, Any]], StatementIn]) -> dict[str, Any] | Response:
        """Check and apply an update in one store transaction, so a concurrent change can not slip between."""

        def change(resource: dict[str, Any]) -> None:
            try:
                body = wanted(resource)
            except PatchError as error:
                rejection = cloud_error(error.status, error.detail, code=error.code, pointer=error.pointer)
                raise _Rejected(rejection) from None
            except ValidationError as error:
                raise _Rejected(cloud_error(422, _invalid(error), code="unprocessable_entity")) from None
            problem = _check_update(resource, body)
            if problem:
                raise _Rejected(problem)
            if body.spec.compute_pool_id and body.spec.compute_pool_id not in self._pool_ids():
                raise _Rejected(cloud_error(400, f"logical compute pool={body.spec.compute_pool_id} not found",
                                            code="bad_request"))
            spec, status = resource["spec"], resource["status"]
            resource["metadata"]["labels"] = body.metadata.labels
            if body.spec.stopped and not spec["stopped"]:
                spec["stopped"] = True
                if status["phase"] in (PENDING, RUNNING, "DEGRADED"):
                    status.update(phase=STOPPING, detail="")
            elif not body.spec.stopped and spec["stopped"]:
                spec.update(stopped=False, compute_pool_id=body.spec.compute_pool_id or spec["compute_pool_id"],
                            principal=body.spec.principal or spec.get("principal"))
                if status["phase"] == STOPPED:
                    status.update(phase=PENDING, detail="", latest_offsets=None, latest_offsets_timestamp=None)

        try:
            updated = self.store.update_statement(name, change)
        except _Rejected as rejected:
            return rejected.response
        if updated is None:
            return _not_found(name)
        self.engine.wake()
        return updated

    async def delete_statement(self, request: Request) -> Response:
        name = request.path_params["name"]

        def change(resource: dict[str, Any]) -> None:
            resource["status"].update(phase=DELETING, detail="")

        if self.store.update_statement(name, change) is None:
            return _not_found(name)
        self.engine.wake()
        return Response(status_code=202)

    async def results(self, request: Request) -> Response:
        name = request.path_params["name"]
        body = self.store.statement(name)
        if body is None:
            return _not_found(name)
        phase = body["status"]["phase"]
        if phase == FAILED:  # no results will come: say why instead of "not ready" forever
            return cloud_error(400, f"Statement={name} is FAILED, it has no results: {body['status']['detail']}",
                               code="bad_request", title="Bad Request")
        if phase not in (RUNNING, COMPLETED):
            return cloud_error(409, f"Results for Statement={name} not ready", code="conflict")
        start = _page_token(request.query_params.get("page_token"))
        if start is None:
            return _bad_token(request.query_params.get("page_token", ""))
        rows = self.store.results(name, start, RESULT_PAGE_SIZE + 1)
        more = len(rows) > RESULT_PAGE_SIZE or body["status"]["phase"] == RUNNING
        rows = rows[:RESULT_PAGE_SIZE]
        url = f"{_base(request)}{statements_path()}/{name}/results"
        following = f"{url}?page_token={start + len(rows)}" if more else ""
        return JSONResponse({"api_version": "sql/v1", "kind": "StatementResult",
                             "metadata": {"self": url, "next": following, "created_at": now()},
                             "results": {"data": [{"op": op, "row": row} for op, row in rows]}})

    async def exceptions(self, request: Request) -> Response:
        name = request.path_params["name"]
        if self.store.statement(name) is None:
            return _not_found(name)
        url = f"{_base(request)}{statements_path()}/{name}/exceptions"
        return JSONResponse({"api_version": "sql/v1", "kind": "StatementExceptionList", "metadata": {"self": url},
                             "data": self.store.exceptions(name)})

    async def task_graph(self, request: Request) -> Response:
        name = request.path_params["name"]
        body = self.store.statement(name)
        if body is None:
            return _not_found(name)
        graph = task_graph_body(name, body["spec"]["statement"])
        if body["status"]["phase"] not in (RUNNING, "DEGRADED") or graph is None:
            return cloud_error(409, f"Task graph for Statement={name} not available: the statement is "
                                    f"{body['status']['phase']}, only a running query has one", code="conflict")
        return JSONResponse(graph)

    # --- compute pools ----------------------------------------------------------------------------

    def _pools(self, base: str) -> list[dict[str, Any]]:
        default = pool_resource(IDENTITY.compute_pool_id, {"display_name": "local", "cloud": "LOCAL",
                                                            "region": "local", "max_cfu": 50, "default_pool": True,
                                                            "enable_ai": False}, base, "PROVISIONED", _STARTED)
        return [default] + [
            pool_resource(p["id"], p["spec"], base, "PROVISIONED", p["created_at"]) for p in self.store.pools()
        ]

    def _pool_ids(self) -> set[str]:
        return {IDENTITY.compute_pool_id} | {p["id"] for p in self.store.pools()}

    async def list_pools(self, request: Request) -> Response:
        if request.query_params.get("environment") != IDENTITY.environment_id:
            return cloud_error(400 if "environment" not in request.query_params else 403,
                               f"environment '{request.query_params.get('environment')}' was not found",
                               code="bad_request")
        base = _base(request)
        return JSONResponse({"api_version": "fcpm/v2", "kind": "ComputePoolList",
                             "metadata": {"first": f"{base}/fcpm/v2/compute-pools", "next": None},
                             "data": self._pools(base)})

    async def get_pool(self, request: Request) -> Response:
        pool_id = request.path_params["pool_id"]
        found = next((p for p in self._pools(_base(request)) if p["id"] == pool_id), None)
        if found is None:
            return cloud_error(403, f"compute pool '{pool_id}' was not found", code="forbidden")
        return JSONResponse(found)

    async def create_pool(self, request: Request) -> Response:
        try:
            body = PoolIn.model_validate(await _json(request))
        except (ValidationError, ValueError) as error:
            return cloud_error(400, _invalid(error), code="bad_request")
        spec = body.spec
        if not POOL_NAME_PATTERN.match(spec.display_name):
            return cloud_error(400, f"display_name '{spec.display_name}' is invalid", code="bad_request")
        if spec.max_cfu not in MAX_CFU_VALUES:
            return cloud_error(400, f"max_cfu must be one of {list(MAX_CFU_VALUES)}", code="bad_request")
        if spec.environment.id != IDENTITY.environment_id:
            return cloud_error(403, f"environment '{spec.environment.id}' was not found", code="forbidden")
        pool: dict[str, Any] = {
            "id": f"lfcp-{uuid.uuid4().hex[:6]}", "created_at": now(),
            "spec": {"display_name": spec.display_name, "cloud": spec.cloud.upper(), "region": spec.region,
                     "max_cfu": spec.max_cfu, "default_pool": False, "enable_ai": False}}
        self.store.put_pool(pool)
        # Accepted while provisioning, as the cloud answers; a local pool is provisioned by the next GET.
        return JSONResponse(pool_resource(pool["id"], pool["spec"], _base(request), "PROVISIONING", pool["created_at"]),
                            status_code=202)

    # --- Kafka REST v3 ----------------------------------------------------------------------------

    def _topics(self, cluster_id: str) -> list[dict[str, Any]]:
        return [t.model_dump() for t in self.store.tables(database=cluster_id)]

    def _topic(self, request: Request, table: dict[str, Any]) -> dict[str, Any]:
        return topic_body(_base(request), request.path_params["cluster_id"], TableDef.model_validate(table))

    async def list_topics(self, request: Request) -> Response:
        cluster = request.path_params["cluster_id"]
        if cluster != IDENTITY.cluster_id:
            return kafka_error(404, 40402, f"Cluster {cluster} not found.")
        url = f"{_base(request)}/kafka/v3/clusters/{cluster}/topics"
        return JSONResponse({"kind": "KafkaTopicList", "metadata": {"self": url, "next": None},
                             "data": [self._topic(request, t) for t in self._topics(cluster)]})

    def _find_topic(self, request: Request) -> tuple[dict[str, Any] | None, Response | None]:
        cluster, topic = request.path_params["cluster_id"], request.path_params["topic"]
        if cluster != IDENTITY.cluster_id:
            return None, kafka_error(404, 40402, f"Cluster {cluster} not found.")
        found = next((t for t in self._topics(cluster) if t["id"]["name"] == topic), None)
        if found is None:
            return None, kafka_error(404, 40403, "This server does not host this topic-partition.")
        return found, None

    async def get_topic(self, request: Request) -> Response:
        found, problem = self._find_topic(request)
        return problem or JSONResponse(self._topic(request, found or {}))

    async def delete_topic(self, request: Request) -> Response:
        found, problem = self._find_topic(request)
        if problem:
            return problem
        assert found is not None  # _find_topic gives a topic or a problem
        self.engine.drop_table(found["uid"])
        return Response(status_code=204)


class _Rejected(Exception):
    """An update refused inside the store's transaction (rolled back), with the answer to give."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _check_update(current: dict[str, Any], body: StatementIn) -> Response | None:
    """PUT rules: fresh resource_version, immutable SQL, pool/principal only change on resume."""
    if body.metadata.resource_version != current["metadata"]["resource_version"]:
        return cloud_error(409, f"The statement was modified since it was read (resource_version "
                                f"{body.metadata.resource_version} is stale, current is "
                                f"{current['metadata']['resource_version']}): read it again and retry",
                           code="conflict", title="Conflict")
    spec = current["spec"]
    if body.spec.statement != spec["statement"]:
        return cloud_error(400, "spec.statement can not be changed", code="bad_request")
    resuming = spec["stopped"] and not body.spec.stopped
    moved = (body.spec.compute_pool_id not in (None, spec["compute_pool_id"])
             or body.spec.principal not in (None, spec.get("principal")))
    if moved and not resuming:
        return cloud_error(400, "spec.compute_pool_id and spec.principal can only change when resuming a stopped "
                                "statement", code="bad_request")
    if current["status"]["phase"] == FAILED and resuming:
        return cloud_error(400, "a FAILED statement can not be resumed", code="bad_request")
    return None


MAX_PAGE_TOKEN_LENGTH = 255  # the spec's limit on page_token
_TOKEN = re.compile(r"^[0-9]{1,18}$")  # this service's tokens: a non-negative position below 2**63


def _page_token(token: str | None) -> int | None:
    """The position a page token names (0 when absent); None for a token this service never issued."""
    if not token:
        return 0
    return int(token) if _TOKEN.match(token) else None


def _bad_token(token: str) -> Response:
    return cloud_error(400, f"page_token '{token[:MAX_PAGE_TOKEN_LENGTH]}' is not a valid page token: use the "
                            f"metadata.next URL of the previous page", code="bad_request", parameter="page_token")


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise ValueError("the request body is not JSON") from None


def _invalid(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(error)
