"""The Flink dialect parses every construct teams write into a real AST, and writes it back."""

import pytest
from sqlglot import exp

from shift_left_dagster.project.dialect import (
    Distribution,
    MetadataColumnConstraint,
    OptionsHint,
    StatementSet,
    TableArgument,
)
from shift_left_dagster.project.parsing import (
    FlinkSqlError,
    parse_one_statement,
    parse_statements,
    split_statements,
    to_flink_sql,
)

DDL = """-- a source table as Confluent teams write it
CREATE TABLE IF NOT EXISTS orders (
  order_id STRING NOT NULL,
  amount DECIMAL(18, 2),
  tags ARRAY<STRING>,
  address ROW<street STRING, city STRING>,
  nested ROW(a INT, b ARRAY<MAP<STRING, BIGINT>>),
  attributes MAP<STRING, STRING>,
  labels MULTISET<STRING>,
  payload BYTES,
  event_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  partition_id INT METADATA FROM 'partition' VIRTUAL,
  headers MAP<STRING, BYTES> METADATA,
  doubled AS amount * 2,
  WATERMARK FOR event_time AS event_time - INTERVAL '5' SECOND,
  PRIMARY KEY (order_id) NOT ENFORCED
) DISTRIBUTED BY HASH(order_id) INTO 6 BUCKETS
WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'value.avro-registry.schema-context' = '.flink-dev'
);
"""

CONSTRUCTS = {
    "create table": (DDL, exp.Create),
    "distributed into only": ("CREATE TABLE t (a INT) DISTRIBUTED INTO 3 BUCKETS", exp.Create),
    "ctas": (
        "CREATE TABLE t DISTRIBUTED BY HASH(id) INTO 1 BUCKETS WITH ('changelog.mode' = 'append') "
        "AS SELECT id, name FROM src WHERE id IS NOT NULL",
        exp.Create,
    ),
    "insert select": ("INSERT INTO t SELECT a, b FROM s WHERE a > 1", exp.Insert),
    "insert values": (
        "INSERT INTO t VALUES ('it''s', 1, TIMESTAMP '2026-01-01 10:00:00'), ('b', 2, NULL)",
        exp.Insert,
    ),
    "statement set": (
        "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM b; INSERT INTO c SELECT * FROM d; END",
        StatementSet,
    ),
    "set": ("SET 'sql.state-ttl' = '1 h'", exp.Set),
    "alter set": ("ALTER TABLE t SET ('changelog.mode' = 'append', 'kafka.retention.time' = '0')", exp.Alter),
    "alter add column": ("ALTER TABLE t ADD (c STRING)", exp.Alter),
    "drop": ("DROP TABLE IF EXISTS t", exp.Drop),
    "tumble": (
        "SELECT window_start, window_end, COUNT(*) AS n "
        "FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)) "
        "GROUP BY window_start, window_end",
        exp.Select,
    ),
    "hop": (
        "SELECT * FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '1' HOUR))",
        exp.Select,
    ),
    "cumulate": (
        "SELECT * FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' HOUR, INTERVAL '1' DAY))",
        exp.Select,
    ),
    "temporal join": (
        "SELECT o.id, r.rate FROM orders AS o "
        "JOIN rates FOR SYSTEM_TIME AS OF o.`$rowtime` AS r ON o.currency = r.currency",
        exp.Select,
    ),
    "cross join unnest": ("SELECT o.id, t.item FROM orders AS o CROSS JOIN UNNEST(o.items) AS t(item)", exp.Select),
    "options hint": (
        "SELECT * FROM orders /*+ OPTIONS('scan.startup.mode'='earliest-offset') */ AS o",
        exp.Select,
    ),
    "rowtime": ("SELECT $rowtime, `$rowtime` FROM orders", exp.Select),
    "match_recognize": (
        "SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts "
        "MEASURES A.price AS start_price ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW "
        "PATTERN (A B+) DEFINE B AS B.price < A.price) AS m",
        exp.Select,
    ),
    "flink functions": (
        "SELECT FLOOR(ts TO DAY), JSON_VALUE(j, '$.a'), TO_TIMESTAMP_LTZ(1700000000000, 3), "
        "DATE_FORMAT(ts, 'yyyy-MM-dd'), CURRENT_WATERMARK(ts), ROW(a, b) FROM t",
        exp.Select,
    ),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_construct_parses_to_an_ast_and_round_trips(name):
    sql, kind = CONSTRUCTS[name]
    tree = parse_one_statement(sql).tree
    assert isinstance(tree, kind)
    assert not list(tree.find_all(exp.Command))
    again = parse_one_statement(to_flink_sql(tree)).tree
    assert again == tree, to_flink_sql(tree)


def test_ddl_details_are_in_the_tree():
    tree = parse_one_statement(DDL).tree
    assert isinstance(tree.find(Distribution), Distribution)
    metadata = list(tree.find_all(MetadataColumnConstraint))
    assert [m.name for m in metadata] == ["timestamp", "partition", ""]
    assert tree.find(exp.WatermarkColumnConstraint) is not None
    assert tree.find(exp.ComputedColumnConstraint) is not None
    assert "NOT ENFORCED" in to_flink_sql(tree)
    types = {c.name: to_flink_sql(c.args["kind"]) for c in tree.find_all(exp.ColumnDef) if c.args.get("kind")}
    assert types["labels"] == "MULTISET<STRING>"
    assert types["payload"] == "BYTES"
    assert types["address"] == "ROW<street STRING, city STRING>"


def test_options_hint_is_attached_to_its_table():
    tree = parse_one_statement(CONSTRUCTS["options hint"][0]).tree
    hint = tree.find(OptionsHint)
    assert hint.options == {"scan.startup.mode": "earliest-offset"}
    assert hint.parent.name == "orders" and hint.parent.alias == "o"


def test_window_tvf_table_argument_is_a_table_reference():
    tree = parse_one_statement(CONSTRUCTS["tumble"][0]).tree
    argument = tree.find(TableArgument)
    assert argument.this.name == "orders"


def test_flink_string_literals_double_quotes_and_keep_backslashes():
    tree = parse_one_statement(r"SELECT 'it''s', 'C:\new' FROM t").tree
    assert [s.this for s in tree.find_all(exp.Literal)] == ["it's", r"C:\new"]


def test_split_respects_strings_comments_and_statement_sets():
    script = """-- one; not a split
SELECT ';' FROM t; /* ; */
EXECUTE STATEMENT SET BEGIN
  INSERT INTO a SELECT * FROM b;
  INSERT INTO c SELECT * FROM d;
END;
SELECT 'x'
"""
    parts = split_statements(script)
    assert [line for _, line in parts] == [2, 3, 7]
    assert parts[0][0] == "SELECT ';' FROM t"
    assert parts[1][0].startswith("EXECUTE STATEMENT SET") and parts[1][0].endswith("END")
    assert len(parse_statements(script)) == 3


@pytest.mark.parametrize(
    "sql, line, words",
    [
        ("SELECT a\nFROM t\nWHERE (a > 1", 3, "Expecting )"),
        ("\n\nSELEC a FROM t", 3, "unknown statement"),
        ("GRANT SELECT ON t TO u", 1, "unknown statement"),
        ("SELECT 1;\nSELECT 'unterminated FROM t", 2, "tokenizing"),
        ("SELECT * FROM t /*+ STATE_TTL('t'='1h') */", 1, "only OPTIONS"),
    ],
)
def test_bad_sql_is_one_line_error_with_file_and_line(sql, line, words):
    with pytest.raises(FlinkSqlError) as error:
        parse_statements(sql, "pipelines/x/dml.x.sql")
    message = str(error.value)
    assert message.startswith(f"pipelines/x/dml.x.sql:{line}: "), message
    assert words in message
    assert "\n" not in message
