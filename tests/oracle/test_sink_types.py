"""The INSERT type check against what Flink 2.3's LogicalTypeCasts.supportsImplicitCast answered
(probed through PyFlink for these pairs: source type, sink type, Flink's answer)."""

from __future__ import annotations

import pytest

from shift_left_dagster.local.sink_types import implicit_cast
from shift_left_dagster.local.types import spark_type_of

FLINK_SAYS = [
    ("TIMESTAMP_LTZ(3)", "STRING", False), ("INT", "STRING", False), ("STRING", "INT", False),
    ("BOOLEAN", "STRING", False), ("DATE", "TIMESTAMP(3)", False), ("TIMESTAMP_LTZ(3)", "DATE", False),
    ("TIMESTAMP(3)", "DATE", True), ("TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", True),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP(6)", True),
    ("INT", "DECIMAL(10, 2)", True), ("INT", "DOUBLE", True), ("DOUBLE", "DECIMAL(10, 2)", True),
    ("SMALLINT", "BIGINT", True), ("BYTES", "STRING", False), ("ARRAY<INT>", "ARRAY<BIGINT>", True),
    ("ARRAY<INT>", "ARRAY<STRING>", False), ("MAP<STRING, INT>", "MAP<STRING, BIGINT>", True),
    ("ROW<a INT, b STRING>", "ROW<x BIGINT, y STRING>", True), ("ROW<a INT>", "ROW<a INT, b STRING>", False),
    ("ARRAY<INT>", "MAP<STRING, INT>", False),
]


@pytest.mark.parametrize(("source", "sink", "flink"), FLINK_SAYS)
def test_implicit_cast_as_flink(source: str, sink: str, flink: bool) -> None:
    assert implicit_cast(spark_type_of(source), spark_type_of(sink)) is flink
