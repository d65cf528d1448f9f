"""`test init` / `test run` (shift_left_dagster.unit_tests) on a copy of the sample project.

Two tables: int_c360_purchase_items (stateless: CROSS JOIN UNNEST) and
fct_order (stateful: a LEFT JOIN of two upsert tables), each with a case
that passes and one that fails. The expectations written into the
validation files are computed here in plain Python from the inserted rows.
"""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shift_left_dagster.cli_unit_tests import test_app as unit_test_app
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.unit_tests import init_tests, run_tests, tables_with_tests
from shift_left_dagster.unit_tests.runner import verdict
from tests.integration.support import PROJECT, client_for

pytestmark = [pytest.mark.spark, pytest.mark.service]

ITEMS = "pipelines/intermediates/c360/int_c360_purchase_items/tests"
ORDER = "pipelines/facts/p1/fct_order/tests"

PURCHASES = [  # purchase_id, user_id, channel, items, amount
    ("p-1", "u-1", "web", [" a-1 ", "b-2"], "12.50"),
    ("p-2", "u-2", "app", None, "3.00"),
    ("p-3", "u-1", "web", ["c-3"], "7.25"),
]
ORDERS = [("o-1", Decimal("100.00")), ("o-2", Decimal("50.00")), ("o-3", Decimal("30.00"))]
PAYMENTS = [("o-1", Decimal("100.00"), 1), ("o-3", Decimal("10.00"), 2)]


def quoted(values: list[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def expect(table: str, pairs: list[str], key: str) -> str:
    """A validation returning PASS when the twin holds exactly these `key` values."""
    return (f"SELECT CASE WHEN COUNT(*) = {len(pairs)} AND SUM(CASE WHEN {key} IN ({quoted(pairs)}) "
            f"THEN 1 ELSE 0 END) = {len(pairs)} THEN 'PASS' ELSE 'FAIL' END AS test_result FROM {table}_ut;\n")


def payment_state(amount: Decimal, paid: Decimal, count: int) -> str:
    """fct_order's rule, restated."""
    if count == 0:
        return "UNPAID"
    if paid >= amount:
        return "PAID"
    return "REFUNDED" if paid <= 0 else "PARTIAL"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample project whose two tables have tests/ folders: init, then edited as a team would."""
    root = tmp_path_factory.mktemp("unit-tests") / "flink_project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns(".*"))
    pipelines = root / "pipelines"
    assert init_tests("int_c360_purchase_items", pipelines)
    assert init_tests("fct_order", pipelines)

    rows = ",\n".join(
        f"('{p}', '{u}', '{c}', {'ARRAY[' + quoted(i) + ']' if i else 'CAST(NULL AS ARRAY<STRING>)'}, "
        f"CAST({a} AS DECIMAL(10, 2)), TO_TIMESTAMP_LTZ(0, 3))" for p, u, c, i, a in PURCHASES)
    skus = [f"{p}/{item.strip().upper()}" for p, _u, _c, items, _a in PURCHASES for item in items or []]
    for case in ("1", "2"):
        (root / ITEMS / f"insert_src_c360_purchases_{case}.sql").write_text(
            f"INSERT INTO src_c360_purchases_ut (purchase_id, user_id, channel, items, amount, purchase_ts) "
            f"VALUES\n{rows};\n")
    key = "CONCAT(purchase_id, '/', sku)"
    (root / ITEMS / "validate_int_c360_purchase_items_1.sql").write_text(expect("int_c360_purchase_items", skus, key))
    untrimmed = [f"{p}/{item}" for p, _u, _c, items, _a in PURCHASES for item in items or []]  # a wrong belief
    (root / ITEMS / "validate_int_c360_purchase_items_2.sql").write_text(
        expect("int_c360_purchase_items", untrimmed, key))

    orders = ",\n".join(f"('{o}', 'c-1', 'Ann', 'GOLD', 'FR', 'prod', 1, CAST({a} AS DECIMAL(12, 2)), 'NEW', "
                        f"TO_TIMESTAMP_LTZ(0, 3))" for o, a in ORDERS)
    payments = ",\n".join(f"('{o}', CAST({p} AS DECIMAL(12, 2)), {n}, 0, TO_TIMESTAMP_LTZ(0, 3))"
                          for o, p, n in PAYMENTS)
    paid = {o: (p, n) for o, p, n in PAYMENTS}
    states = [f"{o}/{payment_state(a, *paid.get(o, (Decimal(0), 0)))}" for o, a in ORDERS]
    assert states == ["o-1/PAID", "o-2/UNPAID", "o-3/PARTIAL"]
    for case in ("1", "2"):
        (root / ORDER / f"insert_int_table_1_{case}.sql").write_text(f"INSERT INTO int_table_1_ut VALUES\n{orders};\n")
        (root / ORDER / f"insert_int_table_2_{case}.sql").write_text(
            f"INSERT INTO int_table_2_ut VALUES\n{payments};\n")
    key = "CONCAT(order_id, '/', payment_state)"
    (root / ORDER / "validate_fct_order_1.sql").write_text(expect("fct_order", states, key))
    (root / ORDER / "validate_fct_order_2.sql").write_text(expect("fct_order", [s.replace("o-2/UNPAID", "o-2/PAID")
                                                                              for s in states], key))
    return pipelines


@pytest.fixture(scope="module")
def client(local_service) -> ConfluentClient:  # type: ignore[no-untyped-def]
    found = client_for(local_service.url)
    found.settings.poll.initial = found.settings.poll.step = 0.05
    return found


def test_init_writes_shift_lefts_layout(project: Path) -> None:
    names = sorted(p.name for p in (project.parent / ORDER).iterdir())
    assert names == ["ddl_int_table_1.sql", "ddl_int_table_2.sql", "insert_int_table_1_1.sql",
                     "insert_int_table_1_2.sql", "insert_int_table_2_1.sql", "insert_int_table_2_2.sql",
                     "test_definitions.yaml", "validate_fct_order_1.sql", "validate_fct_order_2.sql"]
    assert "CREATE TABLE IF NOT EXISTS int_table_1_ut" in (project.parent / ORDER / "ddl_int_table_1.sql").read_text()
    assert init_tests("fct_order", project) == []  # edited files are kept
    assert tables_with_tests(project) == ["fct_order", "int_c360_purchase_items"]


@pytest.mark.parametrize("table", ["int_c360_purchase_items", "fct_order"])
def test_a_passing_and_a_failing_case(project: Path, client: ConfluentClient, table: str) -> None:
    report = run_tests(table, client=client, pipelines=project, timeout=120)
    assert [(c.name, c.passed) for c in report.cases] == [(f"test_{table}_1", True), (f"test_{table}_2", False)]
    assert report.cases[0].validation_rows == [["PASS"]] and report.cases[1].validation_rows == [["FAIL"]]
    assert not report.passed
    assert run_tests(table, "1", client=client, pipelines=project, timeout=120).passed
    # nothing left behind: no twin, no statement
    assert not [t.topic_name for t in client.list_topics() if t.topic_name.endswith("_ut")]
    assert not [s.name for s in client.list_statements() if s.name.startswith("ut-")]


def test_cli_prints_each_case_and_exits_1_on_a_failure(project: Path, client: ConfluentClient, local_service) -> None:  # type: ignore[no-untyped-def]
    common = ["--pipelines", str(project), "--url", local_service.url]
    failing = CliRunner().invoke(unit_test_app, ["run", "fct_order", *common])
    assert failing.exit_code == 1, failing.output
    lines = [line.split()[:2] for line in failing.output.splitlines()]
    assert lines == [["CASE", "RESULT"], ["test_fct_order_1", "pass"], ["test_fct_order_2", "FAIL"]]
    passing = CliRunner().invoke(unit_test_app, ["run", "fct_order", "--case", "test_fct_order_1", *common])
    assert passing.exit_code == 0, passing.output
    unknown = CliRunner().invoke(unit_test_app, ["run", "fct_order", "--case", "9", *common])
    assert unknown.exit_code == 2 and "no test case '9'" in unknown.output


def test_cli_init(tmp_path: Path) -> None:
    root = tmp_path / "flink_project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns(".*"))
    result = CliRunner().invoke(unit_test_app, ["init", "int_table_2", "--pipelines", str(root / "pipelines")])
    assert result.exit_code == 0, result.output
    assert "insert_src_table_3_1.sql" in result.output and "validate_int_table_2_2.sql" in result.output


def test_a_shift_left_tests_folder_runs_unmodified(project: Path, client: ConfluentClient) -> None:
    """shift_left's documented layout: `sql_file_name` keys, foundations named without `_ut`, inputs
    naming the `_ut` tables, a validation selecting 'PASS'/'FAIL'."""
    tests = project.parent / "pipelines/intermediates/p1/int_table_2/tests"
    tests.mkdir()
    (tests / "test_definitions.yaml").write_text(
        "foundations:\n"
        "  - table_name: src_table_3\n"
        "    ddl_for_test: ./tests/ddl_src_table_3.sql\n"
        "test_suite:\n"
        "- name: test_case_1\n"
        "  inputs:\n"
        "    - table_name: src_table_3\n"
        "      sql_file_name: ./tests/insert_src_table_3_1.sql\n"
        "  outputs:\n"
        "    - table_name: int_table_2\n"
        "      sql_file_name: ./tests/validate_int_table_2_1.sql\n")
    ddl = (project / "sources/p1/src_table_3/sql-scripts/ddl.src_table_3.sql").read_text()
    (tests / "ddl_src_table_3.sql").write_text(ddl)
    columns = ddl.split("(", 1)[1]
    assert "payment_id" in columns and "signed_amount" in columns
    payments = [("pay-1", "o-1", "SETTLED", "40.00"), ("pay-2", "o-1", "REFUNDED", "-15.00"),
                ("pay-3", "o-2", "SETTLED", "9.99")]
    (tests / "insert_src_table_3_1.sql").write_text(
        "insert into src_table_3_ut (payment_id, order_id, payment_status, signed_amount, payment_ts) values\n"
        + ",\n".join(f"('{p}', '{o}', '{s}', CAST({a} AS DECIMAL(12, 2)), TO_TIMESTAMP_LTZ(0, 3))"
                     for p, o, s, a in payments) + ";\n")
    totals: dict[str, Decimal] = {}
    for _p, order, _s, amount in payments:
        totals[order] = totals.get(order, Decimal(0)) + Decimal(amount)
    wanted = [f"{o}/{t}" for o, t in sorted(totals.items())]
    assert wanted == ["o-1/25.00", "o-2/9.99"]
    (tests / "validate_int_table_2_1.sql").write_text(
        "with result_table as (\n  select * from int_table_2_ut\n)\n"
        f"SELECT CASE WHEN count(*) = 2 AND SUM(CASE WHEN CONCAT(order_id, '/', CAST(paid_amount AS STRING)) "
        f"IN ({quoted(wanted)}) THEN 1 ELSE 0 END) = 2 THEN 'PASS' ELSE 'FAIL' END from result_table;\n")
    report = run_tests("int_table_2", client=client, pipelines=project, timeout=120)
    assert [(c.name, c.passed) for c in report.cases] == [("test_case_1", True)], report


def test_verdicts() -> None:
    assert verdict([["PASS"]]) == (True, "validation: 1 PASS")
    assert verdict([["PASS"], ["fail"]])[0] is False
    assert verdict([]) == (False, "the validation returned no row")
    assert verdict([["o-1", "3"]]) == (True, "validation returned 1 row(s)")
