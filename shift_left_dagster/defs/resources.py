"""Dagster resources: the Confluent Flink service the assets deploy to, and its deployment methods.

(No `from __future__ import annotations`: Dagster reads field annotations at runtime.)
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal

from dagster import (
    AssetExecutionContext,
    ConfigurableResource,
    DagsterInstance,
    Failure,
    InitResourceContext,
    TimeWindow,
)
from pydantic import Field, PrivateAttr

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.defs.checks import FlinkChecksResource, RunChecks, SparkResource
from shift_left_dagster.defs.info import flink_assets_info
from shift_left_dagster.defs.run import FlinkRun
from shift_left_dagster.deploy.backfill import BackfillRefused
from shift_left_dagster.deploy.deployment import Deployer, Deployment
from shift_left_dagster.deploy.lease import DAGSTER_RUN_PREFIX, LeaseBusy, Liveness
from shift_left_dagster.deploy.target import connect, local_data_dir, resolve_mode, target_config
from shift_left_dagster.project.config import FlinkProjectConfig


class ConfluentFlinkResource(ConfigurableResource):
    """Confluent Cloud for Apache Flink, or the embedded local service when no credentials are set.

    Secrets are given as `EnvVar("SL_FLINK_API_KEY")` etc.; they reach the client
    as SecretStr and are never logged nor put in metadata.
    """

    mode: Literal["auto", "local", "cloud"] = Field(
        default="auto", description="auto: cloud when a Flink API key is set, else the local service"
    )
    config_file: str | None = Field(default=None, description="shift_left config.yaml (default: $CONFIG_FILE)")
    flink_api_key: str | None = Field(default=None, description="Flink region API key (cloud), as EnvVar(...)")
    flink_api_secret: str | None = Field(default=None, description="its secret, as EnvVar(...)")
    cloud_api_key: str | None = Field(default=None, description="Cloud API key: compute pools, Metrics API")
    cloud_api_secret: str | None = Field(default=None, description="its secret")
    kafka_api_key: str | None = Field(default=None, description="Kafka REST key: topics the plan checks")
    kafka_api_secret: str | None = Field(default=None, description="its secret")
    registry_api_key: str | None = Field(default=None, description="Schema Registry key")
    registry_api_secret: str | None = Field(default=None, description="its secret")
    local_data_dir: str | None = Field(default=None, description=(
        "data folder of the local service (default: $SHIFT_LEFT_LOCAL_DATA, else ./.shift_left_dagster/local "
        "of the working directory: set it when definitions load from another folder)"))
    local_url: str | None = Field(default=None, description="a local service already running (else one is started)")
    seed_local_raw_topics: bool = Field(
        default=True, description="local mode: create missing raw topics from the project's seeds/ folder"
    )
    max_parallel: int = Field(default=4, description="plan steps run at once")
    statement_timeout_seconds: float = Field(default=600.0, description="a statement's wait for its phase")
    settle_seconds: float = Field(default=2.0, description="an in-place replacement must stay healthy this long")
    lease_wait_seconds: float = Field(
        default=600.0, description="how long a run waits for another live deployment of the project to end")
    _config: FlinkProjectConfig | None = PrivateAttr(default=None)
    _client: ConfluentClient | None = PrivateAttr(default=None)
    _deployments: list[Deployment] = PrivateAttr(default_factory=list)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        for deployment in self._deployments:  # a body that planned without streaming frees the lease here
            deployment.release()
        self._deployments.clear()
        if self._client is not None:
            self._client.close()
            self._client = None

    def _secrets(self) -> dict[tuple[str, str], str]:
        """The keys this resource was given, by config field (they win over SL_* variables)."""
        given = {
            ("flink", "api_key"): self.flink_api_key, ("flink", "api_secret"): self.flink_api_secret,
            ("confluent_cloud", "api_key"): self.cloud_api_key,
            ("confluent_cloud", "api_secret"): self.cloud_api_secret,
            ("kafka", "api_key"): self.kafka_api_key, ("kafka", "api_secret"): self.kafka_api_secret,
            ("kafka", "sasl.username"): self.kafka_api_key, ("kafka", "sasl.password"): self.kafka_api_secret,
            ("registry", "registry_key_name"): self.registry_api_key,
            ("registry", "registry_key_secret"): self.registry_api_secret,
        }
        return {k: v for k, v in given.items() if v}

    @property
    def is_local(self) -> bool:
        return resolve_mode(self.mode, os.environ, self.flink_api_key) == "local"

    def get_local_data_dir(self) -> str:
        """The data folder of the local service this resource talks to (checks read sink files there)."""
        return local_data_dir(self.local_url, self.local_data_dir)

    def get_config(self) -> FlinkProjectConfig:
        """Resolved once per run (in local mode this may start the service)."""
        if self._config is None:
            self._config = target_config(self.config_file, mode=self.mode, secrets=self._secrets(),
                                         local_data_dir=self.local_data_dir, local_url=self.local_url)
        return self._config

    def get_client(self) -> ConfluentClient:
        """One client per run, closed when the run's resources are torn down."""
        if self._client is None:
            self._client = connect(self.get_config())
        return self._client

    # -- deployments (the same Deployer the CLI uses) -------------------------------------------

    def get_deployer(self, context: AssetExecutionContext) -> Deployer:
        info = flink_assets_info(context)
        seeds = info.project.seeds_dir if self.is_local and self.seed_local_raw_topics else None
        return Deployer(client=self.get_client(), graph=info.project.graph, config=self.get_config(),
                        seeds_dir=seeds if seeds and seeds.is_dir() else None, max_parallel=self.max_parallel,
                        timeout=self.statement_timeout_seconds, settle_seconds=self.settle_seconds,
                        **self.run_lease(context))

    def run_lease(self, context: Any) -> dict[str, Any]:
        """How a run holds the project's lease (Deployer fields): as `dagster-run:<run_id>`, alive while the
        instance says the run is in progress, waiting `lease_wait_seconds` for another live holder."""
        return {"holder": f"{DAGSTER_RUN_PREFIX}{context.run.run_id}", "lease_wait_seconds": self.lease_wait_seconds,
                "lease_liveness": run_liveness(context.instance)}

    def deploy(self, *, context: AssetExecutionContext, dml_only: bool = False, force_sources: bool = False,
               may_start_children: bool = False, start_at: datetime | None = None,
               checks: FlinkChecksResource | None = None, spark: SparkResource | None = None) -> FlinkRun:
        """Deploy the selected tables (and what they need) in plan order; `.stream()` the events."""
        self._open_checks_spark_early(context, spark)
        deployer = self.get_deployer(context)
        selected = _selected_tables(context)
        with lease_busy_fails_the_run():
            deployment = deployer.deploy(selected, dml_only=dml_only, force_sources=force_sources,
                                         may_start_children=may_start_children, start_at=start_at,
                                         exclude=flink_assets_info(context).outside)
        return self._run(context, deployment, checks, spark)

    def deploy_commit(self, *, context: AssetExecutionContext, since: str, until: str = "HEAD",
                      checks: FlinkChecksResource | None = None, spark: SparkResource | None = None) -> FlinkRun:
        """Blue/green: what the commits (since, until] changed, beside the serving versions."""
        self._open_checks_spark_early(context, spark)
        with lease_busy_fails_the_run():
            deployment = self.get_deployer(context).deploy_commit(since, until)
        return self._run(context, deployment, checks, spark)

    def backfill(self, *, context: AssetExecutionContext, window: TimeWindow,
                 checks: FlinkChecksResource | None = None, spark: SparkResource | None = None) -> FlinkRun:
        """Rebuild a closed window of event time of the selected tables with bounded statements."""
        self._open_checks_spark_early(context, spark)
        with lease_busy_fails_the_run(), refusal_fails_the_run(window):
            deployment = self.get_deployer(context).backfill(_selected_tables(context), window.start, window.end)
        return self._run(context, deployment, checks, spark)

    def _open_checks_spark_early(self, context: AssetExecutionContext, spark: SparkResource | None) -> None:
        """A run with checks to evaluate on the local service opens their Spark session while it deploys."""
        info = flink_assets_info(context)
        if spark is not None and self.is_local and (info.checks.enabled or info.data_tests) \
                and context.selected_asset_check_keys:
            spark.open_early(self.get_local_data_dir())

    def _run(self, context: AssetExecutionContext, deployment: Deployment,
             checks: FlinkChecksResource | None, spark: SparkResource | None) -> FlinkRun:
        info = flink_assets_info(context)
        self._deployments.append(deployment)
        run_checks = None
        if info.checks.enabled or info.data_tests:
            checks = checks or FlinkChecksResource()
            run_checks = RunChecks(client=self.get_client(), env_name=self.get_config().env_name, checks=checks,
                                   settings=info.checks, confluent=self, spark=spark or SparkResource(),
                                   asset_key=info.keys.__getitem__, data_tests=info.data_tests)
        return FlinkRun(context, deployment, info.keys, run_checks)


def _selected_tables(context: Any) -> list[str]:
    by_key = {key: table for table, key in flink_assets_info(context).keys.items()}
    return sorted(by_key[k] for k in context.selected_asset_keys if k in by_key)


def run_liveness(instance: DagsterInstance) -> Liveness:
    """A lease holder `dagster-run:<run_id>` is alive while this instance says its run is in progress;
    any other holder, or a run this instance does not know, is unknown here (None)."""

    def alive(holder: str) -> bool | None:
        if not holder.startswith(DAGSTER_RUN_PREFIX):
            return None
        run = instance.get_run_by_id(holder.removeprefix(DAGSTER_RUN_PREFIX))
        return None if run is None else not run.is_finished

    return alive


@contextmanager
def lease_busy_fails_the_run() -> Iterator[None]:
    """Another deployment kept the project's lease past our wait: the run fails saying who, no traceback."""
    try:
        yield
    except LeaseBusy as busy:
        raise Failure(description=str(busy), allow_retries=False) from None


@contextmanager
def refusal_fails_the_run(window: TimeWindow) -> Iterator[None]:
    """A range the plan refuses (a stateful or append table, one not deployed) fails the run before any
    statement is created, in one line with what to do instead, no traceback."""
    try:
        yield
    except BackfillRefused as refused:
        raise Failure(description=f"partition range refused: {refused}", allow_retries=False, metadata={
            "window": f"[{window.start:%Y-%m-%d %H:%M}, {window.end:%Y-%m-%d %H:%M}) UTC",
            "refused": str(refused),
            "instead": "a range reaching the last partition redeploys from its start; or, keeping the serving "
                       "version, shift-left-dagster reprocess TABLE --from START, then promote or rollback"}) from None
