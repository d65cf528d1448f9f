"""The comparison's Spark jobs: one case whose comparable form fails at run time costs that case only (the
long run of seed 28 stopped in its third batch on one such case)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.oracle.compare import _collect

pytestmark = pytest.mark.spark


def test_a_case_whose_comparison_fails_costs_that_case_only(spark: SparkSession) -> None:
    def form(case: str, fails: bool = False):  # type: ignore[no-untyped-def]
        row = F.raise_error(F.lit("no comparable form")) if fails else F.lit('{"c0":1}')
        return case, spark.range(2).select(F.lit(case).alias("case"), F.lit("local").alias("side"),
                                           row.cast("string").alias("row"))

    rows, failed = _collect([form("a"), form("b", fails=True), form("c")])
    assert sorted(r["case"] for r in rows) == ["a", "a", "c", "c"]
    assert list(failed) == ["b"] and "no comparable form" in failed["b"]
    rows, failed = _collect([form("a"), form("c")])
    assert len(rows) == 4 and failed == {}
