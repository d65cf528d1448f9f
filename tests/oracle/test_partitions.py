"""The oracle's model of a table of several partitions (partitions.py): rows placed where the local
service places them (checked against Spark's own hash), read partition by partition per run, with the
lowest partition watermark over the run's partitions."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import functions as F

from tests.oracle.partitions import UnplacedError, arrival_watermarks, read_order, spark_hash

pytestmark = pytest.mark.spark


def test_the_hash_is_sparks(spark) -> None:  # type: ignore[no-untyped-def]
    values = [("k1", 1, 5), ("k2", -7, 2**40), ("", 0, -1), ("héllo wörld!", 2**31 - 1, -(2**63)),
              ("abcde", None, 3), (None, 4, None), ("abcdefg", 12, 77)]
    frame = spark.createDataFrame(values, "s string, i int, l bigint")
    hashed = frame.select(F.hash("s"), F.hash("i"), F.hash("l"), F.hash("s", "i", "l")).collect()
    for (s, i, n), row in zip(values, hashed, strict=True):
        assert tuple(row) == (spark_hash([s], ["STRING"]), spark_hash([i], ["INT"]), spark_hash([n], ["BIGINT"]),
                              spark_hash([s, i, n], ["STRING", "INT", "BIGINT"]))


def test_a_key_it_can_not_hash_is_named() -> None:
    with pytest.raises(UnplacedError, match="DOUBLE"):
        spark_hash([1.5], ["DOUBLE"])


def test_each_run_is_read_partition_by_partition() -> None:
    assert read_order([[1, 0, 1, 0], [0, 1]]) == [1, 3, 0, 2, 4, 5]


def at(minute: int) -> datetime:
    return datetime(2026, 3, 1, 10, minute)


def test_a_partition_without_a_time_holds_the_watermark_and_an_idle_one_does_not() -> None:
    # run 1: partition 0 then 1; partition 1 has no time until its first row
    # run 2: only partition 1 has rows: partition 0 is idle
    found, final = arrival_watermarks([[(0, at(9)), (0, at(5)), (1, None), (1, at(7))], [(1, at(30))]], 1000)
    first, second = found
    assert first[:3] == [None, None, None]
    assert first[3] == datetime(2026, 3, 1, 10, 6, 59)  # min(10:09, 10:07) - 1 s
    assert second == [datetime(2026, 3, 1, 10, 29, 59)] and final == second[0]


def test_the_watermark_never_decreases() -> None:
    found, final = arrival_watermarks([[(0, at(20))], [(1, at(5))]], 0)
    assert found == [[at(20)], [at(20)]] and final == at(20)


def test_a_partition_idle_in_a_run_stops_holding_the_watermark_as_the_run_begins() -> None:
    # run 1 reads both partitions (partition 1 holds the watermark at 10:05); run 2 only partition 0:
    # partition 1 is idle for it, so the watermark rises to 10:20 before its first row (after run 1's last)
    found, final = arrival_watermarks([[(0, at(20)), (1, at(5))], [(0, at(25))]], 0)
    assert found == [[None, at(20)], [at(25)]] and final == at(25)
