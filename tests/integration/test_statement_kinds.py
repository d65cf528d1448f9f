"""CREATE TABLE AS, EXECUTE STATEMENT SET, ALTER TABLE, DROP TABLE and timestamp scan bounds."""

from __future__ import annotations

import pytest

from shift_left_dagster.confluent.errors import StatementFailed
from tests.integration.support import client_for, quiesce, run, select, unique

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def sales(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("sk-ddl"), "CREATE TABLE sk_sales (shop STRING, amount INT, "
                                  "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("sk-insert"), "INSERT INTO sk_sales VALUES ('a', 1, TIMESTAMP '2026-01-01 00:00:00'), "
                                     "('b', 2, TIMESTAMP '2026-01-02 00:00:00'), "
                                     "('a', 3, TIMESTAMP '2026-01-03 00:00:00')")
    return client


def test_create_table_as_select(local_service, sales):  # type: ignore[no-untyped-def]
    ctas = run(sales, unique("sk-ctas"), "CREATE TABLE sk_totals (PRIMARY KEY (shop) NOT ENFORCED) "
                                         "DISTRIBUTED BY HASH(shop) INTO 1 BUCKETS AS "
                                         "SELECT shop, SUM(amount) AS total FROM sk_sales GROUP BY shop", "RUNNING")
    assert ctas.status.traits.sql_kind == "CREATE_TABLE_AS"
    run(sales, unique("sk-insert"), "INSERT INTO sk_sales VALUES ('b', 10, TIMESTAMP '2026-01-04 00:00:00')")
    quiesce(local_service.url)
    assert select(sales, "SELECT * FROM sk_totals") == [("a", "4"), ("b", "12")]


def test_statement_set_writes_every_sink(local_service, sales):  # type: ignore[no-untyped-def]
    for table in ("sk_a", "sk_b"):
        run(sales, unique("sk-ddl"), f"CREATE TABLE {table} (amount INT) DISTRIBUTED INTO 1 BUCKETS")
    statement_set = run(sales, unique("sk-set"), "EXECUTE STATEMENT SET BEGIN "
                        "INSERT INTO sk_a SELECT amount FROM sk_sales WHERE shop = 'a'; "
                        "INSERT INTO sk_b SELECT amount FROM sk_sales WHERE shop = 'b'; END", "RUNNING")
    assert statement_set.status.traits.sql_kind == "EXECUTE_STATEMENT_SET"
    quiesce(local_service.url)
    assert select(sales, "SELECT * FROM sk_a") == [("1",), ("3",)]
    assert {r[0] for r in select(sales, "SELECT * FROM sk_b")} >= {"2"}


def test_timestamp_bounds_read_a_time_range(sales):  # type: ignore[no-untyped-def]
    january_2, january_3 = 1767312000000, 1767398400000  # 2026-01-02 and 2026-01-03 00:00 UTC, epoch ms
    rows = select(sales, f"SELECT shop, amount FROM sk_sales /*+ OPTIONS('scan.startup.mode'='timestamp', "
                         f"'scan.startup.timestamp-millis'='{january_2}', 'scan.bounded.mode'='timestamp', "
                         f"'scan.bounded.timestamp-millis'='{january_3}') */")
    assert rows == [("b", "2")]


def test_alter_and_drop_table(sales):  # type: ignore[no-untyped-def]
    run(sales, unique("sk-ddl"), "CREATE TABLE sk_doomed (id INT) DISTRIBUTED INTO 1 BUCKETS")
    run(sales, unique("sk-insert"), "INSERT INTO sk_doomed VALUES (1)")
    run(sales, unique("sk-alter"), "ALTER TABLE sk_doomed ADD (note STRING)")
    run(sales, unique("sk-alter"), "ALTER TABLE sk_doomed SET ('scan.startup.mode' = 'latest-offset')")
    run(sales, unique("sk-insert"), "INSERT INTO sk_doomed VALUES (2, 'two')")
    assert select(sales, "SELECT * FROM sk_doomed /*+ OPTIONS('scan.startup.mode'='earliest-offset') */") == [
        ("1", None), ("2", "two")]
    run(sales, unique("sk-drop"), "DROP TABLE sk_doomed")
    name = unique("sk-gone")
    sales.create_statement(name, "SELECT * FROM sk_doomed")
    with pytest.raises(StatementFailed, match="sk_doomed"):
        sales.wait_for_phase(name, {"COMPLETED"}, timeout=30)
    run(sales, unique("sk-drop"), "DROP TABLE IF EXISTS sk_doomed")
