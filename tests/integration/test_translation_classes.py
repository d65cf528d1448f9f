"""Issue 13's failure classes through the service, and issue 11's order and changelog semantics.

Expected results are computed here in plain Python from the input rows and
from Flink's documented behaviour (function examples, ChangelogNormalize).
"""

from __future__ import annotations

import hashlib
import time

import pytest
from pyspark.sql import functions as F

from shift_left_dagster.confluent.errors import StatementFailed
from shift_left_dagster.local.catalog import OFFSET, OP, PARTITION, TableId, resolve
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.translation.functions import FUNCTIONS
from tests.integration.support import client_for, quiesce, run, select, unique

pytestmark = pytest.mark.service
INS, UB, UA, D = 0, 1, 2, 3


def failed_at_creation(client, sql: str) -> str:  # type: ignore[no-untyped-def]
    """Create a statement, follow its phases, and return its detail; it must never be RUNNING."""
    name = unique("tc-fails")
    client.create_statement(name, sql)
    phases = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = client.get_statement(name).status
        phases.append(status.phase)
        if status.phase in ("FAILED", "COMPLETED", "STOPPED"):
            break
        time.sleep(0.02)
    assert phases[-1] == "FAILED" and "RUNNING" not in phases, phases
    return client.get_statement(name).status.detail or ""


def log(service, table: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    """A table's records as stored (the Kafka topic): (partition, offset, op, *columns)."""
    engine = service.engine
    definition = engine.store.table(resolve_name(table))
    stored = [c.name for c in definition.stored_columns]
    rows = engine.logs.read(definition).orderBy(F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`")).collect()
    return [(r[PARTITION], r[OFFSET], r[OP], *[r[c] for c in stored]) for r in rows]


def resolve_name(table: str) -> TableId:
    from sqlglot import exp

    return resolve(exp.to_table(table), {})


@pytest.fixture(scope="module")
def client(local_service):  # type: ignore[no-untyped-def]
    client = client_for(local_service.url)
    run(client, unique("tc-ddl"), "CREATE TABLE tc_events (k STRING, v INT, payload STRING, "
                                  "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') DISTRIBUTED INTO 1 BUCKETS")
    values = ", ".join(f"('{k}', {v}, '{{\"ts\": \"{ts}\", \"o\": {{\"b\": \"{b}\"}}}}', TIMESTAMP '{ts}')"
                       for k, v, ts, b in EVENTS)
    run(client, unique("tc-ins"), f"INSERT INTO tc_events VALUES {values}")
    return client


EVENTS = [
    ("a", 1, "2026-01-01 10:00:00", "x"), ("a", 2, "2026-01-01 11:00:00", "y"), ("b", 3, "2026-01-02 00:00:00", "z"),
]


# --- A1, A2, A3 through the service -------------------------------------------------------------------


def test_dedup_idiom_select_star_over_an_unaliased_derived_table(local_service, client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_last (k STRING, v INT, payload STRING, ts TIMESTAMP_LTZ(3), "
                                  "rn BIGINT, PRIMARY KEY (k) NOT ENFORCED) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tc-dedup"), "INSERT INTO tc_last SELECT * FROM (SELECT k, v, payload, ts, ROW_NUMBER() OVER "
        "(PARTITION BY k ORDER BY $rowtime DESC) AS rn FROM tc_events) WHERE rn = 1", "RUNNING")
    quiesce(local_service.url)
    last = {k: v for k, v, _ts, _b in sorted(EVENTS, key=lambda e: e[2])}  # the latest $rowtime per key
    expected = sorted(((k, str(v), "1") for k, v in last.items()), key=repr)
    assert select(client, "SELECT k, v, rn FROM tc_last") == expected


def test_nested_calls_are_translated(client):  # type: ignore[no-untyped-def]
    rows = select(client, "SELECT TO_TIMESTAMP(JSON_VALUE(payload, '$.ts')), ROW(JSON_VALUE(payload, '$.o.b'), v), "
                          "JSON_VALUE(JSON_QUERY(payload, '$.o'), '$.b') FROM tc_events")
    assert rows == sorted(((f"{ts}.000", (b, str(v)), b) for _k, v, ts, b in EVENTS), key=repr)


def test_state_ttl_hint_is_ignored_with_a_note(local_service, client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_ttl (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
    name = unique("tc-ttl")
    statement = run(client, name, "INSERT INTO tc_ttl\nSELECT /*+ STATE_TTL('tc_events'='1d') */ k, COUNT(*) "
                                  "FROM tc_events GROUP BY k", "RUNNING")
    assert "STATE_TTL" in (statement.status.detail or "") and "line 2" in statement.status.detail
    quiesce(local_service.url)
    counts: dict[str, int] = {}
    for k, *_ in EVENTS:
        counts[k] = counts.get(k, 0) + 1
    assert select(client, "SELECT * FROM tc_ttl") == sorted(((k, str(n)) for k, n in counts.items()), key=repr)


# --- A4: Flink's documented examples give Flink's answers ------------------------------------------------


def java_hash(text: str) -> int:
    h = 0
    for char in text:
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize(("expression", "value"), [
    ("HASH_CODE('foo')", str(java_hash("foo"))),
    ("HASH_CODE('Flink SQL')", str(java_hash("Flink SQL"))),
    ("SPLIT_INDEX('a,b,c', ',', 1)", "b"),
    ("SPLIT_INDEX('a,b,c', ',', 5)", None),
    ("REGEXP_EXTRACT('foothebar', 'foo(.*?)(bar)', 2)", "bar"),
    ("REGEXP_EXTRACT('foothebar', 'the')", "the"),
    ("CONCAT_WS('~', 'AA', CAST(NULL AS STRING), 'BB', '', 'CC')", "AA~BB~~CC"),
    ("LPAD('hi', 4, '??')", "??hi"),
    ("RPAD('hi', 1, '??')", "h"),
    ("TRUNCATE(42.324, 2)", "42.32"),
    ("FROM_BASE64('aGVsbG8gd29ybGQ=')", "hello world"),
    ("PARSE_URL('http://facebook.com/path1/p.php?k1=v1&k2=v2#Ref1', 'QUERY', 'k1')", "v1"),
    ("SHA256('string-to-hash')", hashlib.sha256(b"string-to-hash").hexdigest()),
    ("SHA512('x')", hashlib.sha512(b"x").hexdigest()),
    ("CARDINALITY(ARRAY[1, 2, 3])", "3"),
    ("ELEMENT(ARRAY['x'])", "x"),
    ("IS_DIGIT('123')", "TRUE"),
    ("IS_ALPHA('ab1')", "FALSE"),
    ("IS_DECIMAL('1.5')", "TRUE"),
    ("REGEXP('abc', 'b')", "TRUE"),
    ("CONVERT_TZ('1970-01-01 00:00:00', 'UTC', 'America/Los_Angeles')", "1969-12-31 16:00:00"),
    ("JSON_OBJECT('K1' VALUE 'V1', 'K2' VALUE 'V2')", '{"K1":"V1","K2":"V2"}'),
    ("JSON_STRING(ARRAY[1, 2])", "[1,2]"),
    ("JSON_STRING('Hello, World!')", '"Hello, World!"'),
    ("DECODE(ENCODE('hello', 'UTF-8'), 'UTF-8')", "hello"),
    ("CHR(97)", "a"),
    ("INSTR('hello', 'l')", "3"),
    ("LOCATE('l', 'hello')", "3"),
    ("DAYOFWEEK(DATE '1994-09-27')", "3"),
    ("WEEK(DATE '1994-09-27')", "39"),
    ("FROM_UNIXTIME(44)", "1970-01-01 00:00:44"),
    ("TO_DATE('2026-01-02')", "2026-01-02"),
    ("IFNULL(CAST(NULL AS INT), 5)", "5"),
    ("TIMESTAMPADD(HOUR, 2, TIMESTAMP '2026-01-01 00:00:00')", "2026-01-01 02:00:00.000"),
    ("ARRAY_SLICE(ARRAY[1, 2, 3, 4], 2, 3)", ("2", "3")),
    ("MAP_UNION(MAP['a', 1], MAP['a', 2, 'b', 3])", (("a", "2"), ("b", "3"))),
    ("NOW() IS NOT NULL", "TRUE"),
])
def test_flink_documented_examples(client, expression: str, value):  # type: ignore[no-untyped-def]
    assert select(client, f"SELECT {expression}") == [(value,)]


def test_functions_the_table_passes_through_exist_in_spark(spark):  # type: ignore[no-untyped-def]
    passed = [fn.spark or name for name, fn in FUNCTIONS.items()
              if not fn.native and not fn.unsupported and fn.build is None]
    missing = [name for name in passed if not spark.catalog.functionExists(name.lower())]
    assert not missing


# --- A5: DDL ---------------------------------------------------------------------------------------------


def test_metadata_keys_confluent_documents(client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_meta (k STRING, v INT, "
        "rv BYTES METADATA FROM 'raw-value' VIRTUAL, rk BYTES METADATA FROM 'raw-key' VIRTUAL, "
        "tp STRING METADATA FROM 'topic' VIRTUAL, tt STRING METADATA FROM 'timestamp-type' VIRTUAL, "
        "le INT METADATA FROM 'leader-epoch' VIRTUAL, h MAP<STRING, BYTES> METADATA FROM 'headers' VIRTUAL, "
        "PRIMARY KEY (k) NOT ENFORCED) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tc-ins"), "INSERT INTO tc_meta VALUES ('a', 1)")
    rows = select(client, "SELECT CAST(rv AS STRING), CAST(rk AS STRING), tp, tt, le, CARDINALITY(h) FROM tc_meta")
    assert rows == [('{"k":"a","v":1}', '{"k":"a"}', "tc_meta", "CreateTime", "0", "0")]


def test_create_table_like(client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_base (k STRING, v INT, c AS v * 2, "
        "ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', PRIMARY KEY (k) NOT ENFORCED) "
        "DISTRIBUTED BY HASH(k) INTO 2 BUCKETS WITH ('changelog.mode' = 'upsert', 'kafka.retention.time' = '0')")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_like_all LIKE tc_base")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_like_none (extra STRING) LIKE tc_base (EXCLUDING ALL)")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_like_opts (extra STRING) WITH ('changelog.mode' = 'append') "
                                  "LIKE tc_base (EXCLUDING CONSTRAINTS OVERWRITING OPTIONS)")
    run(client, unique("tc-ins"), "INSERT INTO tc_like_all (k, v, ts) VALUES ('a', 2, TIMESTAMP '2026-01-01 00:00:00')")
    assert select(client, "SELECT * FROM tc_like_all") == [("a", "2", "4", "2026-01-01 00:00:00.000")]
    run(client, unique("tc-ins"), "INSERT INTO tc_like_none VALUES ('a', 2, 'e')")
    assert select(client, "SELECT * FROM tc_like_none") == [("a", "2", "e")]
    run(client, unique("tc-ins"), "INSERT INTO tc_like_opts (k, v, extra) VALUES ('a', 2, 'e'), ('a', 3, 'f')")
    assert len(select(client, "SELECT k FROM tc_like_opts")) == 2  # no key: append, both rows kept
    detail = failed_at_creation(client, "CREATE TABLE tc_like_bad (k STRING) LIKE tc_base")
    assert "A column named 'k' already exists in the base table." in detail


def test_multiset_columns(client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_bag (k STRING, tags MULTISET<STRING>)")
    run(client, unique("tc-ins"), "INSERT INTO tc_bag VALUES ('a', CAST(NULL AS MULTISET<STRING>))")
    assert select(client, "SELECT k, tags FROM tc_bag") == [("a", None)]


def test_create_catalog_parses_and_fails_saying_why(client):  # type: ignore[no-untyped-def]
    detail = failed_at_creation(client, "CREATE CATALOG my_catalog WITH ('type' = 'generic_in_memory')")
    assert detail.startswith("CREATE CATALOG is not supported") and "parse" not in detail


# --- A6: failing at creation, in Flink's words -----------------------------------------------------------


@pytest.mark.parametrize(("sql", "words", "line"), [
    ("INSERT INTO tc_events\nSELECT k,\n  no_such_column, payload\nFROM tc_events",
     "Column 'no_such_column' not found", 3),
    ("INSERT INTO tc_events\nSELECT k, ARRAY[v], payload, ts FROM tc_events", "", 0),
])
def test_a_statement_spark_can_not_run_fails_at_creation(client, sql: str, words: str, line: int):  # type: ignore[no-untyped-def]
    detail = failed_at_creation(client, sql)
    assert words in detail and (not line or detail.startswith(f"line {line}:")), detail
    for leak in ("SQLSTATE", "__sl_", "sl_", "[UNRESOLVED", "[DATATYPE"):
        assert leak not in detail, detail


@pytest.mark.parametrize(("options", "words"), [
    ("'no.such.option' = 'x'", "Unsupported options found for 'confluent'"),
    ("'changelog.mode' = 'upserts'", "Invalid value for option 'changelog.mode'"),
])
def test_invalid_table_options_are_rejected_at_create(client, options: str, words: str):  # type: ignore[no-untyped-def]
    """Source options ('scan.*') are checked when read: test_source_options.py."""
    detail = failed_at_creation(client, f"CREATE TABLE tc_bad_{unique('o').replace('-', '_')} (a INT) WITH ({options})")
    assert words in detail, detail


# --- B(a): a stateless job keeps its input order ----------------------------------------------------------


def test_stateless_output_keeps_source_offset_order(local_service, client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_src_order (n INT, k STRING) DISTRIBUTED INTO 1 BUCKETS")
    batches = [[1], list(range(2, 12)), list(range(12, 200))]  # growing batches: Spark reads big files first
    for batch in batches:
        values = ", ".join(f"({n}, 'k{n % 3}')" for n in batch)
        run(client, unique("tc-ins"), f"INSERT INTO tc_src_order VALUES {values}")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_out_order (n INT, k STRING) DISTRIBUTED INTO 1 BUCKETS")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_out_keyed (n INT, k STRING) DISTRIBUTED BY HASH(k) INTO 3 BUCKETS")
    run(client, unique("tc-order"), "INSERT INTO tc_out_order SELECT n, k FROM tc_src_order WHERE n % 2 = 1", "RUNNING")
    run(client, unique("tc-order"), "INSERT INTO tc_out_keyed SELECT n, k FROM tc_src_order", "RUNNING")
    quiesce(local_service.url)
    source = [n for batch in batches for n in batch]
    assert [r[3] for r in log(local_service, "tc_out_order")] == [n for n in source if n % 2 == 1]
    keyed = log(local_service, "tc_out_keyed")
    for key in ("k0", "k1", "k2"):
        assert [r[3] for r in keyed if r[4] == key] == [n for n in source if f"k{n % 3}" == key]


# --- B(b): a stateless job over an upsert table writes what Flink would write -----------------------------


def normalize(records: list[tuple[str, int]]) -> list[tuple[int, tuple[str, int]]]:
    """Flink's ChangelogNormalize over upsert records (key, value), in order."""
    kept: dict[str, tuple[str, int]] = {}
    out: list[tuple[int, tuple[str, int]]] = []
    for key, value in records:
        row = (key, value)
        if key not in kept:
            out.append((INS, row))
        elif kept[key] != row:
            out += [(UB, kept[key]), (UA, row)]
        kept[key] = row
    return out


UPSERTS = [("a", 1), ("b", 2), ("a", 3), ("b", -1), ("c", 5), ("a", 3), ("b", 4)]


@pytest.fixture(scope="module")
def upserts(local_service, client):  # type: ignore[no-untyped-def]
    run(client, unique("tc-ddl"), "CREATE TABLE tc_up (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    for key, value in UPSERTS:  # one record per statement: each its own offset
        run(client, unique("tc-ins"), f"INSERT INTO tc_up VALUES ('{key}', {value})")
    return client


def test_projection_of_upsert_table_into_retract_sink_has_flinks_changelog(local_service, upserts):  # type: ignore[no-untyped-def]
    run(upserts, unique("tc-ddl"), "CREATE TABLE tc_retract (k STRING, v INT) DISTRIBUTED INTO 1 BUCKETS "
                                   "WITH ('changelog.mode' = 'retract')")
    run(upserts, unique("tc-norm"), "INSERT INTO tc_retract SELECT k, v FROM tc_up WHERE v > 0", "RUNNING")
    quiesce(local_service.url)
    want = [(kind, row) for kind, row in normalize(UPSERTS) if row[1] > 0]
    assert [(r[2], (r[3], r[4])) for r in log(local_service, "tc_retract")] == want
    assert D not in [r[2] for r in log(local_service, "tc_retract")]  # the source never deleted


def test_projection_of_upsert_table_into_upsert_sink_has_no_deletes(local_service, upserts):  # type: ignore[no-untyped-def]
    run(upserts, unique("tc-ddl"), "CREATE TABLE tc_upsert_sink (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) "
                                   "DISTRIBUTED INTO 1 BUCKETS")
    run(upserts, unique("tc-norm"), "INSERT INTO tc_upsert_sink SELECT k, v FROM tc_up", "RUNNING")
    quiesce(local_service.url)
    want = [(kind, row) for kind, row in normalize(UPSERTS) if kind != UB]  # no filter: no -U is generated
    assert [(r[2], (r[3], r[4])) for r in log(local_service, "tc_upsert_sink")] == want


def test_filtered_upsert_table_into_upsert_sink_writes_each_tombstone_before_its_update(local_service, client):  # type: ignore[no-untyped-def]
    """A filter makes Flink keep -U, which Kafka's upsert mode writes as a tombstone: the tombstone of a
    row goes before the update that replaces it, else the key would end deleted; a key that leaves the
    filter ends deleted, in the sink and in what a check expects of it."""
    records = [*UPSERTS, ("c", -2)]  # 'b' leaves the filter and comes back, 'c' leaves it for good
    run(client, unique("tc-ddl"), "CREATE TABLE tc_up_filtered (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    for key, value in records:
        run(client, unique("tc-ins"), f"INSERT INTO tc_up_filtered VALUES ('{key}', {value})")
    run(client, unique("tc-ddl"), "CREATE TABLE tc_upsert_filtered (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) "
                                  "DISTRIBUTED INTO 1 BUCKETS")
    statement, sql = unique("tc-norm"), "INSERT INTO tc_upsert_filtered SELECT k, v FROM tc_up_filtered WHERE v > 0"
    run(client, statement, sql, "RUNNING")
    quiesce(local_service.url)
    want = [(D if kind == UB else kind, row) for kind, row in normalize(records) if row[1] > 0]
    assert [(r[2], (r[3], r[4])) for r in log(local_service, "tc_upsert_filtered")] == want
    latest = {key: value for key, value in records}
    held = sorted((k, v) for k, v in latest.items() if v > 0)
    assert select(client, "SELECT k, v FROM tc_upsert_filtered") == [(k, str(v)) for k, v in held]  # numbers as text
    data = LocalData(local_service.data_dir, local_service.engine.jobs.spark)
    try:
        with data.snapshot():
            expected = data.expected_rows(statement, sql, {}, "tc_upsert_filtered").collect()
    finally:
        data.close()
    assert sorted((r["k"], r["v"]) for r in expected) == held


def test_upsert_table_into_append_sink_is_refused_as_flink_does(upserts):  # type: ignore[no-untyped-def]
    run(upserts, unique("tc-ddl"), "CREATE TABLE tc_append_sink (k STRING, v INT)")
    detail = failed_at_creation(upserts, "INSERT INTO tc_append_sink SELECT k, v FROM tc_up")
    assert "doesn't support consuming update and delete changes" in detail and "ChangelogNormalize" in detail


def test_failed_statements_raise(upserts):  # type: ignore[no-untyped-def]
    with pytest.raises(StatementFailed):
        run(upserts, unique("tc-x"), "INSERT INTO tc_append_sink SELECT k, v FROM tc_up", "RUNNING")
