"""What the local Metrics API serves, as its descriptors endpoints describe it
(`GET /v2/metrics/{dataset}/descriptors/metrics` and `/descriptors/resources`).

Every metric is about one Flink statement (resource `flink_statement`, in a
`compute_pool`); labels narrow it to the table, task, operator or split it is
about. Only what the engine measures is listed: the others Confluent Cloud
documents (busy/idle/backpressure time, CFUs, bytes) have no local meaning.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PREFIX = "io.confluent.flink/"
STATEMENT, POOL = "resource.flink_statement.name", "resource.compute_pool.id"
TABLE, TASK, OPERATOR = "metric.table_name", "metric.flink_task.id", "metric.flink_operator.id"


class Descriptor(BaseModel):
    """One metric: its name (without prefix), type, unit, what it says and the labels it carries."""

    name: str
    type: str
    unit: str
    description: str
    labels: tuple[str, ...]

    def body(self) -> dict[str, Any]:
        return {"name": PREFIX + self.name, "description": self.description, "type": self.type,
                "unit": self.unit, "lifecycle_stage": "GENERAL_AVAILABILITY", "exportable": True,
                "resources": ["flink_statement", "compute_pool"],
                "labels": [{"key": label.removeprefix("metric."), "description": LABELS[label], "exportable": True}
                           for label in self.labels]}


LABELS = {
    TABLE: "The table (topic) the value is about: a source for records in, lag and watermarks, a sink for "
           "records out.",
    TASK: "The id of the task of the statement's task graph the value is about (GET .../task-graph).",
    OPERATOR: "The id of the operator of the statement's task graph the value is about.",
}
DESCRIPTORS = {d.name: d for d in (
    Descriptor(name="num_records_in", type="GAUGE_INT64", unit="1", labels=(TABLE, TASK),
               description="Total number of records the statement has read since it started, per source table."),
    Descriptor(name="num_records_out", type="GAUGE_INT64", unit="1", labels=(TABLE, TASK),
               description="Total number of records the statement has written since it started, per sink table."),
    Descriptor(name="pending_records", type="GAUGE_INT64", unit="1", labels=(TABLE, TASK),
               description="Records of a source table the statement has not read yet (its lag)."),
    Descriptor(name="current_input_watermark_milliseconds", type="GAUGE_INT64", unit="ms", labels=(TABLE, TASK),
               description="The watermark of a source table after the statement's last run, in epoch milliseconds."),
    Descriptor(name="current_output_watermark_milliseconds", type="GAUGE_INT64", unit="ms", labels=(TABLE, TASK),
               description="The watermark the statement's event-time operators have emitted up to (the lowest of "
                           "its queries'), in epoch milliseconds."),
    Descriptor(name="num_late_records_in", type="GAUGE_INT64", unit="1", labels=(TABLE, TASK),
               description="Total number of records of a source table dropped as late by event-time operators."),
    Descriptor(name="task/num_records_in", type="GAUGE_INT64", unit="1", labels=(TASK,),
               description="Total number of records a task of the statement has received."),
    Descriptor(name="task/num_records_out", type="GAUGE_INT64", unit="1", labels=(TASK,),
               description="Total number of records a task of the statement has emitted."),
    Descriptor(name="operator/state_size_bytes", type="GAUGE_INT64", unit="By", labels=(TASK, OPERATOR),
               description="Bytes of state a stateful operator keeps (the accumulators of an incremental "
                           "GROUP BY)."),
)}
RESOURCES = [
    {"type": "flink_statement", "description": "A Flink SQL statement.",
     "labels": [{"key": "flink_statement.name", "description": "The name of the statement.", "exportable": True}]},
    {"type": "compute_pool", "description": "A Flink compute pool.",
     "labels": [{"key": "compute_pool.id", "description": "The id of the compute pool.", "exportable": True}]},
]


def descriptor_lists(resource_type: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The metric descriptors (of one resource type when given) and the resource descriptors."""
    metrics = [d.body() for d in DESCRIPTORS.values()]
    if resource_type:
        metrics = [m for m in metrics if resource_type in m["resources"]]
    return metrics, RESOURCES
