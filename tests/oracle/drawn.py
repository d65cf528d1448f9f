"""Drawn tables and rows for the generated oracle cases (hypothesis strategies), and their assembly
into corpus Cases.

A table is a key `k` STRING (never NULL when it is a primary key) and typed columns `c0..cn`, and,
when timed, an event-time attribute `ts` last: `$rowtime` (a TIMESTAMP_LTZ(3) METADATA FROM
'timestamp' column, the default watermark), a declared TIMESTAMP(3) with `WATERMARK FOR ts AS ts -
INTERVAL 'n' SECOND`, or a computed one (`ts AS TO_TIMESTAMP(ts_text)` with its watermark). Rows
have NULLs, keys repeated (updated several times in an upsert table), event times out of order and
tied; they are split into engine runs (`rows`, then `more_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from shift_left_dagster.project.parsing import parse_statements
from tests.oracle.corpus import Case, split_insert, table_spec

NUMBERS = ("INT", "BIGINT", "DOUBLE", "DECIMAL(10, 2)")
SCALARS = (*NUMBERS, "STRING", "BOOLEAN", "DATE", "TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", "DECIMAL(20, 4)")
# Nested types; a ROW whose fields are named like keywords (the harness quotes them).
NESTED = ("ARRAY<INT>", "ARRAY<STRING>", "MAP<STRING, INT>", "ROW<a INT, b STRING>",
          "ROW<`value` INT, `timestamp` STRING>")
JSON = "STRING /* json */"  # a STRING column holding JSON documents (and some that are not)
TYPES = (*SCALARS, *NESTED, JSON)
_BASE = datetime(2026, 3, 1, 10, 0, 0)
_WITH = "DISTRIBUTED INTO 1 BUCKETS WITH ('changelog.mode' = '{mode}', 'value.format' = 'avro-registry')"
_KEYED = ("DISTRIBUTED BY HASH({key}) INTO {buckets} BUCKETS WITH ('changelog.mode' = '{mode}', "
          "'value.format' = 'avro-registry')")


@dataclass
class Generated:
    """A drawn case and what it exercises."""

    case: Case
    kind: str  # the query class: stateless, aggregate, join, window, cascade, over, dedup, top_n, ...
    features: list[str] = field(default_factory=list)
    single_source: bool = True  # one source table: the local result must not depend on the run split


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, Flink type) after the key k
    upsert: bool
    time: str | None = None  # None, "rowtime", "declared" or "computed"
    delay_s: int = 0  # a declared or computed watermark's delay
    buckets: int = 1  # partitions (hashed by k when more than one): each run reads them one after another

    @property
    def time_column(self) -> str:
        """How a query names the time attribute."""
        return "`$rowtime`" if self.time == "rowtime" else "ts"

    @property
    def delay(self) -> str:
        """The watermark delay as an INTERVAL literal Flink accepts (SECOND has two digits by default:
        Flink refuses INTERVAL '600' SECOND, the local service runs it)."""
        if self.delay_s and self.delay_s % 60 == 0:
            return f"INTERVAL '{self.delay_s // 60}' MINUTE"
        return f"INTERVAL '{self.delay_s}' SECOND"

    def column_type(self, name: str) -> str:
        return dict(self.columns)[name]

    def ddl(self) -> str:
        lines = ["k STRING" + (" NOT NULL" if self.upsert else ""),
                 *(f"{n} {_ddl_type(t)}" for n, t in self.columns)]
        if self.time == "rowtime":
            lines.append("ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'")
        elif self.time == "declared":
            lines += ["ts TIMESTAMP(3)", f"WATERMARK FOR ts AS ts - {self.delay}"]
        elif self.time == "computed":
            lines += ["ts_text STRING", "ts AS TO_TIMESTAMP(ts_text)",
                      f"WATERMARK FOR ts AS ts - {self.delay}"]
        if self.upsert:
            lines.append("PRIMARY KEY (k) NOT ENFORCED")
        mode = "upsert" if self.upsert else "append"
        distribution = _KEYED.format(key="k", mode=mode, buckets=self.buckets) if self.upsert or self.buckets > 1 \
            else _WITH.format(mode=mode)
        return f"CREATE TABLE {self.name} (\n  " + ",\n  ".join(lines) + f"\n) {distribution}"


def _ddl_type(kind: str) -> str:
    return "STRING" if kind == JSON else kind


def sink_type(kind: str) -> str:
    return _ddl_type(kind)


_STRINGS = ["a", "ab", "b", "", "Zed", "a%b"]
_DOCS = ['{"a":1,"b":"x"}', '{"a":null,"b":"y"}', '{"a":{"c":true}}', "[1,2]", "not json", '{"b":"z","a":7}']


def value(kind: str) -> st.SearchStrategy[Any]:
    """A value of a column type, or NULL."""
    base: dict[str, st.SearchStrategy[Any]] = {
        "INT": st.integers(-1000, 1000), "BIGINT": st.integers(-10**12, 10**12),
        "DOUBLE": st.sampled_from([0.0, 1.5, -2.25, 3.0, 100.125]),
        "DECIMAL(10, 2)": st.sampled_from(["0.00", "1.50", "-2.25", "12345.67", "0.01"]),
        "DECIMAL(20, 4)": st.sampled_from(["0.0000", "123456789012.3456", "-0.0001", "7.5000"]),
        "STRING": st.sampled_from(_STRINGS), "BOOLEAN": st.booleans(),
        "DATE": st.sampled_from(["2026-03-01", "2026-02-28", "2025-12-31"]),
        "TIMESTAMP(3)": st.sampled_from(["2026-03-01 10:00:00", "2026-03-01 09:59:59.999", "2026-03-02 00:00:00"]),
        "TIMESTAMP_LTZ(3)": st.sampled_from(["2026-03-01 10:00:00", "2026-03-01 23:30:00.5", "2025-12-31 23:59:59"]),
        "ARRAY<INT>": st.lists(st.none() | st.integers(-5, 5), max_size=3),
        "ARRAY<STRING>": st.lists(st.none() | st.sampled_from(_STRINGS), max_size=3),
        "MAP<STRING, INT>": st.dictionaries(st.sampled_from(["a", "b", "c"]), st.none() | st.integers(0, 9),
                                            max_size=2),
        "ROW<a INT, b STRING>": st.fixed_dictionaries({"a": st.none() | st.integers(-5, 5),
                                                       "b": st.none() | st.sampled_from(_STRINGS)}),
        "ROW<`value` INT, `timestamp` STRING>": st.fixed_dictionaries(
            {"value": st.none() | st.integers(0, 9), "timestamp": st.none() | st.sampled_from(_STRINGS)}),
        JSON: st.sampled_from(_DOCS),
    }
    return st.one_of(st.none(), base[kind])


def event_time() -> st.SearchStrategy[str]:
    """An event time on a few minutes' grid around the base time: out of order and tied as drawn."""
    return st.sampled_from([0, 1, 4, 5, 9, 10, 12, 15, 19, 20, 24, 31, 45, 61, 75]).map(
        lambda minutes: (_BASE + timedelta(minutes=minutes)).isoformat(sep=" "))


@st.composite
def tables(draw: st.DrawFn, name: str, *, upsert: bool | None = None, time: bool = False,
           types: tuple[str, ...] = TYPES, width: tuple[int, int] = (1, 4), partitioned: bool = False) -> Table:
    """A table; `partitioned`: of one to three partitions (an append table with an event time)."""
    columns = tuple((f"c{i}", draw(st.sampled_from(types))) for i in range(draw(st.integers(*width))))
    kind = draw(st.sampled_from(["rowtime", "declared", "computed"])) if time else None
    return Table(name=name, columns=columns, upsert=draw(st.booleans()) if upsert is None else upsert,
                 time=kind, delay_s=draw(st.sampled_from([0, 0, 60])) if kind in ("declared", "computed") else 0,
                 buckets=draw(st.sampled_from([1, 2, 3])) if partitioned else 1)


@st.composite
def rows(draw: st.DrawFn, table: Table, *, count: tuple[int, int] = (2, 8)) -> list[list[Any]]:
    keys = st.sampled_from(["k1", "k2", "k3"] if table.upsert else ["k1", "k2", "k3", "k4", "k5"])
    drawn = []
    for _ in range(draw(st.integers(*count))):
        row = [draw(keys), *(draw(value(t)) for _, t in table.columns)]
        if table.time is not None:
            row.append(draw(event_time()))
        drawn.append(row)
    return drawn


def assemble(name: str, sources: list[Table], sink_columns: list[tuple[str, str]], dml: str, key: list[str],
             sink_mode: str, data: dict[str, list[list[Any]]], split: int) -> Case:
    """The case: the sources, a sink of `sink_columns` (primary key `key`, none when empty), the rows
    of each table split at `split` into the two engine runs."""
    lines = [f"{n} {t}" for n, t in sink_columns]
    if key:
        lines.append(f"PRIMARY KEY ({', '.join(key)}) NOT ENFORCED")
        distribution = _KEYED.format(key=", ".join(key), mode=sink_mode, buckets=1)
    else:
        distribution = _WITH.format(mode=sink_mode)
    sink = f"CREATE TABLE {name}_sink (\n  " + ",\n  ".join(lines) + f"\n) {distribution}"
    ddls = [t.ddl() for t in sources] + [sink]
    specs = [table_spec(parse_statements(sql, f"{name}.sql")[0]) for sql in ddls]
    first = {t: r[:split] for t, r in data.items() if r[:split]}
    more = {t: r[split:] for t, r in data.items() if r[split:]}
    target, _columns, _query = split_insert(dml)
    return Case(name=name, about="generated", tables=specs, dml=dml, sink=target, rows=first, more_rows=more)


def resplit(case: Case, split: int, suffix: str) -> Case:
    """The same case (tables, query, rows in order) with its rows cut into runs at another point."""
    everything = {t.name: case.all_rows(t.name) for t in case.tables if case.all_rows(t.name)}
    return Case(name=f"{case.name}_{suffix}", about=case.about, tables=case.tables, dml=case.dml, sink=case.sink,
                rows={t: r[:split] for t, r in everything.items() if r[:split]},
                more_rows={t: r[split:] for t, r in everything.items() if r[split:]})


def idle_between(case: Case, suffix: str) -> Case:
    """The same case with its first source's rows in one engine run and the other sources' in the next:
    those sources idle during the first run. Judged on the changelog kinds only (Case.judge_rows): a
    row of the second run may be late for what the first emitted, and Flink, reading its input files
    together, never meets it late."""
    first, *others = [t.name for t in case.sources if case.all_rows(t.name)]
    return Case(name=f"{case.name}_{suffix}", about=case.about, tables=case.tables, dml=case.dml, sink=case.sink,
                rows={first: case.all_rows(first)}, more_rows={t: case.all_rows(t) for t in others},
                judge_rows=False)
