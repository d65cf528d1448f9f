"""State form, tables read/written and DDL contracts, decided from the AST."""

import pytest

from shift_left_dagster.project.analysis import StateForm, analyze_ddl, analyze_dml
from shift_left_dagster.project.parsing import parse_one_statement


def dml(sql: str):
    return analyze_dml(parse_one_statement(sql))


STATEFUL = {
    "IN subquery (semi join)": "INSERT INTO t SELECT k FROM a WHERE k IN (SELECT k FROM b)",
    "NOT EXISTS (anti join)": "INSERT INTO t SELECT k FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "scalar subquery": "INSERT INTO t SELECT k, (SELECT MAX(n) FROM b) FROM a",
    "inner join": "INSERT INTO t SELECT a.x, b.y FROM a JOIN b ON a.id = b.id",
    "left join": "INSERT INTO t SELECT a.x, b.y FROM a LEFT JOIN b ON a.id = b.id",
    "join in a cte": "INSERT INTO t WITH j AS (SELECT a.x FROM a JOIN b ON a.id = b.id) SELECT x FROM j",
    "group by": "INSERT INTO t SELECT k, SUM(v) AS s FROM a GROUP BY k",
    "global aggregate": "INSERT INTO t SELECT COUNT(*) FROM a",
    "select distinct": "INSERT INTO t SELECT DISTINCT k FROM a",
    "over window": "INSERT INTO t SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY $rowtime) FROM a",
    "lag": "INSERT INTO t SELECT k, LAG(v) OVER (PARTITION BY k ORDER BY $rowtime) FROM a",
    "row_number dedup": (
        "INSERT INTO t SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
        "ORDER BY `$rowtime` DESC) AS rn FROM a) WHERE rn = 1"
    ),
    "tumble window": (
        "INSERT INTO t SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR($rowtime), "
        "INTERVAL '1' HOUR)) GROUP BY window_start, window_end"
    ),
    "temporal join": (
        "INSERT INTO t SELECT o.id, r.rate FROM o JOIN r FOR SYSTEM_TIME AS OF o.`$rowtime` ON o.c = r.c"
    ),
    "union distinct": "INSERT INTO t SELECT k FROM a UNION SELECT k FROM b",
    "match_recognize": (
        "INSERT INTO t SELECT * FROM a MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts "
        "MEASURES A.v AS v PATTERN (A B) DEFINE B AS B.v > A.v)"
    ),
}

STATELESS = {
    "projection": "INSERT INTO t SELECT k, UPPER(v) AS v, CAST(n AS BIGINT) FROM a",
    "filter": "INSERT INTO t SELECT * FROM a WHERE v IS DISTINCT FROM 'DELETED' AND n > 0",
    "union all": "INSERT INTO t SELECT k FROM a UNION ALL SELECT k FROM b",
    "cross join unnest": "INSERT INTO t SELECT a.k, i.item FROM a CROSS JOIN UNNEST(a.items) AS i(item)",
    "per-row functions": (
        "INSERT INTO t SELECT JSON_VALUE(p, '$.id'), DATE_FORMAT($rowtime, 'yyyy'), "
        "CASE WHEN n > 1 THEN 'big' ELSE 'small' END FROM a"
    ),
    "cte filter": "INSERT INTO t WITH f AS (SELECT * FROM a WHERE n > 0) SELECT k FROM f",
    "derived table and IN list": "INSERT INTO t SELECT k FROM (SELECT k FROM a) AS d WHERE k IN ('x', 'y')",
    "string that looks like a join": "INSERT INTO t SELECT 'x JOIN y GROUP BY z' AS s FROM a",
}


@pytest.mark.parametrize("rule", sorted(STATEFUL))
def test_stateful_rules(rule):
    info = dml(STATEFUL[rule])
    assert info.state_form == StateForm.STATEFUL
    assert info.state_reasons


@pytest.mark.parametrize("rule", sorted(STATELESS))
def test_stateless_rules(rule):
    info = dml(STATELESS[rule])
    assert info.state_form == StateForm.STATELESS, info.state_reasons


def test_tables_read_exclude_ctes_aliases_and_the_target():
    info = dml(
        """INSERT INTO fct
        WITH latest AS (SELECT * FROM src_a), joined AS (SELECT l.k FROM latest AS l JOIN `raw.topic` AS r ON l.k = r.k)
        SELECT j.k FROM joined AS j
        LEFT JOIN cat.db.dim_b AS d ON j.k = d.k
        WHERE j.k IN (SELECT k FROM src_c)"""
    )
    assert info.tables_written == ["fct"]
    assert info.tables_read == ["dim_b", "raw.topic", "src_a", "src_c"]


def test_window_tvf_source_is_read():
    assert dml(STATEFUL["tumble window"]).tables_read == ["a"]


def test_statement_set_writes_every_target():
    info = dml("EXECUTE STATEMENT SET BEGIN INSERT INTO x SELECT * FROM a; INSERT INTO y SELECT * FROM b; END")
    assert info.tables_written == ["x", "y"]
    assert info.tables_read == ["a", "b"]
    assert info.state_form == StateForm.STATELESS


def test_join_counts_match_shift_left_complexity():
    info = dml("INSERT INTO t SELECT * FROM a LEFT JOIN b ON a.k = b.k JOIN c ON a.k = c.k "
               "CROSS JOIN UNNEST(a.x) AS u(v)")
    assert (info.joins.left, info.joins.regular, info.joins.inner) == (1, 1, 0)


def test_ddl_contract():
    info = analyze_ddl(
        parse_one_statement(
            """CREATE TABLE IF NOT EXISTS orders (
              tenant_id STRING NOT NULL, order_id STRING NOT NULL, amount DECIMAL(10, 2),
              ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', doubled AS amount * 2,
              WATERMARK FOR ts AS ts - INTERVAL '1' SECOND,
              PRIMARY KEY (tenant_id, order_id) NOT ENFORCED
            ) DISTRIBUTED BY HASH(tenant_id, order_id) INTO 3 BUCKETS
            WITH ('changelog.mode' = 'retract', 'value.format' = 'json-registry')"""
        )
    )
    assert info.table == "orders"
    assert info.primary_key == ["tenant_id", "order_id"]
    assert info.changelog_mode == "retract"
    assert (info.distribution, info.buckets) == (["tenant_id", "order_id"], 3)
    assert [(c.name, c.type, c.nullable) for c in info.columns[:3]] == [
        ("tenant_id", "STRING", False),
        ("order_id", "STRING", False),
        ("amount", "DECIMAL(10, 2)", True),
    ]
    assert info.columns[3].metadata_key == "timestamp" and not info.columns[3].computed
    assert info.columns[4].computed
    assert info.watermark.startswith("WATERMARK FOR ts")


def test_changelog_mode_defaults_follow_the_primary_key():
    keyed = analyze_ddl(parse_one_statement("CREATE TABLE a (k STRING, PRIMARY KEY (k) NOT ENFORCED)"))
    plain = analyze_ddl(parse_one_statement("CREATE TABLE b (k STRING)"))
    assert (keyed.changelog_mode, plain.changelog_mode) == ("upsert", "append")
