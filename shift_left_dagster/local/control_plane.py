"""Control-plane reads clients make first: environments (org/v2) and Kafka clusters (cmk/v2).

The local service is one environment holding one cluster; its REST endpoints
(Flink, Kafka REST, Schema Registry) are all the service's own base URL.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shift_left_dagster.local.api import cloud_error
from shift_left_dagster.local.settings import IDENTITY

CREATED = "2024-01-01T00:00:00Z"  # the local environment and cluster exist since the service's epoch


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _crn(*parts: str) -> str:
    return "/".join([f"crn://confluent.cloud/organization={IDENTITY.organization_id}", *parts])


def environment(base: str) -> dict[str, Any]:
    env = IDENTITY.environment_id
    return {"api_version": "org/v2", "kind": "Environment", "id": env,
            "metadata": {"self": f"{base}/org/v2/environments/{env}", "resource_name": _crn(f"environment={env}"),
                         "created_at": CREATED, "updated_at": CREATED},
            "display_name": env, "stream_governance_config": {"package": "ESSENTIALS"}}


def cluster(base: str) -> dict[str, Any]:
    env, lkc = IDENTITY.environment_id, IDENTITY.cluster_id
    return {"api_version": "cmk/v2", "kind": "Cluster", "id": lkc,
            "metadata": {"self": f"{base}/cmk/v2/clusters/{lkc}",
                         "resource_name": _crn(f"environment={env}", f"cloud-cluster={lkc}", f"kafka={lkc}"),
                         "created_at": CREATED, "updated_at": CREATED},
            "spec": {"display_name": lkc, "availability": "SINGLE_ZONE", "cloud": "LOCAL", "region": "local",
                     "config": {"kind": "Basic"}, "http_endpoint": base, "api_endpoint": base,
                     "kafka_bootstrap_endpoint": "",
                     "environment": {"id": env, "related": f"{base}/org/v2/environments/{env}",
                                     "resource_name": _crn(f"environment={env}")}},
            "status": {"phase": "PROVISIONED"}}


def control_plane_routes() -> list[Route]:
    async def list_environments(request: Request) -> Response:
        base = _base(request)
        return JSONResponse({"api_version": "org/v2", "kind": "EnvironmentList",
                             "metadata": {"first": f"{base}/org/v2/environments", "next": None},
                             "data": [environment(base)]})

    async def get_environment(request: Request) -> Response:
        env = request.path_params["environment_id"]
        if env != IDENTITY.environment_id:
            return cloud_error(404, f"environment '{env}' was not found", code="not_found", title="Not Found")
        return JSONResponse(environment(_base(request)))

    def environment_problem(request: Request) -> Response | None:
        env = request.query_params.get("environment")
        if not env:
            return cloud_error(400, "environment is required", code="bad_request", parameter="environment")
        if env != IDENTITY.environment_id:
            return cloud_error(403, f"environment '{env}' was not found", code="forbidden")
        return None

    async def list_clusters(request: Request) -> Response:
        problem = environment_problem(request)
        if problem:
            return problem
        base = _base(request)
        return JSONResponse({"api_version": "cmk/v2", "kind": "ClusterList",
                             "metadata": {"first": f"{base}/cmk/v2/clusters", "next": None},
                             "data": [cluster(base)]})

    async def get_cluster(request: Request) -> Response:
        problem = environment_problem(request)
        if problem:
            return problem
        lkc = request.path_params["cluster_id"]
        if lkc != IDENTITY.cluster_id:
            return cloud_error(403, f"cluster '{lkc}' was not found", code="forbidden")
        return JSONResponse(cluster(_base(request)))

    return [
        Route("/org/v2/environments", list_environments, methods=["GET"]),
        Route("/org/v2/environments/{environment_id}", get_environment, methods=["GET"]),
        Route("/cmk/v2/clusters", list_clusters, methods=["GET"]),
        Route("/cmk/v2/clusters/{cluster_id}", get_cluster, methods=["GET"]),
    ]
