"""INFORMATION_SCHEMA, SHOW, DESCRIBE and EXPLAIN, as Confluent documents them.

Expected column names, orders and values come from Confluent's "Information
Schema" reference (views CATALOGS, SCHEMATA, TABLES, COLUMNS, TABLE_OPTIONS,
TABLE_CONSTRAINTS, KEY_COLUMN_USAGE) and the DESCRIBE / SHOW / EXPLAIN pages.
"""

from __future__ import annotations

import pytest

from shift_left_dagster.project.parsing import parse_statements
from tests.integration.conformance import Api

pytestmark = pytest.mark.service

CATALOG, DATABASE = "conf-cat", "conf-db"
HERE = {"sql.current-catalog": CATALOG, "sql.current-database": DATABASE}
ORDERS = ("CREATE TABLE conf_orders (id INT, customer STRING, amount DECIMAL(10, 2), ts TIMESTAMP_LTZ(3), "
          "tags ARRAY<STRING>, total AS amount * 2, PRIMARY KEY (id) NOT ENFORCED, "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) DISTRIBUTED BY HASH(id) INTO 3 BUCKETS "
          "WITH ('kafka.retention.time' = '1 d')")
INFO = f"`{CATALOG}`.`INFORMATION_SCHEMA`"


@pytest.fixture(scope="module")
def api(local_service) -> Api:  # type: ignore[no-untyped-def]
    api = Api(local_service.url)
    for sql in (ORDERS, "CREATE TABLE conf_events (k STRING, v BIGINT NOT NULL)"):
        assert api.run(sql, HERE)["status"]["phase"] == "COMPLETED"
    return api


def test_catalogs_view_lists_the_catalog(api: Api) -> None:
    columns, rows = api.query(f"SELECT * FROM {INFO}.`CATALOGS`", HERE)
    assert columns == ["CATALOG_ID", "CATALOG_NAME"]
    assert [CATALOG, CATALOG] in rows


def test_schemata_lists_databases_and_the_information_schema(api: Api) -> None:
    columns, rows = api.query(f"SELECT `SCHEMA_ID`, `SCHEMA_NAME` FROM {INFO}.`SCHEMATA` "
                              f"WHERE `SCHEMA_NAME` <> 'INFORMATION_SCHEMA'", HERE)
    assert columns == ["SCHEMA_ID", "SCHEMA_NAME"] and rows == [[DATABASE, DATABASE]]
    _, everything = api.query(f"SELECT `SCHEMA_NAME` FROM {INFO}.`DATABASES`", HERE)
    assert sorted(everything) == [["INFORMATION_SCHEMA"], [DATABASE]]


def test_tables_view(api: Api) -> None:
    columns, rows = api.query(f"SELECT * FROM {INFO}.`TABLES` WHERE `TABLE_SCHEMA` = '{DATABASE}'", HERE)
    assert columns == ["TABLE_CATALOG_ID", "TABLE_CATALOG", "TABLE_SCHEMA_ID", "TABLE_SCHEMA", "TABLE_NAME",
                       "TABLE_TYPE", "IS_DISTRIBUTED", "DISTRIBUTION_ALGORITHM", "DISTRIBUTION_BUCKETS",
                       "IS_WATERMARKED", "WATERMARK_COLUMN", "WATERMARK_EXPRESSION", "WATERMARK_IS_HIDDEN",
                       "COMMENT"]
    by_name = {r[4]: dict(zip(columns, r, strict=True)) for r in rows}
    assert set(by_name) == {"conf_orders", "conf_events"}
    orders, events = by_name["conf_orders"], by_name["conf_events"]
    assert orders["TABLE_TYPE"] == "BASE TABLE" and orders["TABLE_CATALOG"] == CATALOG
    assert (orders["IS_DISTRIBUTED"], orders["DISTRIBUTION_ALGORITHM"], orders["DISTRIBUTION_BUCKETS"]) == \
        ("YES", "HASH", "3")  # INT values are JSON strings on the wire
    assert (orders["IS_WATERMARKED"], orders["WATERMARK_COLUMN"], orders["WATERMARK_IS_HIDDEN"]) == \
        ("YES", "ts", "NO")
    assert "INTERVAL" in orders["WATERMARK_EXPRESSION"]
    assert events["IS_DISTRIBUTED"] == "NO" and events["DISTRIBUTION_BUCKETS"] is None
    # every table has the system watermark on $rowtime unless it declares one
    assert (events["WATERMARK_COLUMN"], events["WATERMARK_IS_HIDDEN"]) == ("$rowtime", "YES")


def test_columns_view_describes_every_column(api: Api) -> None:
    sql = (f"SELECT `COLUMN_NAME`, `ORDINAL_POSITION`, `IS_NULLABLE`, `DATA_TYPE`, `FULL_DATA_TYPE`, `IS_HIDDEN`, "
           f"`IS_GENERATED`, `IS_METADATA`, `METADATA_KEY`, `IS_PERSISTED`, `DISTRIBUTION_ORDINAL_POSITION` "
           f"FROM {INFO}.`COLUMNS` WHERE `TABLE_SCHEMA` = '{DATABASE}' AND `TABLE_NAME` = 'conf_orders'")
    _, rows = api.query(sql, HERE)
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["id"] == ["1", "NO", "INTEGER", "INT", "NO", "NO", "NO", None, "YES", "1"]
    assert by_name["customer"][2:4] == ["VARCHAR", "VARCHAR(2147483647)"] and by_name["customer"][1] == "YES"
    assert by_name["amount"][2:4] == ["DECIMAL", "DECIMAL(10, 2)"]
    assert by_name["ts"][2:4] == ["TIMESTAMP_LTZ", "TIMESTAMP(3) WITH LOCAL TIME ZONE"]
    assert by_name["tags"][2:4] == ["ARRAY", "ARRAY<VARCHAR(2147483647)>"]
    assert by_name["total"][4:6] == ["NO", "YES"] and by_name["total"][8] == "NO"  # computed: generated, not stored
    assert by_name["$rowtime"] == ["7", "NO", "TIMESTAMP_LTZ", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "YES", "NO",
                                   "YES", "timestamp", "NO", None]
    visible = [r[0] for r in sorted(rows, key=lambda r: int(r[1])) if r[5] == "NO"]
    assert visible == ["id", "customer", "amount", "ts", "tags", "total"]


def test_constraints_options_and_union_all(api: Api) -> None:
    """The docs' own example shape: one sparse result of UNION ALL sections."""
    sql = f"""
      (SELECT 'COLUMNS' AS `section`, `COLUMN_NAME` AS `name`, `ORDINAL_POSITION` AS `pos`
       FROM {INFO}.`COLUMNS` WHERE `TABLE_NAME` = 'conf_orders' AND `IS_HIDDEN` = 'NO')
      UNION ALL
      (SELECT 'TABLE_CONSTRAINTS', `CONSTRAINT_TYPE`, CAST(NULL AS INT)
       FROM {INFO}.`TABLE_CONSTRAINTS` WHERE `TABLE_NAME` = 'conf_orders')
      UNION ALL
      (SELECT 'KEY_COLUMN_USAGE', `COLUMN_NAME`, `ORDINAL_POSITION`
       FROM {INFO}.`KEY_COLUMN_USAGE` WHERE `TABLE_NAME` = 'conf_orders')"""
    columns, rows = api.query(sql, HERE)
    assert columns == ["section", "name", "pos"]
    assert ["TABLE_CONSTRAINTS", "PRIMARY KEY", None] in rows and ["KEY_COLUMN_USAGE", "id", "1"] in rows
    assert len([r for r in rows if r[0] == "COLUMNS"]) == 6
    _, options = api.query(f"SELECT `OPTION_KEY`, `OPTION_VALUE` FROM {INFO}.`TABLE_OPTIONS` "
                           f"WHERE `TABLE_NAME` = 'conf_orders'", HERE)
    assert ["kafka.retention.time", "1 d"] in options


def test_information_schema_is_not_joined_with_tables(api: Api) -> None:
    detail = api.failure(f"SELECT * FROM {INFO}.`TABLES` t JOIN conf_events e ON t.`TABLE_NAME` = e.k", HERE)
    assert "INFORMATION_SCHEMA" in detail
    assert "'NO_SUCH_VIEW' does not exist" in api.failure(f"SELECT * FROM {INFO}.`NO_SUCH_VIEW`", HERE)


def test_show_statements(api: Api) -> None:
    columns, rows = api.query("SHOW TABLES", HERE)
    assert columns == ["table name"] and rows == [["conf_events"], ["conf_orders"]]
    assert api.query("SHOW TABLES LIKE 'conf_o%'", HERE)[1] == [["conf_orders"]]
    assert api.query("SHOW TABLES NOT LIKE 'conf_o%'", HERE)[1] == [["conf_events"]]
    assert [CATALOG, CATALOG] in api.query("SHOW CATALOGS", HERE)[1]
    assert api.query("SHOW DATABASES", HERE)[1] == [[DATABASE, DATABASE]]
    assert api.query("SHOW CURRENT CATALOG", HERE)[1] == [[CATALOG]]
    body = api.run("SHOW TABLES", HERE)
    assert body["status"]["traits"]["sql_kind"] == "SHOW_TABLES" and body["status"]["traits"]["is_bounded"]


def test_show_create_table_gives_ddl_that_recreates_the_table(api: Api) -> None:
    _, rows = api.query("SHOW CREATE TABLE conf_orders", HERE)
    ddl = rows[0][0]
    assert "'connector' = 'confluent'" in ddl and "DISTRIBUTED BY HASH(`id`) INTO 3 BUCKETS" in ddl
    parse_statements(ddl)  # Flink SQL our dialect (and Flink) reads
    copy = ddl.replace("`conf_orders`", "`conf_orders_copy`")
    assert api.run(copy, HERE)["status"]["phase"] == "COMPLETED"
    _, original = api.query("DESCRIBE conf_orders", HERE)
    _, copied = api.query("DESCRIBE conf_orders_copy", HERE)
    assert copied == original
    api.run("DROP TABLE conf_orders_copy", HERE)


def test_describe(api: Api) -> None:
    columns, rows = api.query("DESCRIBE conf_orders", HERE)
    assert columns == ["Column Name", "Data Type", "Nullable", "Extras"]
    by_name = {r[0]: r for r in rows}
    assert "$rowtime" not in by_name  # hidden from DESCRIBE, shown by DESCRIBE EXTENDED
    assert by_name["id"][2] == "NOT NULL" and "PRIMARY KEY" in by_name["id"][3] and "BUCKET KEY" in by_name["id"][3]
    assert by_name["customer"][1:] == ["STRING", "NULL", None]
    assert by_name["total"][3].startswith("AS ")
    assert "WATERMARK AS" in by_name["ts"][3]
    extended = {r[0]: r for r in api.query("DESC EXTENDED conf_events", HERE)[1]}
    assert extended["$rowtime"][1:3] == ["TIMESTAMP_LTZ(3)", "NOT NULL"]
    assert "METADATA FROM 'timestamp'" in extended["$rowtime"][3]
    detail = api.failure("DESCRIBE no_such_table", HERE)
    assert detail == "Table (or view) 'no_such_table' does not exist or you do not have permission to access it."


def test_explain_compiles_without_running(api: Api) -> None:
    api.run("CREATE TABLE conf_sink (id INT, doubled DECIMAL(12, 2), PRIMARY KEY (id) NOT ENFORCED)", HERE)
    body = api.run("EXPLAIN INSERT INTO conf_sink SELECT id, amount * 2 FROM conf_orders", HERE)
    assert body["status"]["phase"] == "COMPLETED", body["status"]
    assert body["status"]["traits"]["sql_kind"] == "EXPLAIN"
    rows = api.rows(body["name"])
    assert len(rows) == 1 and len(rows[0]) == 1 and "conf_sink" in rows[0][0]
    # nothing ran, nothing was written: the sink is still empty and no statement is left running
    assert api.query("SELECT * FROM conf_sink", HERE)[1] == []
    assert api.statement(body["name"])["status"]["phase"] == "COMPLETED"
    select = api.run("EXPLAIN SELECT customer, COUNT(*) FROM conf_orders GROUP BY customer", HERE)
    assert select["status"]["phase"] == "COMPLETED" and api.rows(select["name"])[0][0]
    ctas = api.run("EXPLAIN CREATE TABLE conf_ctas AS SELECT id FROM conf_orders", HERE)
    assert ctas["status"]["phase"] == "COMPLETED"
    assert ["conf_ctas"] not in api.query("SHOW TABLES", HERE)[1]  # EXPLAIN created nothing


@pytest.mark.parametrize(("sql", "expected"), [
    ("EXPLAIN INSERT INTO conf_sink SELECT id, amount FROM nowhere",
     "Table (or view) 'nowhere' does not exist or you do not have permission to access it."),
    ("EXPLAIN INSERT INTO missing_sink SELECT id, amount FROM conf_orders",
     "Table (or view) 'missing_sink' does not exist or you do not have permission to access it."),
    ("EXPLAIN INSERT INTO conf_sink SELECT id FROM conf_orders", "Different number of columns"),
    ("EXPLAIN CREATE TABLE conf_orders AS SELECT id, customer, amount, ts, tags FROM conf_orders",
     "already exists"),
    ("EXPLAIN CREATE TABLE conf_new AS SELECT id FROM conf_events", "Column 'id'"),
    ("EXPLAIN INSERT INTO conf_sink SELECT id, no_such_column FROM conf_orders", "no_such_column"),
])
def test_explain_fails_like_running_would(api: Api, sql: str, expected: str) -> None:
    api.run("CREATE TABLE IF NOT EXISTS conf_sink (id INT, doubled DECIMAL(12, 2), PRIMARY KEY (id) NOT ENFORCED)",
            HERE)
    detail = api.failure(sql, HERE)
    assert expected in detail, detail
    running = api.failure(sql.removeprefix("EXPLAIN "), HERE)
    assert running == detail  # the same words as running the statement
