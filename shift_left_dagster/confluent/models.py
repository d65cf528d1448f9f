"""Pydantic models of the Confluent Cloud REST payloads (sql/v1, fcpm/v2, Kafka REST v3, SR).

The service adds fields and phases over time (phases are an *extensible*
enum), so every model keeps unknown fields (``extra="allow"``): a statement
read with GET and sent back with PUT loses nothing it did not understand.
Phases are plain strings; the known values are constants.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Statement names: the OpenAPI pattern; the docs cap length at 72 (the spec says 100): 72 is safe for both.
MAX_STATEMENT_NAME_LENGTH = 72
STATEMENT_NAME_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Compute pool display names (fcpm/v2 ComputePoolSpec.display_name).
MAX_POOL_NAME_LENGTH = 64
POOL_NAME_PATTERN = re.compile(r"^(?:[0-9A-Za-z\-])[\w\.-]{0,63}$")


def is_valid_statement_name(name: str) -> bool:
    return len(name) <= MAX_STATEMENT_NAME_LENGTH and STATEMENT_NAME_PATTERN.fullmatch(name) is not None


class ApiModel(BaseModel):
    """Base: tolerate and keep unknown fields; accept aliases and field names."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Phase:
    """Known statement phases (``status.phase``); the service may send others."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    DELETING = "DELETING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    DEGRADED = "DEGRADED"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    # Terminal set as the VS Code extension defines it; STOPPED lasts until a resume.
    TERMINAL = frozenset({COMPLETED, FAILED, STOPPED})


class PoolPhase:
    """Known compute pool phases (``status.phase``); extensible as well."""

    PROVISIONING = "PROVISIONING"
    PROVISIONED = "PROVISIONED"
    FAILED = "FAILED"
    DEPROVISIONING = "DEPROVISIONING"


class Op:
    """Changelog op codes of a result row (absent means INSERT)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


class ListMetadata(ApiModel):
    self_url: str | None = Field(default=None, alias="self")
    next: str | None = None


# --- statements -----------------------------------------------------------------


class StatementMetadata(ApiModel):
    self_url: str | None = Field(default=None, alias="self")
    created_at: datetime | None = None
    updated_at: datetime | None = None
    uid: str | None = None
    resource_version: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class StatementSpec(ApiModel):
    statement: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    compute_pool_id: str | None = None
    principal: str | None = None
    stopped: bool = False
    execution_mode: str | None = None


class DataType(ApiModel):
    type: str
    nullable: bool = True


class ColumnDetails(ApiModel):
    name: str
    type: DataType | None = None


class ResultSchema(ApiModel):
    columns: list[ColumnDetails] = Field(default_factory=list)


class StatementTraits(ApiModel):
    sql_kind: str | None = None
    is_bounded: bool | None = None
    is_append_only: bool | None = None
    upsert_columns: list[int] | None = None
    # ``schema`` would shadow a BaseModel attribute; the alias keeps the wire name.
    schema_: ResultSchema | None = Field(default=None, alias="schema")


class StatementWarning(ApiModel):
    severity: str | None = None
    created_at: datetime | None = None
    reason: str | None = None
    message: str | None = None


class StatementStatus(ApiModel):
    phase: str = ""
    detail: str | None = None
    traits: StatementTraits | None = None
    latest_offsets: dict[str, str] = Field(default_factory=dict)
    latest_offsets_timestamp: datetime | None = None
    network_kind: str | None = None
    warnings: list[StatementWarning] = Field(default_factory=list)

    @field_validator("latest_offsets", mode="before")
    @classmethod
    def _null_offsets(cls, value: Any) -> Any:
        return {} if value is None else value


class Statement(ApiModel):
    api_version: str = "sql/v1"
    kind: str = "Statement"
    name: str
    organization_id: str | None = None
    environment_id: str | None = None
    metadata: StatementMetadata = Field(default_factory=StatementMetadata)
    spec: StatementSpec = Field(default_factory=StatementSpec)
    status: StatementStatus = Field(default_factory=StatementStatus)

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def is_terminal(self) -> bool:
        """COMPLETED, FAILED or STOPPED: the phase will not change by itself."""
        return self.status.phase in Phase.TERMINAL

    @property
    def latest_offsets(self) -> dict[str, dict[int, int]]:
        """``status.latest_offsets`` as {topic: {partition: offset}} (set once STOPPED)."""
        return {topic: parse_offsets(spec) for topic, spec in self.status.latest_offsets.items()}

    def to_request_body(self) -> dict[str, Any]:
        """The whole resource as the PUT contract wants it: as last read (no added defaults), modified."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def parse_offsets(spec: str) -> dict[int, int]:
    """Parse ``partition:0,offset:100;partition:1,offset:200`` (the Flink hint format).

    A malformed entry raises ValueError: guessing an offset could silently skip
    or replay data. The sentinel 9223372036854775808 seen for untouched
    partitions is returned as is (its meaning is undocumented).
    """
    offsets: dict[int, int] = {}
    for entry in filter(None, (part.strip() for part in spec.split(";"))):
        fields = dict(item.split(":", 1) for item in entry.split(",") if ":" in item)
        try:
            offsets[int(fields["partition"])] = int(fields["offset"])
        except (KeyError, ValueError):
            raise ValueError(f"malformed latest_offsets entry {entry!r}") from None
    return offsets


class StatementList(ApiModel):
    api_version: str = "sql/v1"
    kind: str = "StatementList"
    metadata: ListMetadata = Field(default_factory=ListMetadata)
    data: list[Statement] = Field(default_factory=list)


class ResultRow(ApiModel):
    """One changelog row: scalars are JSON strings, NULL is None, ARRAY/ROW are lists."""

    op: int = Op.INSERT
    row: list[Any] = Field(default_factory=list)

    @field_validator("op", mode="before")
    @classmethod
    def _absent_op_is_insert(cls, value: Any) -> Any:
        return Op.INSERT if value is None else value

    def as_dict(self, columns: Sequence[str]) -> dict[str, Any]:
        """Pair the values with column names (from ``status.traits.schema``)."""
        return dict(zip(columns, self.row, strict=True))


class ResultData(ApiModel):
    data: list[ResultRow] = Field(default_factory=list)


class ResultMetadata(ListMetadata):
    created_at: datetime | None = None


class StatementResult(ApiModel):
    """One page of results; follow ``metadata.next`` for more."""

    api_version: str = "sql/v1"
    kind: str = "StatementResult"
    metadata: ResultMetadata = Field(default_factory=ResultMetadata)
    results: ResultData = Field(default_factory=ResultData)


class StatementException(ApiModel):
    kind: str = "StatementException"
    name: str | None = None
    message: str = ""
    timestamp: datetime | None = None


class StatementExceptionList(ApiModel):
    """Up to 10 most recent exceptions, newest first."""

    data: list[StatementException] = Field(default_factory=list)


# --- compute pools --------------------------------------------------------------


class EnvironmentRef(ApiModel):
    id: str
    related: str | None = None
    resource_name: str | None = None


class ComputePoolMetadata(ApiModel):
    self_url: str | None = Field(default=None, alias="self")
    resource_name: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class ComputePoolSpec(ApiModel):
    display_name: str | None = None
    cloud: str | None = None
    region: str | None = None
    max_cfu: int | None = None
    default_pool: bool | None = None
    enable_ai: bool | None = None
    environment: EnvironmentRef | None = None


class ComputePoolStatus(ApiModel):
    phase: str = ""
    current_cfu: int = 0


class ComputePool(ApiModel):
    api_version: str = "fcpm/v2"
    kind: str = "ComputePool"
    id: str
    metadata: ComputePoolMetadata = Field(default_factory=ComputePoolMetadata)
    spec: ComputePoolSpec = Field(default_factory=ComputePoolSpec)
    status: ComputePoolStatus = Field(default_factory=ComputePoolStatus)


class ComputePoolList(ApiModel):
    api_version: str = "fcpm/v2"
    kind: str = "ComputePoolList"
    metadata: ListMetadata = Field(default_factory=ListMetadata)
    data: list[ComputePool] = Field(default_factory=list)


# --- Kafka REST v3 ----------------------------------------------------------------


class KafkaTopic(ApiModel):
    kind: str = "KafkaTopic"
    cluster_id: str | None = None
    topic_name: str
    is_internal: bool = False
    partitions_count: int | None = None
    replication_factor: int | None = None


class KafkaTopicList(ApiModel):
    kind: str = "KafkaTopicList"
    metadata: ListMetadata = Field(default_factory=ListMetadata)
    data: list[KafkaTopic] = Field(default_factory=list)


# --- error bodies -----------------------------------------------------------------


class CloudErrorItem(ApiModel):
    id: str | None = None
    status: str | None = None
    code: str | None = None
    title: str | None = None
    detail: str | None = None
    source: dict[str, Any] | None = None


class CloudErrorBody(ApiModel):
    """``{"errors": [...]}`` of sql/v1 and fcpm/v2; every item field is optional."""

    errors: list[CloudErrorItem] = Field(default_factory=list)

    def message(self) -> str:
        """First non-empty of detail, title, code (of the first error that has one)."""
        for item in self.errors:
            for text in (item.detail, item.title, item.code):
                if text:
                    return text
        return ""

    def code(self) -> str | None:
        return next((item.code for item in self.errors if item.code), None)


class KafkaErrorBody(ApiModel):
    """``{"error_code": 40403, "message": ...}`` of Kafka REST and Schema Registry."""

    error_code: int
    message: str = ""


class StatementMetrics(BaseModel):
    """Records a statement read (`records_in`), wrote (`records_out`) and has not read yet
    (`pending_records`), summed over its tables: Confluent's Metrics API `io.confluent.flink/*`."""

    records_in: int = 0
    records_out: int = 0
    pending_records: int = 0
