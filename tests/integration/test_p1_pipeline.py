"""The sample project's p1 pipeline deployed statement by statement over real HTTP, run on Spark,
checked against results computed here from the seed rows."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.integration import expected_p1
from tests.integration.support import (
    client_for,
    pipeline_order,
    quiesce,
    run,
    seed_rows,
    seed_statements,
    select,
    unique,
    wired,
)

pytestmark = pytest.mark.service

RAW = ("raw_orders", "raw_customers", "raw_payments")


def deploy_p1(client, prefix: str) -> None:  # type: ignore[no-untyped-def]
    """Seeds first (DDL + bounded INSERT VALUES), then each table's DDL and DML, parents first."""
    for topic in RAW:
        for sql in seed_statements(topic):
            run(client, unique(f"{prefix}-seed"), sql)
    for table, ddl, dml in pipeline_order("fct_order"):
        run(client, unique(f"{prefix}-ddl-{table.replace('_', '-')}"), ddl)
        run(client, unique(f"{prefix}-dml-{table.replace('_', '-')}"), dml, "RUNNING", "COMPLETED")


def expected() -> dict[str, list[tuple]]:
    return expected_p1.p1(*(seed_rows(topic) for topic in RAW))


def assert_p1_sinks(client) -> None:  # type: ignore[no-untyped-def]
    want = expected()
    for table, rows in want.items():
        assert select(client, f"SELECT * FROM {table}") == wired(rows), table


def test_p1_sinks_equal_the_expected_results(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    deploy_p1(client, "p1")
    report = quiesce(local_service.url)
    assert report["quiet"]
    assert_p1_sinks(client)


def test_expected_results_match_the_project_readme():  # type: ignore[no-untyped-def]
    """The independent expectation agrees with the figures flink_project/README.md states."""
    want = expected()
    assert (len(want["src_table_1"]), len(want["int_table_1"]), len(want["int_table_2"])) == (18, 18, 15)
    states = Counter(row[11] for row in want["fct_order"])
    assert states == {"PAID": 12, "PARTIAL": 1, "REFUNDED": 1, "UNPAID": 4}
