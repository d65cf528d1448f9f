"""Confluent's shift_left 0.1.52, unmodified (its own Python 3.12 venv), against the local service.

Over real HTTPS through the TLS proxy, the sample project's fct_order pipeline
is deployed by `shift_left pipeline deploy`, reported, paused and resumed with
`project housekeep-statements`, unit-tested with shift_left's own harness and
undeployed. Every sink is compared with rows computed here, in plain Python,
from the seed files (tests/integration/expected_p1.py). Skipped when the venv
is absent (`python -m tests.shift_left.venv --install`) unless
SL_REQUIRE_SHIFT_LEFT=1, as CI sets it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.tls_proxy import TlsProxy, hosts_for
from tests.integration import expected_p1
from tests.integration.support import client_for, quiesce, run, seed_rows, seed_statements, select, unique, wired
from tests.shift_left.support import ShiftLeft, write_config
from tests.shift_left.venv import REQUIRE_ENV, VENV, shift_left_command

pytestmark = [pytest.mark.shift_left, pytest.mark.service, pytest.mark.spark]

RAW = ("raw_orders", "raw_customers", "raw_payments")
POOL = "lfcp-local"
PIPELINE = ("src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order")
# Rows arriving while the statements are paused: a new order and its payment, and a payment of an old order.
LATE_ORDER = {"order_id": "ord-900", "customer_id": "c-001", "product_id": "p-100", "quantity": 3,
              "unit_price": Decimal("10.00"), "order_status": "created", "event_ts": datetime(2026, 1, 6, 9)}
LATE_PAYMENTS = [
    {"payment_id": "pay-900", "order_id": "ord-900", "payment_method": "card", "payment_status": "captured",
     "amount": Decimal("30.00"), "gateway_response": '{"card_brand": "visa"}', "event_ts": datetime(2026, 1, 6, 10)},
    {"payment_id": "pay-901", "order_id": "ord-002", "payment_method": "card", "payment_status": "refunded",
     "amount": Decimal("49.00"), "gateway_response": None, "event_ts": datetime(2026, 1, 6, 11)},
]


@pytest.fixture(scope="module")
def command() -> Path:
    """The venv's shift_left, checked before any service starts."""
    if not VENV.ready():
        message = f"the shift_left venv is absent ({VENV.venv_dir()}): python -m tests.shift_left.venv --install"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return shift_left_command()


@pytest.fixture(scope="module")
def local_service(command: Path, spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """A service of its own: the pool-wide PAUSE and the product undeploy touch only what shift_left deployed."""
    with InProcessService(tmp_path_factory.mktemp("shift-left-service"), spark_factory=lambda: spark) as service:
        yield service


@pytest.fixture(scope="module")
def shift_left(command: Path, local_service, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShiftLeft]:  # type: ignore[no-untyped-def]
    home = tmp_path_factory.mktemp("shift-left")
    config = yaml.safe_load(write_config(home, local_service.url).read_text())
    with TlsProxy(local_service.url, hosts_for(config), home / "tls") as proxy:
        tool = ShiftLeft.beside(command, home, proxy)
        try:
            yield tool
        finally:
            statuses = Counter(seen.status for seen in proxy.seen)
            summary = f"# through the proxy: {len(proxy.seen)} requests, by status {dict(sorted(statuses.items()))}"
            (home / "transcript.txt").write_text("\n".join([*tool.transcript, summary]))


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value:%Y-%m-%d %H:%M:%S}'"
    return str(value) if isinstance(value, (int, Decimal)) else "'" + str(value).replace("'", "''") + "'"


def insert(table: str, rows: list[dict[str, Any]]) -> str:
    return f"INSERT INTO {table} VALUES " + ", ".join(
        "(" + ", ".join(sql_literal(v) for v in row.values()) + ")" for row in rows)


def fct_order(extra_orders: list[dict[str, Any]], extra_payments: list[dict[str, Any]]) -> list[tuple]:
    orders, customers, payments = (seed_rows(topic) for topic in RAW)
    return wired(expected_p1.p1(orders + extra_orders, customers, payments + extra_payments)["fct_order"])


def dml_statements(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The pipeline's DML statements shift_left named, by table, with their phase."""
    found = {}
    for statement in client.list_statements():
        match = re.fullmatch(r"dev-use1-p1-dml-(.+)", statement.name)
        if match:
            found[match.group(1).replace("-", "_")] = statement.status.phase
    return found


def test_shift_left_deploys_pauses_resumes_unit_tests_and_undeploys(shift_left, local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    for topic in RAW:  # the raw topics a connector would fill: not shift_left's business
        for sql in seed_statements(topic):
            run(client, unique("sl-seed"), sql)

    shift_left("table", "build-inventory")
    shift_left("pipeline", "build-all-metadata")
    deployed = shift_left("pipeline", "deploy", "--table-name", "fct_order", timeout=600)
    assert "Pipeline DEPLOYED" in deployed
    assert dml_statements(client) == dict.fromkeys(PIPELINE, "RUNNING")
    quiesce(local_service.url)
    assert select(client, "SELECT * FROM fct_order") == fct_order([], [])

    report = shift_left("pipeline", "report-running-statements", "--table-name", "fct_order")
    counts = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(
        r"^(\w+)\s+dev-use1-p1-dml-\S+\s+RUNNING\s+lfcp-local\s+\S+ \S+\s+\d+\s+(\d+)\s+(\d+)", report, re.M)}
    assert set(counts) == set(PIPELINE), report
    assert counts["fct_order"][1] >= len(fct_order([], [])) and all(i > 0 and o > 0 for i, o in counts.values())

    paused = shift_left("project", "housekeep-statements", "--compute-pool-id", POOL, "--action", "PAUSE")
    assert f"{len(PIPELINE)} statements PAUSEed" in paused or all(
        f"Statement dev-use1-p1-dml-{t.replace('_', '-')} is paused" in paused for t in PIPELINE), paused
    assert dml_statements(client) == dict.fromkeys(PIPELINE, "STOPPED")
    run(client, unique("sl-late"), insert("raw_orders", [LATE_ORDER]))
    run(client, unique("sl-late"), insert("raw_payments", LATE_PAYMENTS))
    for table in PIPELINE:
        shift_left("project", "housekeep-statements", "--compute-pool-id", POOL, "--action", "RESUME",
                   "--statement-name", f"dev-use1-p1-dml-{table.replace('_', '-')}")
    assert dml_statements(client) == dict.fromkeys(PIPELINE, "RUNNING")
    quiesce(local_service.url)
    sink = select(client, "SELECT * FROM fct_order")
    assert len(sink) == len(set(sink)) and sink == fct_order([LATE_ORDER], LATE_PAYMENTS)  # nothing lost, no twice

    unit_tests(shift_left, local_service.url)

    # From a table, shift_left removes it and its descendants and leaves the ancestors running; a product, all.
    shift_left("pipeline", "undeploy", "--table-name", "fct_order", "--no-ack", timeout=600)
    assert dml_statements(client) == dict.fromkeys(PIPELINE[:-1], "RUNNING")
    assert "fct_order" not in {t.topic_name for t in client.list_topics()}
    shift_left("pipeline", "undeploy", "--product-name", "p1", "--no-ack", timeout=600)
    assert dml_statements(client) == {} and not set(PIPELINE) & {t.topic_name for t in client.list_topics()}
    errors = [seen for seen in shift_left.proxy.seen if seen.status >= 500]
    assert not errors, errors


# --- shift_left's unit-test harness on int_table_2 (GROUP BY order_id over src_table_3) ---------------------

PAYMENTS_UT = [  # payment_id, order_id, payment_method, payment_status, card_brand, signed_amount, payment_ts
    ("u-1", "o-1", "card", "CAPTURED", "visa", Decimal("100.00"), datetime(2026, 1, 1, 10)),
    ("u-2", "o-1", "card", "REFUNDED", "visa", Decimal("-30.00"), datetime(2026, 1, 1, 11)),
    ("u-3", "o-2", "cash", "CAPTURED", "n/a", Decimal("25.50"), datetime(2026, 1, 2, 9)),
]


def int_table_2_expected() -> dict[str, tuple[Decimal, int, int]]:
    """int_table_2's rule, restated: per order, the sum of signed amounts, the payments, the refunds."""
    out: dict[str, tuple[Decimal, int, int]] = {}
    for _pid, order, _method, status, _brand, amount, _ts in PAYMENTS_UT:
        paid, count, refunds = out.get(order, (Decimal("0.00"), 0, 0))
        out[order] = (paid + amount, count + 1, refunds + (status == "REFUNDED"))
    return out


def validation(expected: dict[str, tuple[Decimal, int, int]]) -> str:
    """A validation returning PASS when int_table_2_ut holds exactly these rows.

    It starts with WITH, as the generated template does: shift_left 0.1.52 reads the rows of a statement
    starting with WITH as a stream up to its last one, and keeps no result for one starting with SELECT.
    """
    rows = " OR ".join(f"(order_id = '{o}' AND paid_amount = {p} AND payment_count = {c} AND refund_count = {r})"
                       for o, (p, c, r) in expected.items())
    return (f"WITH actual AS (SELECT * FROM int_table_2_ut)\n"
            f"SELECT CASE WHEN COUNT(*) = {len(expected)} AND SUM(CASE WHEN {rows} THEN 1 ELSE 0 END) = "
            f"{len(expected)} THEN 'PASS' ELSE 'FAIL' END AS test_result FROM actual;\n")


def unit_tests(shift_left: ShiftLeft, service_url: str) -> None:
    """init, run and validate one case that passes and one that must fail (its expectation is wrong).

    The harness gives each `_ut` DDL 'scan.bounded.mode' = 'latest-offset' when the DDL names the option
    (Confluent Cloud's SHOW CREATE TABLE lists it: 'unbounded'), else appends 'lastest-offset' (sic), which
    the validation SELECT reading the table then fails on, in Flink as in the local service
    (tests/integration/test_source_options.py). So the DDL states the option, as an exported one does.
    """
    table = shift_left.pipelines / "intermediates" / "p1" / "int_table_2"
    ddl = table / "sql-scripts" / "ddl.int_table_2.sql"
    last = "'value.fields-include' = 'all'"
    ddl.write_text(ddl.read_text().replace(last, f"{last},\n  'scan.bounded.mode' = 'unbounded'"))
    shift_left("table", "init-unit-tests", "int_table_2")
    tests = table / "tests"
    assert (tests / "test_definitions.yaml").is_file()
    # As a team does after init: real input rows and the expected results in place of the generated templates.
    columns = "(payment_id, order_id, payment_method, payment_status, card_brand, signed_amount, payment_ts)"
    values = ",\n".join("(" + ", ".join(sql_literal(v) for v in row) + ")" for row in PAYMENTS_UT)
    (tests / "insert_src_table_3_1.sql").write_text(f"insert into src_table_3_ut\n{columns}\nvalues\n{values};\n")
    expected = int_table_2_expected()
    (tests / "validate_int_table_2_1.sql").write_text(validation(expected))
    wrong = {**expected, "o-1": (Decimal("100.00"), 2, 1)}  # the refund not subtracted: must FAIL
    (tests / "validate_int_table_2_2.sql").write_text(validation(wrong))

    shift_left("table", "run-unit-tests", "int_table_2", "--test-case-name", "test_int_table_2_1", timeout=600)
    quiesce(service_url)  # the DML under test has read the inserted rows
    first = shift_left("table", "validate-unit-tests", "int_table_2", "--test-case-name", "test_int_table_2_1")
    assert "Test result of test_int_table_2_1 is {'test_result': 'PASS'}" in first, first  # its last row, as a dict
    second = shift_left("table", "validate-unit-tests", "int_table_2", "--test-case-name", "test_int_table_2_2")
    assert "Test result of test_int_table_2_2 is {'test_result': 'FAIL'}" in second, second
    shift_left("table", "delete-unit-tests", "int_table_2")

