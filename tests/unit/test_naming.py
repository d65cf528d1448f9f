"""Deterministic statement, backfill, pool and table names."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest

from shift_left_dagster.confluent.models import POOL_NAME_PATTERN, is_valid_statement_name
from shift_left_dagster.deploy.naming import backfill_statement_name, compute_pool_name, statement_name

LONG_TABLE = "fct_" + "very_long_customer_order_enrichment_" * 4


def test_statement_names_follow_the_convention() -> None:
    assert statement_name("dev", "p1", "dml", "fct_orders") == "dev-p1-dml-fct-orders"
    assert statement_name("Stage", "Customer_360", "ddl", "Src__Orders.V2") == "stage-customer-360-ddl-src-orders-v2"
    assert statement_name("prod", None, "dml", "t") == "prod-dml-t"
    assert statement_name("prod", "", "ddl", "__weird__") == "prod-ddl-weird"


@pytest.mark.parametrize("table", ["x", "a_b", LONG_TABLE, "ÜNICODE_täble", "--__--" + "z" * 90, "1" * 200])
def test_names_are_api_valid_and_at_most_72(table: str) -> None:
    for name in (statement_name("dev", "p1", "dml", table),
                 backfill_statement_name("dev", "p1", table, datetime(2024, 1, 1), datetime(2024, 1, 2))):
        assert len(name) <= 72 and is_valid_statement_name(name), name


def test_long_names_are_truncated_with_a_stable_hash_and_stay_distinct() -> None:
    a = statement_name("dev", "p1", "dml", LONG_TABLE + "a")
    b = statement_name("dev", "p1", "dml", LONG_TABLE + "b")
    assert len(a) == len(b) == 72 and a != b
    assert a[:-9] == b[:-9]  # same readable head, different hash
    assert a == statement_name("dev", "p1", "dml", LONG_TABLE + "a")
    assert a.startswith("dev-p1-dml-fct-very-long")


def test_hash_does_not_depend_on_pythonhashseed() -> None:
    code = ("from shift_left_dagster.deploy.naming import statement_name;"
            f"print(statement_name('dev', 'p1', 'dml', {LONG_TABLE!r}))")
    outputs = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True).stdout.strip()
        for seed in ("1", "12345")
    }
    assert outputs == {statement_name("dev", "p1", "dml", LONG_TABLE)}


def test_backfill_names_carry_the_window_in_utc_hours() -> None:
    start = datetime(2024, 3, 1, 0, tzinfo=UTC)
    assert backfill_statement_name("dev", "p1", "fct_orders", start, start + timedelta(days=1)) == \
        "dev-p1-dml-fct-orders-bf-2024030100-2024030200"
    paris = timezone(timedelta(hours=1))
    assert backfill_statement_name("dev", "p1", "t", datetime(2024, 3, 1, 1, tzinfo=paris), datetime(2024, 3, 1, 5)) \
        == "dev-p1-dml-t-bf-2024030100-2024030105"


def test_truncated_backfill_names_keep_the_window_and_differ_per_window() -> None:
    day = datetime(2024, 3, 1)
    first = backfill_statement_name("dev", "p1", LONG_TABLE, day, day + timedelta(days=1))
    second = backfill_statement_name("dev", "p1", LONG_TABLE, day + timedelta(days=1), day + timedelta(days=2))
    assert first.endswith("-bf-2024030100-2024030200") and second.endswith("-bf-2024030200-2024030300")
    assert len(first) == 72 and first[:-25] != second[:-25]  # the hash covers the window too


def test_compute_pool_names() -> None:
    assert compute_pool_name("dev", "customer_360") == "dev-customer-360"
    long = compute_pool_name("prod", "p" * 100)
    assert len(long) == 64 and POOL_NAME_PATTERN.match(long)
    assert POOL_NAME_PATTERN.match(compute_pool_name("dev", None))


def test_empty_names_are_rejected() -> None:
    with pytest.raises(ValueError):
        compute_pool_name("__", None)
