"""Confluent Cloud REST client: Flink statements, compute pools, Kafka topics, SR subjects.

One ``requests.Session`` (transport.py: per-request ``auth=``, redirects kept
on trusted hosts), explicit (connect, read) timeouts, typed errors (errors.py),
and one method (``_call``) that does the retries every API call allows. Each API has its own base URL and key; a call to
an API that is not configured raises ConfigError naming what is missing.
The embedded local service speaks the same paths, so only the URLs differ.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

import requests
from pydantic import BaseModel, Field, SecretStr, ValidationError

from shift_left_dagster.confluent.errors import (
    ApiError,
    AuthError,
    BadRequest,
    ConfigError,
    Conflict,
    ConfluentError,
    ConnectionFailed,
    NotFound,
    ProvisioningFailed,
    RateLimited,
    ServerError,
    StatementFailed,
    Stopped,
    TimeoutWaiting,
    WrongService,
)
from shift_left_dagster.confluent.models import (
    STATEMENT_NAME_PATTERN,
    CloudErrorBody,
    ComputePool,
    ComputePoolList,
    KafkaErrorBody,
    KafkaTopic,
    KafkaTopicList,
    Phase,
    PoolPhase,
    ResultRow,
    Statement,
    StatementException,
    StatementExceptionList,
    StatementList,
    StatementMetrics,
    StatementResult,
    is_valid_statement_name,
)
from shift_left_dagster.confluent.transport import MAX_REDIRECTS, ApiKeyAuth, ConfluentSession
from shift_left_dagster.project.config import SECRET_ENV_VARS, FlinkProjectConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

CLOUD_API_URL = "https://api.confluent.cloud"
TELEMETRY_API_URL = "https://api.telemetry.confluent.cloud"
LOCAL_SERVICE_SECTION = "local_service"  # config section of a local target: {data_dir: ...}
LOCAL_HEALTH_PATH = "/local/v1/health"  # the local service's extension; answers with its data_dir and pid
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
# SR error code for "subject was soft deleted": the soft delete already happened.
_SR_SUBJECT_SOFT_DELETED = "40404"


class ApiEndpoint(BaseModel):
    """Base URL and key of one API; any of them may be absent until the API is used."""

    base_url: str | None = None
    api_key: str | None = None
    api_secret: SecretStr | None = None


class RetryPolicy(BaseModel):
    """Exponential backoff with full jitter; a 429's Retry-After wins (up to max_retry_after)."""

    max_attempts: int = Field(default=5, ge=1)
    backoff_base: float = Field(default=0.5, ge=0)
    backoff_cap: float = Field(default=20.0, ge=0)
    max_retry_after: float = Field(default=300.0, ge=0)


class PollPolicy(BaseModel):
    """The Confluent CLI's cadence: 0.3 s, +0.3 s every 10 polls; capped here."""

    initial: float = Field(default=0.3, ge=0)
    step: float = Field(default=0.3, ge=0)
    step_every: int = Field(default=10, ge=1)
    cap: float = Field(default=3.0, ge=0)

    def interval(self, polls_done: int) -> float:
        return min(self.cap, self.initial + self.step * (polls_done // self.step_every))


class ClientSettings(BaseModel):
    """Everything the client needs; built from a FlinkProjectConfig by ``from_config``."""

    organization_id: str | None = None
    environment_id: str | None = None
    compute_pool_id: str | None = None
    cloud_provider: str | None = None
    region: str | None = None
    kafka_cluster_id: str | None = None
    statement_properties: dict[str, str] = Field(default_factory=dict)
    page_size: int = Field(default=100, ge=1, le=100)
    flink: ApiEndpoint = Field(default_factory=ApiEndpoint)
    cloud: ApiEndpoint = Field(default_factory=lambda: ApiEndpoint(base_url=CLOUD_API_URL))
    telemetry: ApiEndpoint = Field(default_factory=lambda: ApiEndpoint(base_url=TELEMETRY_API_URL))
    kafka: ApiEndpoint = Field(default_factory=ApiEndpoint)
    schema_registry: ApiEndpoint = Field(default_factory=ApiEndpoint)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=60.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    poll: PollPolicy = Field(default_factory=PollPolicy)
    max_conflict_retries: int = Field(default=3, ge=0)
    # A local service's data folder: the client refuses a service whose health names another folder.
    service_data_dir: str | None = None

    @classmethod
    def from_config(cls, cfg: FlinkProjectConfig) -> ClientSettings:
        kafka_key = cfg.kafka.api_key or cfg.kafka.sasl_username
        kafka_secret = cfg.kafka.api_secret or cfg.kafka.sasl_password
        return cls(
            organization_id=cfg.confluent_cloud.organization_id,
            environment_id=cfg.confluent_cloud.environment_id,
            compute_pool_id=cfg.flink.compute_pool_id,
            cloud_provider=cfg.confluent_cloud.provider,
            region=cfg.confluent_cloud.region,
            kafka_cluster_id=cfg.kafka.cluster_id,
            statement_properties=cfg.statement_properties(),
            page_size=cfg.confluent_cloud.page_size,
            flink=ApiEndpoint(base_url=cfg.flink_base_url, api_key=cfg.flink.api_key, api_secret=cfg.flink.api_secret),
            cloud=ApiEndpoint(
                base_url=cfg.cloud_api_url,
                api_key=cfg.confluent_cloud.api_key,
                api_secret=cfg.confluent_cloud.api_secret,
            ),
            telemetry=ApiEndpoint(
                base_url=cfg.telemetry_url,
                api_key=cfg.confluent_cloud.api_key,
                api_secret=cfg.confluent_cloud.api_secret,
            ),
            kafka=ApiEndpoint(base_url=cfg.kafka_rest_url, api_key=kafka_key, api_secret=kafka_secret),
            schema_registry=ApiEndpoint(
                base_url=cfg.registry_url,
                api_key=cfg.registry.registry_key_name,
                api_secret=cfg.registry.registry_key_secret,
            ),
            service_data_dir=((cfg.model_extra or {}).get(LOCAL_SERVICE_SECTION) or {}).get("data_dir"),
        )


def bind_to_data_dir(cfg: FlinkProjectConfig, data_dir: str | os.PathLike[str]) -> FlinkProjectConfig:
    """Bind a local service's config to its data folder: clients made from it refuse another folder's service."""
    setattr(cfg, LOCAL_SERVICE_SECTION, {"data_dir": os.path.realpath(data_dir)})
    return cfg


class _Api(Enum):
    """The four APIs: settings attribute, label, and the settings that configure each (named in ConfigError)."""

    FLINK = ("flink", "Flink SQL API", "flink.flink_url (or confluent_cloud.region/provider)",
             ("flink", "api_key"), ("flink", "api_secret"))
    CLOUD = ("cloud", "Confluent Cloud API (fcpm/v2)", "confluent_cloud.base_api",
             ("confluent_cloud", "api_key"), ("confluent_cloud", "api_secret"))
    TELEMETRY = ("telemetry", "Metrics API (v2/metrics)", "confluent_cloud.telemetry_api",
                 ("confluent_cloud", "api_key"), ("confluent_cloud", "api_secret"))
    KAFKA = ("kafka", "Kafka REST API", "kafka.rest_endpoint (or kafka.pkafka_cluster)",
             ("kafka", "api_key"), ("kafka", "api_secret"))
    SCHEMA_REGISTRY = ("schema_registry", "Schema Registry API", "registry.url",
                       ("registry", "registry_key_name"), ("registry", "registry_key_secret"))

    def __init__(self, attr: str, label: str, url_setting: str, key: tuple[str, str], secret: tuple[str, str]) -> None:
        self.attr = attr
        self.label = label
        self.url_setting = url_setting
        self.key_setting = SECRET_ENV_VARS[key]
        self.secret_setting = SECRET_ENV_VARS[secret]


class _Safety(Enum):
    """How much retrying a call tolerates."""

    IDEMPOTENT = "idempotent"  # GET, PUT with resource_version, DELETE
    CREATE_BY_NAME = "create_by_name"  # POST of a uniquely named resource: a 409 after an ambiguous try = it landed
    NOT_IDEMPOTENT = "not_idempotent"  # POST that would duplicate: retry only what surely did not land


class ConfluentClient:
    """Operations on Confluent Cloud (or the local service) over one HTTP session."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        session: ConfluentSession | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._session = session or ConfluentSession()
        self._checked_services: set[str] = set()  # base URLs whose health named our data folder
        self._sleep = sleep
        self._clock = clock
        # Asked before each pause of a wait; True gives the wait up with Stopped (an executor that stops).
        self.should_stop: Callable[[], bool] = _never
        self._rng = rng or random.Random()
        self.labels: dict[str, str] = {}  # added to every statement this client creates (e.g. the project's)

    @classmethod
    def from_config(cls, cfg: FlinkProjectConfig, **kwargs: Any) -> ConfluentClient:
        return cls(ClientSettings.from_config(cfg), **kwargs)

    def __repr__(self) -> str:
        s = self.settings
        return (
            f"ConfluentClient(organization_id={s.organization_id!r}, environment_id={s.environment_id!r}, "
            f"flink_url={s.flink.base_url!r})"
        )

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> ConfluentClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- Flink statements (sql/v1) ---------------------------------------------------

    def create_statement(
        self,
        name: str,
        sql: str,
        *,
        properties: Mapping[str, str] | None = None,
        compute_pool_id: str | None = None,
        principal: str | None = None,
        labels: Mapping[str, str] | None = None,
        stopped: bool = False,
    ) -> Statement:
        """POST a statement (phase PENDING). Properties add to the environment's defaults.

        Safe to retry: if an ambiguous first attempt landed, the retry's 409 is
        answered with the existing statement.
        """
        if not is_valid_statement_name(name):
            raise ValueError(f"invalid statement name {name!r}: lowercase a-z, 0-9, '-', '.', at most 72 characters")
        spec: dict[str, Any] = {
            "statement": sql,
            "properties": {**self.settings.statement_properties, **(properties or {})},
            "stopped": stopped,
        }
        pool = compute_pool_id or self.settings.compute_pool_id
        if pool:
            spec["compute_pool_id"] = pool
        if principal:
            spec["principal"] = principal
        body: dict[str, Any] = {
            "name": name,
            "organization_id": self.settings.organization_id,
            "environment_id": self.settings.environment_id,
            "spec": spec,
        }
        if labels or self.labels:
            body["metadata"] = {"labels": {**self.labels, **(labels or {})}}
        try:
            response = self._call(_Api.FLINK, "POST", self._statements_path(), json=body, safety=_Safety.CREATE_BY_NAME)
        except Conflict as exc:
            if not exc.landed:
                raise
            existing = self.get_statement(name)
            if existing.spec.statement != sql:
                raise  # the name was taken by another statement before our first attempt
            logger.info("statement %s already exists after a retried create: the first attempt landed", name)
            return existing
        return Statement.model_validate(response.json())

    def get_statement(self, name: str) -> Statement:
        return Statement.model_validate(self._call(_Api.FLINK, "GET", self._statement_path(name)).json())

    def list_statements(
        self, *, compute_pool_id: str | None = None, label_selector: str | Mapping[str, str] | None = None
    ) -> list[Statement]:
        """All statements of the environment (every page). Phase filters are not in the API: filter the result."""
        params: dict[str, str] = {}
        if compute_pool_id:
            params["spec.compute_pool_id"] = compute_pool_id
        if label_selector:
            # Only "comma-separated" is documented; exact k=v pairs are the safe subset.
            if not isinstance(label_selector, str):
                label_selector = ",".join(f"{key}={value}" for key, value in label_selector.items())
            params["label_selector"] = label_selector
        pages = self._pages(_Api.FLINK, self._statements_path(), params, StatementList)
        return [statement for page in pages for statement in page.data]

    def delete_statement(self, name: str, *, wait: bool = True, timeout: float = 600.0) -> None:
        """DELETE, then (if wait) poll until GET answers 404. Deleting a missing statement is a no-op."""
        try:
            self._call(_Api.FLINK, "DELETE", self._statement_path(name))
        except NotFound:
            return
        if wait:
            self._poll(lambda: self._phase_or_none(name), lambda phase: phase is None,
                       timeout=timeout, subject=f"statement {name}", wanted="deleted (404)", describe=str)

    def stop_statement(self, name: str, *, wait: bool = True, timeout: float = 600.0) -> Statement:
        """Set spec.stopped=true (nothing else), then (if wait) wait for STOPPED; latest_offsets are set then.

        A statement already stopped, COMPLETED or FAILED is left alone (the
        service may also stop idle foreground statements by itself).
        """

        def stop(statement: Statement) -> bool:
            if statement.spec.stopped or statement.phase in (Phase.COMPLETED, Phase.FAILED):
                return False
            statement.spec.stopped = True
            return True

        statement = self._update(name, stop)
        return self.wait_for_phase(name, {Phase.STOPPED}, timeout) if wait and statement.spec.stopped else statement

    def resume_statement(
        self,
        name: str,
        *,
        compute_pool_id: str | None = None,
        principal: str | None = None,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> Statement:
        """Set spec.stopped=false (optionally moving pool/principal), then (if wait) wait for RUNNING or COMPLETED."""

        def resume(statement: Statement) -> bool:
            spec = statement.spec
            changes = (compute_pool_id and compute_pool_id != spec.compute_pool_id) or (
                principal and principal != spec.principal
            )
            if not spec.stopped:
                if changes:
                    # The service accepts pool/principal changes only with the stopped -> resumed transition.
                    raise ValueError(f"statement {name} is not stopped; stop it before changing its pool or principal")
                return False
            spec.stopped = False
            if compute_pool_id:
                spec.compute_pool_id = compute_pool_id
            if principal:
                spec.principal = principal
            return True

        statement = self._update(name, resume)
        return self.wait_for_phase(name, {Phase.RUNNING, Phase.COMPLETED}, timeout) if wait else statement

    def wait_for_phase(self, name: str, phases: Iterable[str], timeout: float = 600.0) -> Statement:
        """Poll GET until the phase is one of ``phases``; FAILED (unless wanted) raises StatementFailed."""
        wanted = frozenset(phases)

        def reached(statement: Statement) -> bool:
            if statement.phase in wanted:
                return True
            if statement.phase == Phase.FAILED:
                raise self._failure(statement)
            return False

        return self._poll(lambda: self.get_statement(name), reached, timeout=timeout,
                          subject=f"statement {name}", wanted="/".join(sorted(wanted)), describe=lambda s: s.phase)

    def statement_results(self, name: str, *, timeout: float = 60.0) -> list[ResultRow]:
        """Every result row (with its op code), following ``metadata.next``.

        Stops when ``next`` is empty (bounded, complete), at an empty page
        (a RUNNING unbounded statement has nothing more for now), or at
        ``timeout``. A 409 "not ready" is polled until the timeout.
        """
        deadline = self._clock() + timeout
        rows: list[ResultRow] = []
        token: str | None = None
        polls = 0
        while True:
            params = {"page_token": token} if token else None
            try:
                response = self._call(_Api.FLINK, "GET", f"{self._statement_path(name)}/results", params=params)
            except Conflict:
                if self._clock() >= deadline:
                    raise
                self._sleep(self.settings.poll.interval(polls))
                polls += 1
                continue
            page = StatementResult.model_validate(response.json())
            rows.extend(page.results.data)
            token = _page_token(page.metadata.next)
            if token is None or not page.results.data or self._clock() >= deadline:
                return rows

    def statement_exceptions(self, name: str) -> list[StatementException]:
        """Up to 10 most recent exceptions, newest first."""
        response = self._call(_Api.FLINK, "GET", f"{self._statement_path(name)}/exceptions")
        return StatementExceptionList.model_validate(response.json()).data

    # --- metrics (the Metrics API, v2/metrics/cloud) -----------------------------------

    def statement_metrics(self, compute_pool_id: str | None = None) -> dict[str, StatementMetrics]:
        """Records in, out and pending per statement of a compute pool (default: the configured one),
        one Metrics API query per metric, grouped by statement name, over the last 10 minutes."""
        pool = compute_pool_id or self._require("compute_pool_id", "flink.compute_pool_id")
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        interval = f"{(now - timedelta(minutes=10)).strftime(stamp)}/{(now + timedelta(minutes=1)).strftime(stamp)}"
        found: dict[str, StatementMetrics] = {}
        for field, metric in (("records_in", "num_records_in"), ("records_out", "num_records_out"),
                              ("pending_records", "pending_records")):
            query = {"aggregations": [{"metric": f"io.confluent.flink/{metric}"}],
                     "filter": {"field": "resource.compute_pool.id", "op": "EQ", "value": pool},
                     "group_by": ["resource.flink_statement.name"], "granularity": "PT1M",
                     "intervals": [interval], "limit": 1000}
            response = self._call(_Api.TELEMETRY, "POST", "/v2/metrics/cloud/query", json=query)
            latest: dict[str, tuple[str, float]] = {}
            for point in response.json().get("data", []):
                name, stamp = point.get("resource.flink_statement.name"), str(point.get("timestamp", ""))
                if name and (name not in latest or stamp >= latest[name][0]):
                    latest[name] = (stamp, float(point.get("value", 0)))
            for name, (_, value) in latest.items():
                setattr(found.setdefault(name, StatementMetrics()), field, int(value))
        return found

    # --- compute pools (fcpm/v2) -----------------------------------------------------

    def list_compute_pools(self, *, region: str | None = None) -> list[ComputePool]:
        params = {"environment": self._require("environment_id", "confluent_cloud.environment_id")}
        if region:
            params["spec.region"] = region
        pages = self._pages(_Api.CLOUD, "/fcpm/v2/compute-pools", params, ComputePoolList)
        return [pool for page in pages for pool in page.data]

    def get_compute_pool(self, pool_id: str) -> ComputePool:
        params = {"environment": self._require("environment_id", "confluent_cloud.environment_id")}
        response = self._call(_Api.CLOUD, "GET", f"/fcpm/v2/compute-pools/{_seg(pool_id)}", params=params)
        return ComputePool.model_validate(response.json())

    def create_compute_pool(
        self,
        display_name: str,
        *,
        max_cfu: int,
        cloud: str | None = None,
        region: str | None = None,
        wait: bool = True,
        timeout: float = 1200.0,
    ) -> ComputePool:
        """POST a pool (PROVISIONING), then (if wait) poll until PROVISIONED; FAILED raises ProvisioningFailed.

        Pool names are not unique, so a create is retried only when it surely
        did not land (429, connect timeout): a blind retry could pay for two pools.
        """
        spec = {
            "display_name": display_name,
            "cloud": (cloud or self._require("cloud_provider", "confluent_cloud.provider")).upper(),
            "region": region or self._require("region", "confluent_cloud.region"),
            "max_cfu": max_cfu,
            "environment": {"id": self._require("environment_id", "confluent_cloud.environment_id")},
        }
        response = self._call(_Api.CLOUD, "POST", "/fcpm/v2/compute-pools", json={"spec": spec},
                              safety=_Safety.NOT_IDEMPOTENT)
        pool = ComputePool.model_validate(response.json())
        if not wait:
            return pool

        def provisioned(current: ComputePool) -> bool:
            if current.status.phase == PoolPhase.FAILED:
                raise ProvisioningFailed(current.id, display_name)
            return current.status.phase == PoolPhase.PROVISIONED

        return self._poll(lambda: self.get_compute_pool(pool.id), provisioned, timeout=timeout,
                          subject=f"compute pool {display_name} ({pool.id})", wanted=PoolPhase.PROVISIONED,
                          describe=lambda p: p.status.phase)

    # --- Kafka REST v3 and Schema Registry --------------------------------------------

    def list_topics(self) -> list[KafkaTopic]:
        """Topics of the cluster; Kafka REST v3 answers in one page (``metadata.next`` is null)."""
        response = self._call(_Api.KAFKA, "GET", self._topics_path())
        return KafkaTopicList.model_validate(response.json()).data

    def delete_topic(self, topic: str) -> bool:
        """Delete a topic; False when it did not exist."""
        try:
            self._call(_Api.KAFKA, "DELETE", f"{self._topics_path()}/{_seg(topic)}")
        except NotFound:
            return False
        return True

    def delete_subject(self, subject: str) -> list[int]:
        """Soft then permanent delete of a subject (SR refuses a permanent delete first).

        Returns the versions deleted; [] when the subject did not exist.
        """
        path = f"/subjects/{_seg(subject)}"
        try:
            self._call(_Api.SCHEMA_REGISTRY, "DELETE", path)
        except NotFound as exc:
            if exc.code != _SR_SUBJECT_SOFT_DELETED:
                return []
        response = self._call(_Api.SCHEMA_REGISTRY, "DELETE", path, params={"permanent": "true"})
        return [int(version) for version in response.json()]

    # --- statement helpers -------------------------------------------------------------

    def _statements_path(self) -> str:
        org = self._require("organization_id", "confluent_cloud.organization_id")
        env = self._require("environment_id", "confluent_cloud.environment_id")
        return f"/sql/v1/organizations/{_seg(org)}/environments/{_seg(env)}/statements"

    def _statement_path(self, name: str) -> str:
        """The path of one statement; a name no statement can have ('/', '..', upper case) is refused here."""
        if not STATEMENT_NAME_PATTERN.fullmatch(name):
            raise ValueError(f"invalid statement name {name!r}: lowercase a-z, 0-9, '-' and '.' between them")
        return f"{self._statements_path()}/{_seg(name)}"

    def _topics_path(self) -> str:
        return f"/kafka/v3/clusters/{_seg(self._require('kafka_cluster_id', 'kafka.cluster_id'))}/topics"

    def _phase_or_none(self, name: str) -> str | None:
        try:
            return self.get_statement(name).phase
        except NotFound:
            return None

    def _update(self, name: str, change: Callable[[Statement], bool]) -> Statement:
        """GET, apply ``change``, PUT with the read resource_version; on 409 (stale) re-read and retry."""
        attempts = self.settings.max_conflict_retries + 1
        for attempt in range(1, attempts + 1):
            statement = self.get_statement(name)
            if not change(statement):
                return statement
            try:
                # 202 and no body in the spec: never read the PUT response.
                self._call(_Api.FLINK, "PUT", self._statement_path(name), json=statement.to_request_body())
                return statement
            except Conflict:
                if attempt == attempts:
                    raise
                logger.info("statement %s changed since it was read (409); re-reading (attempt %d)", name, attempt)
        raise AssertionError("unreachable")

    def _failure(self, statement: Statement) -> StatementFailed:
        """StatementFailed with status.detail, or (as the CLI does) the newest exception when detail is empty."""
        detail = statement.status.detail or ""
        newest: str | None = None
        if not detail:
            try:
                exceptions = self.statement_exceptions(statement.name)
                newest = exceptions[0].message if exceptions else None
            except ConfluentError as exc:
                logger.warning("could not read exceptions of failed statement %s: %s", statement.name, exc)
        return StatementFailed(statement.name, detail, newest)

    # --- shared machinery ---------------------------------------------------------------

    def _require(self, field: str, setting: str) -> str:
        value = getattr(self.settings, field)
        if not value:
            raise ConfigError("Confluent client", [setting])
        return value

    def _endpoint(self, api: _Api) -> tuple[str, ApiKeyAuth]:
        endpoint: ApiEndpoint = getattr(self.settings, api.attr)
        missing = [
            setting
            for setting, value in (
                (api.url_setting, endpoint.base_url),
                (api.key_setting, endpoint.api_key),
                (api.secret_setting, endpoint.api_secret and endpoint.api_secret.get_secret_value()),
            )
            if not value
        ]
        if missing:
            raise ConfigError(api.label, missing)
        assert endpoint.base_url and endpoint.api_key and endpoint.api_secret
        return endpoint.base_url.rstrip("/"), ApiKeyAuth(endpoint.api_key, endpoint.api_secret)

    def _pages(self, api: _Api, path: str, params: Mapping[str, str], model: type[M]) -> Iterator[M]:
        """Every page of a list, following the ``page_token`` of ``metadata.next`` (as the CLI does)."""
        token: str | None = None
        seen: set[str] = set()
        while True:
            query = {**params, "page_size": str(self.settings.page_size)}
            if token:
                query["page_token"] = token
            page = model.model_validate(self._call(api, "GET", path, params=query).json())
            yield page
            token = _page_token(page.metadata.next)  # type: ignore[attr-defined]
            if token is None or token in seen:
                return
            seen.add(token)

    def _poll(
        self,
        fetch: Callable[[], T],
        done: Callable[[T], bool],
        *,
        timeout: float,
        subject: str,
        wanted: str,
        describe: Callable[[T], str | None],
    ) -> T:
        """Fetch until ``done``; sleep on the PollPolicy cadence; TimeoutWaiting names the last state seen."""
        deadline = self._clock() + timeout
        polls = 0
        while True:
            current = fetch()
            if done(current):
                return current
            if self.should_stop():
                raise Stopped(subject, wanted)
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise TimeoutWaiting(subject, wanted, describe(current), timeout)
            self._sleep(min(self.settings.poll.interval(polls), remaining))
            polls += 1

    def _call(
        self,
        api: _Api,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        safety: _Safety = _Safety.IDEMPOTENT,
    ) -> requests.Response:
        """One API call; the service is checked first when this client is bound to a local data folder."""
        base_url, auth = self._endpoint(api)
        if self.settings.service_data_dir and base_url not in self._checked_services:
            self._check_service(base_url, auth, self.settings.service_data_dir)
        try:
            return self._send(base_url, auth, method, path, params=params, json=json, safety=safety)
        except ConnectionFailed:
            self._checked_services.discard(base_url)  # whatever answers next may be another service
            raise

    def _check_service(self, base_url: str, auth: ApiKeyAuth, data_dir: str) -> None:
        """The local service at ``base_url`` must serve ``data_dir``: never read or change another folder's
        statements."""
        try:
            health = self._send(base_url, auth, "GET", LOCAL_HEALTH_PATH).json()
        except (ApiError, ValueError) as exc:
            raise WrongService(base_url, data_dir, None) from exc
        theirs = health.get("data_dir") if isinstance(health, dict) else None
        if not isinstance(theirs, str) or os.path.realpath(theirs) != os.path.realpath(data_dir):
            raise WrongService(base_url, data_dir, theirs if isinstance(theirs, str) else None)
        self._checked_services.add(base_url)

    def _send(
        self,
        base_url: str,
        auth: ApiKeyAuth,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        safety: _Safety = _Safety.IDEMPOTENT,
    ) -> requests.Response:
        """One request with the retries ``safety`` allows; errors become typed exceptions.

        The API's key goes on this request only (``auth=``); the session follows redirects.
        """
        policy = self.settings.retry
        ambiguous = False  # an earlier attempt may have reached the service
        for attempt in range(1, policy.max_attempts + 1):
            started = self._clock()
            try:
                response = self._session.request(
                    method, base_url + path, params=params, json=json, auth=auth, allow_redirects=True,
                    timeout=(self.settings.connect_timeout, self.settings.read_timeout),
                )
            except requests.TooManyRedirects as exc:
                raise ConfluentError(f"{method} {path}: more than {MAX_REDIRECTS} redirects") from exc
            except (requests.ConnectionError, requests.Timeout) as exc:
                retry = _retryable_exception(exc, safety) and attempt < policy.max_attempts
                logger.debug("%s %s: %s (attempt %d)", method, path, type(exc).__name__, attempt)
                if not retry:
                    raise ConnectionFailed(method, path, type(exc).__name__, attempt) from exc
                # A connect timeout never reached the service; anything else may have.
                ambiguous = ambiguous or not isinstance(exc, requests.ConnectTimeout)
                delay = self._backoff(attempt)
                logger.info("%s %s: %s; retrying in %.2f s", method, path, type(exc).__name__, delay)
                self._sleep(delay)
                continue
            status = response.status_code
            logger.debug("%s %s -> %d (attempt %d, %.0f ms)", method, path, status, attempt,
                         (self._clock() - started) * 1000)
            if status < 400:
                return response
            if status in _RETRY_STATUSES and attempt < policy.max_attempts and _retryable_status(status, safety):
                ambiguous = ambiguous or status >= 500
                asked = _retry_after(response, policy.max_retry_after)
                delay = self._backoff(attempt) if asked is None else asked
                logger.info("%s %s -> %d; retrying in %.2f s", method, path, status, delay)
                self._sleep(delay)
                continue
            raise _api_error(method, path, response, landed=ambiguous and safety is _Safety.CREATE_BY_NAME)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        policy = self.settings.retry
        return self._rng.uniform(0, min(policy.backoff_cap, policy.backoff_base * 2 ** (attempt - 1)))


def _never() -> bool:
    return False


def _seg(value: str) -> str:
    """One URL path segment, percent-encoded (SR subjects with contexts contain ':')."""
    return quote(value, safe="")


def _page_token(next_url: str | None) -> str | None:
    if not next_url:
        return None
    tokens = parse_qs(urlsplit(next_url).query).get("page_token")
    return tokens[0] if tokens and tokens[0] else None


def _retryable_exception(exc: requests.RequestException, safety: _Safety) -> bool:
    if isinstance(exc, requests.exceptions.SSLError):
        return False  # a certificate problem does not heal by retrying
    if safety is _Safety.NOT_IDEMPOTENT:
        return isinstance(exc, requests.ConnectTimeout)  # never connected: the request surely did not land
    return True


def _retryable_status(status: int, safety: _Safety) -> bool:
    return status == 429 or safety is not _Safety.NOT_IDEMPOTENT


def _retry_after(response: requests.Response, cap: float) -> float | None:
    """Retry-After in seconds (the form Confluent documents, on 429 and maybe 503); None if absent or not a number."""
    try:
        return min(max(float(response.headers["Retry-After"]), 0.0), cap)
    except (KeyError, ValueError):
        return None


_ERRORS: dict[int, type[ApiError]] = {
    400: BadRequest, 422: BadRequest, 401: AuthError, 403: AuthError, 404: NotFound, 409: Conflict, 429: RateLimited,
}


def _api_error(method: str, path: str, response: requests.Response, *, landed: bool) -> ApiError:
    detail, code = _error_detail(response)
    request_id = response.headers.get("X-Request-Id")
    status = response.status_code
    if status == 409:
        return Conflict(method, path, status, detail, code=code, request_id=request_id, landed=landed)
    cls = _ERRORS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(method, path, status, detail, code=code, request_id=request_id)


def _error_detail(response: requests.Response) -> tuple[str, str | None]:
    """The server's words from either error shape (``errors[]`` or ``{error_code, message}``), else its text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        try:
            if "errors" in body:
                cloud = CloudErrorBody.model_validate(body)
                return cloud.message(), cloud.code()
            if "error_code" in body:
                kafka = KafkaErrorBody.model_validate(body)
                return kafka.message, str(kafka.error_code)
        except ValidationError:
            pass
    text = " ".join(response.text.split())  # a 429 may be an HTML page
    return text[:300], None
