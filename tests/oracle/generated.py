"""Generated oracle cases: hypothesis strategies for typed tables, rows and Flink SQL queries.

Each drawn case is an ordinary corpus Case (corpus.py), so both engines run it exactly as the
corpus: tables, rows in two engine runs (`rows`, then `more_rows`), one INSERT into a sink whose
columns the query's types fit. The grammar is what the local engine claims to run, a first slice:

- a source table: a key STRING (never NULL: it may be a primary key), then 1-4 columns of INT,
  BIGINT, DOUBLE, DECIMAL(10, 2), STRING, BOOLEAN, DATE, TIMESTAMP(3); append, or upsert on the
  key (then keys repeat: a key updated several times); rows with NULLs;
- a stateless query: a projection of columns, arithmetic (`c + 1`, `c * 2`), CAST to STRING,
  COALESCE with a literal, UPPER/CHAR_LENGTH/CONCAT, CASE WHEN c IS NULL, under an optional WHERE
  (IS [NOT] NULL, a comparison with a literal, LIKE 'a%', AND/OR of two);
- a GROUP BY of the key with COUNT(*), COUNT(c), COUNT(DISTINCT c), SUM/MIN/MAX/AVG of numbers,
  MIN/MAX of strings, an optional HAVING COUNT(*) > n, into an upsert sink keyed by the key;
- an INNER or LEFT join of two such tables on the key (append sources; regular join, into a
  retract sink when it updates).

Each case records its class (`stateless`, `aggregate`, `join`) and the features it uses, which the
bench counts disagreements by.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from shift_left_dagster.project.parsing import parse_statements
from tests.oracle.compare import Verdict
from tests.oracle.corpus import Case, split_insert, table_spec

NUMBERS = ("INT", "BIGINT", "DOUBLE", "DECIMAL(10, 2)")
TYPES = (*NUMBERS, "STRING", "BOOLEAN", "DATE", "TIMESTAMP(3)")
_WITH = "DISTRIBUTED INTO 1 BUCKETS WITH ('changelog.mode' = '{mode}', 'value.format' = 'avro-registry')"
_KEYED = "DISTRIBUTED BY HASH(k) INTO 1 BUCKETS WITH ('changelog.mode' = '{mode}', 'value.format' = 'avro-registry')"


@dataclass
class Generated:
    """A drawn case and what it exercises."""

    case: Case
    kind: str  # stateless, aggregate, join
    features: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, Flink type) after the key k
    upsert: bool

    def ddl(self) -> str:
        columns = ",\n  ".join(["k STRING" + (" NOT NULL" if self.upsert else ""),
                                *(f"{n} {t}" for n, t in self.columns)])
        key = ",\n  PRIMARY KEY (k) NOT ENFORCED" if self.upsert else ""
        mode = "upsert" if self.upsert else "append"
        return f"CREATE TABLE {self.name} (\n  {columns}{key}\n) " + (_KEYED if self.upsert else _WITH).format(
            mode=mode)


def _value(kind: str) -> st.SearchStrategy[Any]:
    base: dict[str, st.SearchStrategy[Any]] = {
        "INT": st.integers(-1000, 1000), "BIGINT": st.integers(-10**12, 10**12),
        "DOUBLE": st.sampled_from([0.0, 1.5, -2.25, 3.0, 100.125]),
        "DECIMAL(10, 2)": st.sampled_from(["0.00", "1.50", "-2.25", "12345.67", "0.01"]),
        "STRING": st.sampled_from(["a", "ab", "b", "", "Zed", "a%b"]), "BOOLEAN": st.booleans(),
        "DATE": st.sampled_from(["2026-03-01", "2026-02-28", "2025-12-31"]),
        "TIMESTAMP(3)": st.sampled_from(["2026-03-01 10:00:00", "2026-03-01 09:59:59.999", "2026-03-02 00:00:00"]),
    }
    return st.one_of(st.none(), base[kind])


@st.composite
def tables(draw: st.DrawFn, name: str, *, upsert: bool | None = None) -> Table:
    width = draw(st.integers(1, 4))
    columns = tuple((f"c{i}", draw(st.sampled_from(TYPES))) for i in range(width))
    return Table(name=name, columns=columns, upsert=draw(st.booleans()) if upsert is None else upsert)


@st.composite
def rows(draw: st.DrawFn, table: Table) -> list[list[Any]]:
    keys = st.sampled_from(["k1", "k2", "k3"] if table.upsert else ["k1", "k2", "k3", "k4", "k5"])
    count = draw(st.integers(2, 8))
    return [[draw(keys), *(draw(_value(t)) for _, t in table.columns)] for _ in range(count)]


@st.composite
def _scalar(draw: st.DrawFn, table: Table) -> tuple[str, str, str]:
    """(expression, its Flink type, feature)."""
    name, kind = draw(st.sampled_from(table.columns))
    choices = [(name, kind, "column"), (f"CAST({name} AS STRING)", "STRING", f"cast:{kind}")]
    if kind in ("INT", "BIGINT", "DECIMAL(10, 2)", "DOUBLE"):
        plus = {"INT": "INT", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "DECIMAL(10, 2)": "DECIMAL(11, 2)"}[kind]
        choices += [(f"{name} + 1", plus, f"plus:{kind}"), (f"COALESCE({name}, 0)", kind if kind != "DECIMAL(10, 2)"
                                                              else "DECIMAL(10, 2)", f"coalesce:{kind}")]
    if kind == "STRING":
        choices += [(f"UPPER({name})", "STRING", "upper"), (f"CHAR_LENGTH({name})", "INT", "char_length"),
                    (f"CONCAT({name}, '-', k)", "STRING", "concat"),
                    (f"COALESCE({name}, 'none')", "STRING", "coalesce:STRING")]
    choices.append((f"CASE WHEN {name} IS NULL THEN 'null' ELSE 'set' END", "STRING", "case_null"))
    return draw(st.sampled_from(choices))


@st.composite
def _condition(draw: st.DrawFn, table: Table) -> tuple[str, str]:
    name, kind = draw(st.sampled_from(table.columns))
    options = [(f"{name} IS NULL", "is_null"), (f"{name} IS NOT NULL", "is_not_null")]
    if kind in NUMBERS:
        options.append((f"{name} > 0", f"compare:{kind}"))
    if kind == "STRING":
        options += [(f"{name} LIKE 'a%'", "like"), (f"{name} <> 'b'", "compare:STRING")]
    if kind == "BOOLEAN":
        options.append((f"{name} IS TRUE", "is_true"))
    first = draw(st.sampled_from(options))
    if draw(st.booleans()):
        return first
    second = draw(st.sampled_from(options))
    joiner = draw(st.sampled_from(["AND", "OR"]))
    return f"({first[0]}) {joiner} ({second[0]})", f"{first[1]}+{joiner.lower()}"


def _case(name: str, sources: list[Table], sink_columns: list[tuple[str, str]], dml: str, key: bool,
          sink_mode: str, data: dict[str, list[list[Any]]], split: int) -> Case:
    columns = ",\n  ".join(f"{n} {t}" for n, t in sink_columns)
    if key:
        sink = (f"CREATE TABLE {name}_sink (\n  {columns},\n  PRIMARY KEY (k) NOT ENFORCED\n) "
                + _KEYED.format(mode=sink_mode))
    else:
        sink = f"CREATE TABLE {name}_sink (\n  {columns}\n) " + _WITH.format(mode=sink_mode)
    ddls = [t.ddl() for t in sources] + [sink]
    specs = [table_spec(parse_statements(sql, f"{name}.sql")[0]) for sql in ddls]
    first = {t: r[:split] for t, r in data.items() if r[:split]}
    more = {t: r[split:] for t, r in data.items() if r[split:]}
    target, _columns, _query = split_insert(dml)
    return Case(name=name, about="generated", tables=specs, dml=dml, sink=target, rows=first, more_rows=more)


@st.composite
def stateless_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t"))
    data = draw(rows(table))
    projected = draw(st.lists(_scalar(table), min_size=1, max_size=4))
    where = draw(st.none() | _condition(table))
    select = ", ".join(["k", *(f"{e} AS o{i}" for i, (e, _, _) in enumerate(projected))])
    dml = f"INSERT INTO {name}_sink SELECT {select} FROM {table.name}" + (f" WHERE {where[0]}" if where else "")
    sink = [("k", "STRING" + (" NOT NULL" if table.upsert else "")),
            *((f"o{i}", t) for i, (_, t, _) in enumerate(projected))]
    features = [f for _, _, f in projected] + ([where[1]] if where else []) + [
        "upsert_source" if table.upsert else "append_source"]
    case = _case(name, [table], sink, dml, table.upsert, "upsert" if table.upsert else "append",
                 {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="stateless", features=features)


def _aggregates(table: Table) -> list[tuple[str, str, str]]:
    found = [("COUNT(*)", "BIGINT", "count_star")]
    for name, kind in table.columns:
        found += [(f"COUNT({name})", "BIGINT", "count"), (f"COUNT(DISTINCT {name})", "BIGINT", "count_distinct")]
        if kind in ("INT", "BIGINT", "DOUBLE"):
            found += [(f"SUM({name})", kind, f"sum:{kind}"), (f"MIN({name})", kind, f"min:{kind}"),
                      (f"MAX({name})", kind, f"max:{kind}")]
        if kind == "DECIMAL(10, 2)":
            found += [(f"SUM({name})", "DECIMAL(38, 2)", "sum:DECIMAL"), (f"MAX({name})", kind, "max:DECIMAL")]
        if kind == "STRING":
            found += [(f"MIN({name})", "STRING", "min:STRING"), (f"MAX({name})", "STRING", "max:STRING")]
    return found


@st.composite
def aggregate_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t"))
    data = draw(rows(table))
    chosen = draw(st.lists(st.sampled_from(_aggregates(table)), min_size=1, max_size=4))
    where = draw(st.none() | _condition(table))
    having = draw(st.none() | st.integers(0, 2))
    select = ", ".join(["k", *(f"{e} AS a{i}" for i, (e, _, _) in enumerate(chosen))])
    dml = (f"INSERT INTO {name}_sink SELECT {select} FROM {table.name}" + (f" WHERE {where[0]}" if where else "")
           + " GROUP BY k" + (f" HAVING COUNT(*) > {having}" if having is not None else ""))
    sink = [("k", "STRING NOT NULL"), *((f"a{i}", t) for i, (_, t, _) in enumerate(chosen))]
    features = [f for _, _, f in chosen] + ([where[1]] if where else []) + (["having"] if having is not None else []) \
        + ["upsert_source" if table.upsert else "append_source"]
    case = _case(name, [table], sink, dml, True, "upsert", {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="aggregate", features=features)


@st.composite
def join_cases(draw: st.DrawFn, name: str) -> Generated:
    left, right = draw(tables(f"{name}_l", upsert=False)), draw(tables(f"{name}_r", upsert=False))
    data = {left.name: draw(rows(left)), right.name: draw(rows(right))}
    kind = draw(st.sampled_from(["INNER", "LEFT"]))
    lc, lt = draw(st.sampled_from(left.columns))
    rc, rt = draw(st.sampled_from(right.columns))
    dml = (f"INSERT INTO {name}_sink SELECT l.k, l.{lc} AS lv, r.{rc} AS rv FROM {left.name} AS l "
           f"{kind} JOIN {right.name} AS r ON l.k = r.k")
    sink = [("k", "STRING"), ("lv", lt), ("rv", rt)]
    mode = "append" if kind == "INNER" else "retract"
    split = draw(st.integers(0, 6))
    case = _case(name, [left, right], sink, dml, False, mode, data, split)
    return Generated(case=case, kind="join", features=[f"join:{kind.lower()}"])


def cases(name: str) -> st.SearchStrategy[Generated]:
    return st.one_of(stateless_cases(name), aggregate_cases(name), join_cases(name))


def draw_cases(count: int, seed: int) -> list[Generated]:
    """`count` cases drawn with a fixed seed (the same cases on every run), no shrinking (both engines
    run all the cases in one batch each, as the corpus)."""
    found: list[Generated] = []

    # Hypothesis draws the simplest examples first: draw four times as many, keep a seeded sample.
    @settings(max_examples=4 * count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        found.append(data.draw(cases(f"g{seed}_{len(found)}")))

    collect()
    return random.Random(seed).sample(found, min(count, len(found)))


@dataclass
class Summary:
    tried: int = 0
    agree: int = 0
    unrun: int = 0  # cases either engine refused or failed (a grammar that draws bad SQL shows here)
    by_class: dict[str, int] = field(default_factory=dict)  # disagreements per kind and feature
    disagreeing: list[tuple[Generated, str]] = field(default_factory=list)


def summarize(generated: list[Generated], verdicts: dict[str, Verdict]) -> Summary:
    summary = Summary(tried=len(generated))
    for drawn in generated:
        verdict = verdicts[drawn.case.name]
        summary.unrun += verdict.flink_rows is None or verdict.local_rows is None
        if verdict.agree:
            summary.agree += 1
            continue
        summary.disagreeing.append((drawn, verdict.explain()))
        for label in [drawn.kind, *(f"{drawn.kind}/{f}" for f in sorted(set(drawn.features)))]:
            summary.by_class[label] = summary.by_class.get(label, 0) + 1
    return summary


def show_case(case: Case) -> str:
    """A drawn case as corpus YAML (a counterexample to keep as a fixed case)."""
    body = {"about": "generated counterexample", "tables": ";\n".join(t.ddl for t in case.tables) + ";\n",
            "dml": case.dml + ";\n", "rows": case.rows, "more_rows": case.more_rows}
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
