"""The parser-free reading of the usual INSERT INTO ... SELECT gives what the parser gives, or declines.

The expected analysis always comes from the parser path (parse_one_statement, analyze_dml): the fast reading
must equal it (the state reasons as a set: only their order may differ), or return None so the parser reads
the file. The inventory report built this way is the same bytes as the one built with the parser.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlglot import exp

from shift_left_dagster.project import plain_dml
from shift_left_dagster.project.analysis import analyze_dml
from shift_left_dagster.project.facts import DmlInfo
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import analyse_file, build_inventory
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement
from shift_left_dagster.project.plain_dml import read_plain_dml
from shift_left_dagster.project.report import broken_report, inventory_report
from shift_left_dagster.project.scan import cache_folder

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "flink_project" / "pipelines"
GENERATOR = REPO / "tools" / "gen_synth_project.py"


def comparable(info: DmlInfo) -> DmlInfo:
    return info.model_copy(update={"state_reasons": sorted(info.state_reasons)})


def parsed(text: str) -> DmlInfo:
    return comparable(analyze_dml(parse_one_statement(text)))


USUAL = [
    # a CTE named like a table shadows it; the same name with a database is the table
    "INSERT INTO t WITH src AS (SELECT a FROM raw) SELECT a FROM src",
    "INSERT INTO t WITH src AS (SELECT a FROM raw) SELECT s.a FROM src AS s JOIN db.src AS d ON s.a = d.a",
    "INSERT INTO t WITH a AS (SELECT x FROM r1), b AS (SELECT x FROM a) SELECT x FROM b",
    # comments and strings holding table names read nothing
    "-- INSERT INTO other SELECT * FROM hidden\nINSERT INTO t SELECT 'FROM secret' AS s, a FROM src -- JOIN x\n;",
    # quoted and qualified names
    "INSERT INTO `my-table` SELECT `select`, `a b` FROM `cat`.`db`.`weird.name`",
    "INSERT INTO db.t SELECT a FROM cat.db.src",
    # subqueries in FROM and JOIN (no state of their own), UNION ALL and UNION (distinct)
    "INSERT INTO t SELECT a FROM (SELECT a FROM s WHERE a > 0) AS q",
    "INSERT INTO t SELECT q.a FROM s AS p JOIN (SELECT a FROM r) AS q ON p.a = q.a",
    "INSERT INTO t SELECT a FROM s1 UNION ALL SELECT a FROM s2",
    "INSERT INTO t SELECT a FROM s1 UNION SELECT a FROM s2 UNION ALL SELECT a FROM s3",
    # temporal joins and every join kind
    "INSERT INTO t SELECT o.a, u.b FROM o JOIN u FOR SYSTEM_TIME AS OF o.`$rowtime` AS u ON o.k = u.k",
    "INSERT INTO t SELECT o.a FROM o LEFT JOIN u FOR SYSTEM_TIME AS OF o.ts AS u ON o.k = u.k",
    "INSERT INTO t SELECT a FROM o LEFT OUTER JOIN u ON o.k = u.k RIGHT JOIN v ON o.k = v.k FULL OUTER JOIN w "
    "ON o.k = w.k INNER JOIN x ON o.k = x.k CROSS JOIN y FULL JOIN z ON o.k = z.k",
    # state: aggregates, GROUP BY, DISTINCT, windows (and an aggregate under a window is no aggregate)
    "INSERT INTO t SELECT k, COUNT(*) AS n, SUM(v), MIN(v), MAX(v), AVG(v) FROM s GROUP BY k HAVING COUNT(*) > 1",
    "INSERT INTO t SELECT COUNT(DISTINCT k) AS n FROM s",
    "INSERT INTO t SELECT DISTINCT k FROM s",
    "INSERT INTO t SELECT k, SUM(v) OVER (PARTITION BY k ORDER BY ts) AS running FROM s",
    "INSERT INTO t WITH d AS (SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY `$rowtime` DESC, b ASC) AS rn "
    "FROM s) SELECT k FROM d WHERE rn = 1",
    "INSERT INTO t SELECT k, CAST(SUM(v) AS DECIMAL(16, 2)) AS total FROM s GROUP BY k",
    # expressions: CASE, CAST, EXTRACT, TRIM, IS [NOT] DISTINCT FROM, IN, BETWEEN, LIKE, NOT, arithmetic, ||
    "insert into t select case when a is not null then -a * 2 else a / 3 % 2 end as c, cast(b as string), "
    "extract(year from ts) as y, trim(both ' ' from s) as s2, trim(s) as s3 from src where a is distinct from 'x' "
    "and not b in (1, 2) and c not between 1 and 2.5 or d like 'a%' and e is true and f <> g || 'h'",
    "INSERT INTO t SELECT CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS w, COALESCE(a, b, 'z'), "
    "CONCAT(a, '-', b), UPPER(LOWER(a)), ABS(x), e.device.os FROM s AS e",
    # a function the parser does not know is an anonymous one, never an aggregate
    "INSERT INTO t SELECT DATE_FORMAT(ts, 'yyyy-MM-dd') AS d, MY_UDF() AS u, MY_AGG(v) AS w FROM s",
    "INSERT INTO t (a, b) SELECT a, b FROM s;",
    "INSERT INTO t SELECT * FROM s",
]

UNUSUAL = [
    "INSERT INTO t SELECT a FROM s WHERE a IN (SELECT a FROM r)",  # a subquery in an expression
    "INSERT INTO t SELECT (SELECT MAX(a) FROM r) AS m FROM s",
    "INSERT INTO t SELECT a FROM s WHERE EXISTS (SELECT 1 FROM r)",
    "INSERT INTO t SELECT p.a, i.x FROM p CROSS JOIN UNNEST(p.items) AS i(x)",  # UNNEST, LATERAL, table functions
    "INSERT INTO t SELECT a FROM p, LATERAL TABLE(split(p.s)) AS x(a)",
    "INSERT INTO t SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' HOUR)) "
    "GROUP BY window_start",
    "INSERT INTO t SELECT a FROM s /*+ OPTIONS('scan.startup.mode'='earliest-offset') */",  # a hint, a comment block
    "INSERT INTO t /* a comment */ SELECT a FROM s",
    "INSERT INTO t SELECT date FROM s",  # a keyword as a bare name
    "INSERT INTO t SELECT a FROM s x",  # an alias without AS
    "INSERT INTO t SELECT a FROM s ORDER BY a",
    "INSERT INTO t SELECT a FROM s1 INTERSECT SELECT a FROM s2",
    "INSERT INTO t SELECT UPPER(a, b) FROM s",  # a known function with arguments it does not take
    "INSERT INTO t SELECT ROUND(a, 2) FROM s",  # a known function this reader does not list
    "INSERT INTO t SELECT ROW_NUMBER() FROM s",
    "INSERT INTO t SELECT COUNT(*) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM s",
    "INSERT INTO t SELECT a FROM s WHERE a = 'it''s'",  # an escaped quote
    "INSERT INTO t SELECT $rowtime FROM s",
    "INSERT INTO t SELECT m['k'] FROM s",
    "INSERT INTO t SELECT a FROM s; INSERT INTO u SELECT a FROM s",  # two statements, broken ones
    "INSERT INTO t SELECT FROM s",
    "INSERT INTO t SELECT a FROM",
    "INSERT INTO t SELECT a, FROM s",
    "INSERT INTO t SELECT CASE WHEN a THEN 1 FROM s",
    "INSERT INTO t SELECT a FROM s WHERE",
    "INSERT INTO t SELECT a FROM s LEFT t2 ON s.a = t2.a",
    "INSERT INTO t SELECT CAST(a AS MYTYPE) FROM s",
    "INSERT INTO t SELECT 1e5 FROM s",
    "INSERT OVERWRITE t SELECT a FROM s",
    "EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT a FROM s; END",
    "",
    "-- only a comment",
]


@pytest.mark.parametrize("text", USUAL)
def test_the_usual_shape_reads_as_the_parser_reads_it(text):
    fast = read_plain_dml(text)
    assert fast is not None
    assert comparable(fast) == parsed(text)


@pytest.mark.parametrize("text", UNUSUAL)
def test_anything_else_goes_to_the_parser(text):
    assert read_plain_dml(text) is None


def test_what_it_takes_for_a_function_type_or_unit_is_what_the_parser_takes():
    """The reader's own lists, checked against the parser: each known function at its fewest and most
    arguments parses, is an aggregate exactly when the parser's class is one (which decides the state), and
    is written back under that name in a window's reason; every type and EXTRACT unit parses."""
    for name, (fewest, most, aggregate) in plain_dml._FUNCTIONS.items():
        for count in {fewest, most if most is not None else fewest + 3}:
            arguments = ", ".join(f"c{i}" for i in range(count))
            select = parse_one_statement(f"INSERT INTO t SELECT {name}({arguments}) FROM s").tree.expression
            function = select.expressions[0]
            assert isinstance(function, exp.AggFunc) == aggregate, name
            if aggregate:
                assert function.sql_name() == name
    for type_name in plain_dml._TYPES:
        parse_one_statement(f"INSERT INTO t SELECT CAST(a AS {type_name}) FROM s")
    for unit in plain_dml._UNITS:
        parse_one_statement(f"INSERT INTO t SELECT EXTRACT({unit} FROM ts) FROM s")


def test_every_dml_of_the_sample_and_of_a_synthetic_project(tmp_path):
    """The files the benchmarks and the sample read: every one the fast reading accepts is read as the parser
    reads it, and the synthetic project's (shift_left's shape) are all accepted."""
    subprocess.run([sys.executable, str(GENERATOR), "--tables", "600", "--out", str(tmp_path), "--seed", "7"],
                   check=True, capture_output=True)
    synthetic = sorted((tmp_path / "pipelines").rglob("dml.*.sql"))
    sample = sorted(SAMPLE.rglob("dml.*.sql"))
    assert len(synthetic) == 600 and len(sample) > 20
    for path in synthetic:
        fast = read_plain_dml(path.read_text())
        assert fast is not None and comparable(fast) == parsed(path.read_text()), path
    accepted = [p for p in sample if read_plain_dml(p.read_text()) is not None]
    assert len(accepted) >= len(sample) - 4  # a table function, UNNEST, a map subscript, a bare $rowtime
    for path in accepted:
        assert comparable(read_plain_dml(path.read_text())) == parsed(path.read_text()), path


@pytest.mark.parametrize("text", ["INSERT INTO t SELECT a FROM", "INSERT INTO t SELECT a FROM s WHERE a IN (SELECT"])
def test_a_broken_dml_is_still_named_by_the_parser(text):
    with pytest.raises(FlinkSqlError) as raised:
        analyse_file("pipelines/facts/p/t/sql-scripts/dml.t.sql", "-- first line\n" + text, sql=False)
    assert str(raised.value).startswith("pipelines/facts/p/t/sql-scripts/dml.t.sql:")


def report(inventory) -> str:
    graph = ProjectGraph(inventory)
    return json.dumps([inventory_report(graph), broken_report(graph)])


def test_the_inventory_without_sql_reports_what_the_full_one_reports_and_keeps_nothing_else(tmp_path, monkeypatch):
    """`build_inventory(sql=False)` (the inventory command's): the report's same bytes on the sample (a broken
    file included) and a synthetic project; tables without code versions; no analysis nor inventory kept (they
    would lack the SQL) but the scan, and a full build after it has every code version."""
    monkeypatch.delenv("SHIFT_LEFT_DAGSTER_CACHE", raising=False)  # each project's cache beside it, new
    subprocess.run([sys.executable, str(GENERATOR), "--tables", "200", "--out", str(tmp_path / "synth")],
                   check=True, capture_output=True)
    project = tmp_path / "sample"
    shutil.copytree(SAMPLE.parent, project, ignore=shutil.ignore_patterns(".shift_left_dagster"))
    (project / "pipelines/views/p2/v_p/sql-scripts/dml.v_p.sql").write_text("INSERT INTO v_p SELECT a FROM")
    for pipelines in (tmp_path / "synth" / "pipelines", project / "pipelines"):
        light = build_inventory(pipelines, strict=False, sql=False)
        assert light.tables and all(t.code_version is None for t in light.tables.values() if t.dml_path)
        folder = cache_folder(pipelines.parent)
        assert sorted(p.name for p in folder.iterdir()) == ["last_scan.marshal"]
        full = build_inventory(pipelines, strict=False)
        assert all(t.code_version for t in full.tables.values())
        assert report(light) == report(full) == report(build_inventory(pipelines, strict=False, use_cache=False))
        assert build_inventory(pipelines, strict=False, sql=False) == full  # the full one, kept, serves it too


WORD = re.compile(r"`[^`]*`|'[^']*'|\w+|\S")
PIECES = ["(", ")", ",", ".", "*", "-", "=", ";", "1", "'s'", "x", "AND", "OR", "NOT", "SELECT", "FROM", "JOIN",
          "LEFT", "ON", "AS", "WHERE", "GROUP", "BY", "IS", "NULL", "CASE", "WHEN", "THEN", "END", "UNION", "ALL",
          "WITH", "DISTINCT", "IN", "BETWEEN", "LIKE", "OVER", "COUNT"]


def test_whatever_it_accepts_of_damaged_statements_the_parser_reads_the_same_way():
    """One rule, so the fast reading must never accept what the parser rejects, nor read it otherwise: the usual
    statements damaged a word at a time (deleted, inserted, replaced, swapped; a fixed seed), and each one the
    fast reading accepts is parsed."""
    rng = random.Random(27)
    accepted = 0
    for _ in range(3000):
        words = WORD.findall(rng.choice(USUAL))
        for _ in range(rng.choice([1, 1, 2])):
            at, choice = rng.randrange(len(words)), rng.random()
            if choice < 0.4:
                del words[at]
            elif choice < 0.7:
                words.insert(at, rng.choice(PIECES))
            elif choice < 0.85:
                words[at] = rng.choice(PIECES)
            else:
                other = rng.randrange(len(words))
                words[at], words[other] = words[other], words[at]
        text = " ".join(words)
        fast = read_plain_dml(text)
        if fast is not None:
            accepted += 1
            assert comparable(fast) == parsed(text), text
    assert accepted > 50
