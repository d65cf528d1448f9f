"""The parser-free reading of the usual CREATE TABLE gives what the parser gives, or declines.

The expected analysis and normalised SQL always come from the parser path (parse_one_statement, analyze_ddl,
to_flink_sql); the fast reading must equal them exactly (the normalised SQL is what is deployed and what
code versions hash), or return None so the parser reads the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shift_left_dagster.project.analysis import analyze_ddl
from shift_left_dagster.project.inventory import analyse_file
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement, to_flink_sql
from shift_left_dagster.project.plain_ddl import read_plain_ddl

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "tools" / "gen_synth_project.py"


def parsed(text: str) -> tuple:
    statement = parse_one_statement(text)
    return analyze_ddl(statement), to_flink_sql(statement.tree, comments=False, copy=False)


USUAL = [
    # the synthetic generator's and shift_left's shape, with comments and odd layout
    """-- a source
CREATE TABLE IF NOT EXISTS src_a (
  tenant_id STRING NOT NULL,  -- the tenant
  amount DECIMAL(18,2),
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(tenant_id) NOT ENFORCED
) DISTRIBUTED BY HASH(tenant_id) INTO 6 BUCKETS
WITH ('changelog.mode' = 'upsert', 'key.format' = 'avro-registry');
-- trailing words
""",
    "create table t (a int, b string not null) with ('k'='v')",
    "CREATE TABLE `Quoted Name` (`select` STRING, b BIGINT COMMENT 'the b', PRIMARY KEY (`select`, b) NOT ENFORCED)",
    "CREATE TABLE t (a INT COMMENT 'x' NOT NULL, b ARRAY<STRING>, c MAP<STRING, INT>, d ROW<x INT, y STRING>)",
    "CREATE TABLE t (a INT) DISTRIBUTED BY (a) INTO 3 BUCKETS",
    "CREATE TABLE t (a INT) DISTRIBUTED INTO 3 BUCKETS",
    "CREATE TABLE t (a INT) DISTRIBUTED BY HASH(a)",
    "CREATE TABLE t (a INT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', o BIGINT METADATA VIRTUAL) WITH ('a'='')",
    "CREATE TABLE t (a INTEGER, b VARCHAR(10), c CHAR(2), d DOUBLE, e BYTES, f DATE, g TIMESTAMP(3), h BOOLEAN)",
    "CREATE TABLE t (a INT) WITH ('changelog.mode' = 'append', 'changelog.mode' = 'retract')",
    "CREATE TABLE t (a INT, session STRING, name STRING, type STRING)",
    "CREATE TABLE t (ts TIMESTAMP(3) WITH LOCAL TIME ZONE)",  # the type's words: the parser writes them
    "CREATE TABLE t (a INT) -- a comment, then words: select 1",
]

UNUSUAL = [
    "CREATE TABLE t (a INT, b AS a + 1)",  # computed column
    "CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
    "CREATE TABLE t (a INT) WITH ('k' = 'it''s')",  # an escaped quote
    "CREATE TABLE t (a INT) WITH ('k' = 'back\\\\slash')",
    "CREATE TABLE db.t (a INT)",
    "CREATE TABLE t (a INT) /* a comment */",
    "CREATE TABLE t (a INT) PARTITIONED BY (a)",
    "CREATE TABLE t (a INT) COMMENT 'table comment'",
    "CREATE TABLE t (a INT, PRIMARY KEY (a))",  # no NOT ENFORCED: the parser says what Flink needs
    "CREATE TABLE t (date DATE)",  # a keyword as a bare name
    "CREATE TABLE t AS SELECT * FROM s",
    "CREATE TABLE t (a INT) DISTRIBUTED BY HASH(a) INTO 012 BUCKETS",
    "CREATE TABLE t (a INT); CREATE TABLE u (b INT)",
    "CREATE TABLE t (a INT,)",
    "CREATE TABLE t (a)",
    "CREATE TABLE t ()",
    "CREATE TABLE t (a INT NOT NULL NOT NULL)",
    "CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED)",  # constraints the type's words would swallow
    "CREATE TABLE t (a INT DEFAULT 1)",
    "CREATE TABLE t (a INT NULL)",
    "CREATE TABLE t (a INT) -- a comment\n words after it",
    "",
    "-- only a comment",
]


@pytest.mark.parametrize("text", USUAL)
def test_the_usual_shape_reads_as_the_parser_reads_it(text):
    assert read_plain_ddl(text) == parsed(text)


@pytest.mark.parametrize("text", UNUSUAL)
def test_anything_else_goes_to_the_parser(text):
    assert read_plain_ddl(text) is None


def test_every_ddl_of_the_sample_and_of_a_synthetic_project(tmp_path):
    """The files the benchmarks and the sample read: every one the fast reading accepts is read exactly as the
    parser reads it, and the synthetic project's (shift_left's shape) are all accepted."""
    subprocess.run([sys.executable, str(GENERATOR), "--tables", "300", "--out", str(tmp_path), "--seed", "5"],
                   check=True, capture_output=True)
    synthetic = sorted((tmp_path / "pipelines").rglob("ddl.*.sql"))
    sample = sorted((REPO / "flink_project" / "pipelines").rglob("ddl.*.sql"))
    assert len(synthetic) == 300 and len(sample) > 10
    for path in synthetic:
        assert read_plain_ddl(path.read_text()) == parsed(path.read_text()), path
    accepted = [p for p in sample if read_plain_ddl(p.read_text()) is not None]
    assert len(accepted) >= len(sample) - 2  # a WATERMARK is the parser's
    for path in accepted:
        assert read_plain_ddl(path.read_text()) == parsed(path.read_text()), path


@pytest.mark.parametrize("text", ["CREATE TABLE t (a INT", "CREATE TABLE t (a INT) WITH ('k' = )"])
def test_a_broken_ddl_is_still_named_by_the_parser(text):
    with pytest.raises(FlinkSqlError) as raised:
        analyse_file("pipelines/sources/p/t/sql-scripts/ddl.t.sql", "-- first line\n" + text)
    assert str(raised.value).startswith("pipelines/sources/p/t/sql-scripts/ddl.t.sql:2: ")
