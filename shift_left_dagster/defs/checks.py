"""Asset checks of Flink tables in Dagster: their specs, their configuration, the run's Spark, and
the run-scoped `RunChecks` the deploying op uses to check each table it just deployed.

(No `from __future__ import annotations`: Dagster reads resource field annotations at runtime.)
"""

from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    ConfigurableResource,
    InitResourceContext,
    MetadataValue,
)
from dagster_pyspark.resources import spark_session_from_config
from pydantic import Field, PrivateAttr
from pyspark.sql import SparkSession

from shift_left_dagster.checks import (
    CheckName,
    CheckOutcome,
    ChecksSettings,
    SinkConfig,
    SinkReader,
    applicable,
    find_dml_statements,
    open_reader,
    run_checks,
)
from shift_left_dagster.checks.data_tests import DataTest
from shift_left_dagster.checks.models import DESCRIPTIONS, SensorCheck
from shift_left_dagster.checks.session import checks_session, connects, end_session, is_connect
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.project.inventory import FlinkTable

_DEFAULTS = ChecksSettings()


class FlinkTarget(Protocol):
    """What checks need of the Flink service resource (`ConfluentFlinkResource`, which uses them): whether
    it is the local service, and that service's data folder."""

    @property
    def is_local(self) -> bool: ...

    def get_local_data_dir(self) -> str: ...


class SparkResource(ConfigurableResource):
    """The run's one SparkSession, opened the first time a check needs it (runs without checks never
    start Spark): a cluster's when configured (`master`: spark.master URL; `remote`: Spark Connect URL);
    else one already running: the local service's own Spark through the Spark Connect server it offers
    when the local service is the target (no JVM in the run), this process's tuned local session
    otherwise (checks/session.py). Sessions run in UTC, as the local engine does, so
    TIMESTAMP_LTZ -> DATE casts agree with it."""

    master: str | None = Field(default=None, description="spark.master of a cluster, e.g. spark://host:7077")
    remote: str | None = Field(default=None, description="Spark Connect URL, e.g. sc://host:15002")
    config: dict[str, str] = Field(default_factory=dict, description="more Spark settings")
    _session: SparkSession | None = PrivateAttr(default=None)

    _offered: bool = PrivateAttr(default=False)
    _opening: "Future[SparkSession] | None" = PrivateAttr(default=None)

    def open_early(self, local_service_dir: str) -> None:
        """Open the local service's Spark Connect session in the background, while the run deploys: its
        client's imports and handshake are then done when the first check needs them. Only a session
        that starts no JVM (nothing configured, the service offers its Spark); any other opens on first
        use, as before."""
        if self._session is None and self._opening is None and not (self.master or self.remote or self.config) \
                and connects(local_service_dir):
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checks-spark")
            self._opening = pool.submit(checks_session, local_service_dir)
            pool.shutdown(wait=False)  # the thread ends with its one task

    def get_session(self, local_service_dir: str | None = None) -> SparkSession:
        """`local_service_dir`: the data folder of the local service the run deploys to, if it does."""
        if self._session is None and self._opening is not None:
            self._session, self._opening = self._opening.result(), None
            self._offered = True
        if self._session is None:
            if self.master or self.remote or self.config:
                settings = {"spark.sql.session.timeZone": "UTC", **self.config}
                settings.update({k: v for k, v in (("spark.master", self.master), ("spark.remote", self.remote)) if v})
                self._session = spark_session_from_config(settings)
            else:
                self._session = checks_session(local_service_dir)
                self._offered = is_connect(self._session)
        return self._session

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        """The local service's Connect session is released when the run ends (a configured one is the
        cluster owner's)."""
        if self._opening is not None and self._opening.exception() is None:  # opened for checks that never ran
            self._session, self._offered = self._opening.result(), True
        if self._session is not None and self._offered:
            end_session(self._session)


class FlinkChecksResource(ConfigurableResource):
    """Where and how sink data is read: the local service's storage, or the files teams land topics in
    (`path_template` with {table}, read with spark.read.format(format)). Which checks exist and block
    is decided when definitions are built (`flink_assets(checks=ChecksSettings(...))`), so the UI and
    what runs always agree."""

    sample_rows: int = _DEFAULTS.sample_rows
    max_lag_records: int | None = Field(default=None, description="statement_healthy fails beyond this lag")
    sink: Literal["auto", "local", "files"] = Field(
        default="auto", description="auto: the local service's storage when it is the target, else files")
    local_data_dir: str | None = Field(default=None, description="default: the Confluent resource's")
    path_template: str | None = Field(default=None, description="files: e.g. s3://bucket/topics/{table}")
    format: str = "parquet"
    options: dict[str, str] = Field(default_factory=dict, description="files: reader options")
    ignore_columns: list[str] = Field(default_factory=list, description="files: landing metadata columns")

    def settings(self, declared: ChecksSettings = _DEFAULTS) -> ChecksSettings:
        """The declared checks, read with this resource's sampling and lag settings."""
        return declared.model_copy(update={"sample_rows": self.sample_rows, "max_lag_records": self.max_lag_records})

    def sink_config(self, confluent: FlinkTarget) -> SinkConfig:
        kind = self.sink if self.sink != "auto" else ("local" if confluent.is_local else "files")
        data_dir = self.local_data_dir or (confluent.get_local_data_dir() if kind == "local" else None)
        return SinkConfig(kind=kind, data_dir=data_dir,
                          path_template=self.path_template, format=self.format, options=self.options,
                          ignore_columns=self.ignore_columns)


def check_specs(table_key: AssetKey, table: FlinkTable, settings: ChecksSettings = _DEFAULTS,
                data_tests: Sequence[DataTest] = ()) -> list[AssetCheckSpec]:
    """The enabled checks that apply to a table (a key to be unique, a DML to reconcile, a DDL to match),
    the health sensor's lag and stall checks with statement_healthy (never blocking: a run does not
    evaluate them, the sensor does at each tick), then the data tests declared next to it (blocking when
    their severity is error)."""
    built_in = [AssetCheckSpec(name=check.value, asset=table_key, blocking=check in settings.blocking,
                               description=DESCRIPTIONS[check])
                for check in applicable(table) if check in settings.enabled]
    if CheckName.STATEMENT_HEALTHY in settings.enabled and table.dml is not None:
        built_in += [AssetCheckSpec(name=check.value, asset=table_key, blocking=False,
                                    description=DESCRIPTIONS[check]) for check in SensorCheck]
    declared = [AssetCheckSpec(name=test.name, asset=table_key, blocking=test.blocking,
                               description=f"Data test {test.path}: the rows it returns break the rule "
                                           f"(none: passes; severity {test.severity.value}).")
                for test in data_tests]
    return built_in + declared


@dataclass(frozen=True)
class ChecksRun:
    """What the op yields (`results`) and what must stop what depends on it (`failed_blocking`)."""

    results: list[AssetCheckResult] = field(default_factory=list)
    failed_blocking: list[AssetCheckKey] = field(default_factory=list)


class RunChecks:
    """The checks of one run: one sink reader (opened on the first check: a run without checks never
    starts Spark) and one resolved configuration, reused for every table the run deploys."""

    def __init__(self, *, client: ConfluentClient, env_name: str, checks: FlinkChecksResource,
                 confluent: FlinkTarget, spark: SparkResource, asset_key: Callable[[str], AssetKey],
                 settings: ChecksSettings = _DEFAULTS, selected: Collection[AssetCheckKey] | None = None,
                 data_tests: Mapping[str, Sequence[DataTest]] | None = None) -> None:
        self.client, self.env_name, self.asset_key, self.selected = client, env_name, asset_key, selected
        self.data_tests = data_tests or {}
        self.settings = checks.settings(settings)
        self._open = lambda: open_reader(checks.sink_config(confluent), spark.get_session(
            confluent.get_local_data_dir() if confluent.is_local else None))
        self._reader: SinkReader | None = None

    def __enter__(self) -> "RunChecks":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def evaluate(self, tables: Sequence[FlinkTable], physical_names: Mapping[str, str] | None = None,
                 skip: Collection[CheckName] = ()) -> ChecksRun:
        """Run the checks of `tables` (those selected, less `skip`) and turn them into Dagster results."""
        names = {self.asset_key(t.name): t.name for t in tables}
        declared = {t.name: [c.value for c in applicable(t) if c in self.settings.enabled]
                    + [d.name for d in self.data_tests.get(t.name, [])] for t in tables}
        only = {(t.name, c) for t in tables for c in declared[t.name] if c not in skip}
        if self.selected is not None:
            only &= {(names[k.asset_key], k.name) for k in self.selected if k.asset_key in names}
        wanted = [t for t in tables if any((t.name, c) in only for c in declared[t.name])]
        if not wanted:
            return ChecksRun()
        statements = find_dml_statements(self.client, wanted, self.env_name, physical_names)
        if self._reader is None:
            self._reader = self._open()
        outcomes = run_checks(wanted, self._reader, statements, self.settings, only, physical_names,
                              self.data_tests)
        results = [asset_check_result(self.asset_key(o.table), o) for o in outcomes]
        failed = [AssetCheckKey(self.asset_key(o.table), o.check) for o in outcomes if o.blocking and not o.passed]
        return ChecksRun(results=results, failed_blocking=failed)


def asset_check_result(key: AssetKey, outcome: CheckOutcome) -> AssetCheckResult:
    return AssetCheckResult(
        asset_key=key,
        check_name=outcome.check,
        passed=outcome.passed,
        severity=AssetCheckSeverity.ERROR if outcome.blocking else AssetCheckSeverity.WARN,
        description=outcome.message,
        metadata={k: _metadata_value(k, v) for k, v in outcome.metadata.items() if v is not None},
    )


def _metadata_value(key: str, value: Any) -> Any:
    """SQL as a code block: a plain string loses its line breaks in the UI, so a leading `-- comment`
    would seem to comment out the whole query."""
    if key == "query" and isinstance(value, str):
        return MetadataValue.md(f"```sql\n{value}\n```")
    return MetadataValue.json(value) if isinstance(value, (dict, list)) else value
