"""The event-time and ordering part of the generated grammar: window TVFs (TUMBLE, HOP, CUMULATE and a
cascade over window_time), OVER aggregates, deduplication and Top-N (ROW_NUMBER), interval joins
and event-time temporal joins against a versioned table declared with a primary key.

Every event-time query reads tables whose time attribute is `$rowtime`, a declared or a computed
column; rows arrive out of order and with tied times, so late rows are in play. A window, OVER or
deduplication reads a table of one to three partitions (hashed by k): a run reads them one after another,
each partition's watermark its own, the source's the lowest (tests/oracle/partitions.py).

Two-input event-time operators are drawn where Flink's result does not depend on how the reads of
the two inputs interleave (the oracle's Flink reads both files at once, as Confluent reads two topics):
no row of either input is late for its own source's watermark (`timely`: out of order and tied only
within the watermark delay). A late row is joined with what the operator's state still holds when it
comes, and that depends on the interleaving: three Flink runs of the same 40 join cases with late
rows gave different results for 9 (seed 26). An interval join's inputs end with a row a day later on
each side, so every interval is past the final watermark whatever came first.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import strategies as st

from tests.oracle.corpus import Case
from tests.oracle.drawn import Generated, Table, assemble, rows, tables

_SMALL = ("INT", "STRING")
LATER = "2026-03-02 10:00:00"


def _window_call(draw: st.DrawFn, source: str, time: str) -> tuple[str, str]:
    kind = draw(st.sampled_from(["TUMBLE", "HOP", "CUMULATE"]))
    if kind == "TUMBLE":
        size = draw(st.sampled_from([5, 10, 15]))
        return f"TABLE(TUMBLE(TABLE {source}, DESCRIPTOR({time}), INTERVAL '{size}' MINUTE))", f"tumble:{size}"
    step = draw(st.sampled_from([5, 10]))
    size = step * draw(st.sampled_from([2, 3]))
    return (f"TABLE({kind}(TABLE {source}, DESCRIPTOR({time}), INTERVAL '{step}' MINUTE, INTERVAL '{size}' MINUTE))",
            f"{kind.lower()}:{step}/{size}")


@st.composite
def window_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", upsert=False, time=True, types=_SMALL, width=(1, 2), partitioned=True))
    data = draw(rows(table, count=(3, 9)))
    call, feature = _window_call(draw, table.name, table.time_column)
    by_key = draw(st.booleans())
    numbers = [n for n, t in table.columns if t == "INT"]
    aggregates = [("COUNT(*)", "BIGINT")] + ([(f"SUM({numbers[0]})", "INT"), (f"MAX({numbers[0]})", "INT")]
                                             if numbers else [])
    chosen = draw(st.lists(st.sampled_from(aggregates), min_size=1, max_size=2))
    keys = ", k" if by_key else ""
    select = ", ".join(["window_start", "window_end", *(["k"] if by_key else []),
                        *(f"{e} AS a{i}" for i, (e, _) in enumerate(chosen))])
    dml = f"INSERT INTO {name}_sink SELECT {select} FROM {call} GROUP BY window_start, window_end{keys}"
    sink = [("window_start", "TIMESTAMP(3)"), ("window_end", "TIMESTAMP(3)"), *([("k", "STRING")] if by_key else []),
            *((f"a{i}", t) for i, (_, t) in enumerate(chosen))]
    case = assemble(name, [table], sink, dml, [], "append", {table.name: data}, draw(st.integers(0, len(data))))
    features = [feature, f"time:{table.time}", f"buckets:{table.buckets}"] + (["by_key"] if by_key else [])
    return Generated(case=case, kind="window", features=features)


@st.composite
def cascade_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", upsert=False, time=True, types=_SMALL, width=(1, 1)))
    data = draw(rows(table, count=(4, 10)))
    inner = (f"SELECT window_time AS wt, COUNT(*) AS hits FROM TABLE(TUMBLE(TABLE {table.name}, "
             f"DESCRIPTOR({table.time_column}), INTERVAL '5' MINUTE)) GROUP BY window_start, window_end, window_time")
    call, feature = _window_call(draw, "minutely", "wt")
    dml = (f"INSERT INTO {name}_sink WITH minutely AS ({inner}) SELECT window_start, window_end, COUNT(*) AS n, "
           f"SUM(hits) AS hits FROM {call} GROUP BY window_start, window_end")
    sink = [("window_start", "TIMESTAMP(3)"), ("window_end", "TIMESTAMP(3)"), ("n", "BIGINT"), ("hits", "BIGINT")]
    case = assemble(name, [table], sink, dml, [], "append", {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="cascade", features=[f"outer:{feature}", f"time:{table.time}"])


@st.composite
def over_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", upsert=False, time=True, types=("INT",), width=(1, 1), partitioned=True))
    data = draw(rows(table, count=(3, 9)))
    frame, feature = draw(st.sampled_from([
        ("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "unbounded"),
        ("ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", "rows_1"),
        ("RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW", "range_10m")]))
    source, shape = _over_input(draw, table.name, table.time_column)
    dml = (f"INSERT INTO {name}_sink {source[0]}SELECT k, c0, SUM(c0) OVER w AS total, COUNT(*) OVER w AS n "
           f"FROM {source[1]} WINDOW w AS (PARTITION BY k ORDER BY {table.time_column} {frame})")
    sink = [("k", "STRING"), ("c0", "INT"), ("total", "INT"), ("n", "BIGINT")]
    case = assemble(name, [table], sink, dml, [], "append", {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="over", features=[f"over:{feature}", f"time:{table.time}", f"input:{shape}",
                                                       f"buckets:{table.buckets}"])


def _over_input(draw: st.DrawFn, table: str, time: str) -> tuple[tuple[str, str], str]:
    """How the OVER reads its table, as users write it: directly, filtered, or through a CTE or a derived
    table that projects (and maybe filters) it. ((WITH clause, FROM clause), feature)."""
    kept = draw(st.sampled_from(["c0 > 0", "c0 IS NOT NULL", "k <> 'k1'", "c0 IS NULL OR c0 < 5"]))
    projected = f"SELECT k, c0, {time} FROM {table}"
    return draw(st.sampled_from([
        (("", table), "direct"),
        (("", f"{table} WHERE {kept}"), "where"),
        ((f"WITH kept AS ({projected}) ", "kept"), "cte"),
        ((f"WITH kept AS ({projected} WHERE {kept}) ", "kept"), "cte_where"),
        (("", f"({projected} WHERE {kept}) AS d"), "derived_where")]))


@st.composite
def dedup_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", upsert=False, time=True, types=_SMALL, width=(1, 1), partitioned=True))
    data = draw(rows(table, count=(3, 9)))
    last = draw(st.booleans())
    dml = (f"INSERT INTO {name}_sink SELECT k, c0 FROM (SELECT k, c0, ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
           f"{table.time_column} {'DESC' if last else 'ASC'}) AS rn FROM {table.name}) WHERE rn = 1")
    sink = [("k", "STRING NOT NULL" if last else "STRING"), ("c0", table.columns[0][1])]
    case = assemble(name, [table], sink, dml, ["k"] if last else [], "upsert" if last else "append",
                    {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="dedup", features=["keep_last" if last else "keep_first", f"time:{table.time}",
                                                        f"buckets:{table.buckets}"])


@st.composite
def top_n_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", types=("INT",), width=(1, 2)))
    data = draw(rows(table, count=(3, 9)))
    data = [[r[0], *(None if v is None else v % 4 for v in r[1:])] for r in data]  # few values: ties
    n = draw(st.integers(1, 3))
    order = draw(st.sampled_from(["DESC", "ASC"]))
    ranked = (f"SELECT k, c0, ROW_NUMBER() OVER (PARTITION BY k ORDER BY c0 {order}) AS rn "
              f"FROM {table.name}")
    if n == 1:
        dml = f"INSERT INTO {name}_sink SELECT k, c0 FROM ({ranked}) WHERE rn = 1"
        sink, key = [("k", "STRING NOT NULL"), ("c0", "INT")], ["k"]
    else:
        dml = f"INSERT INTO {name}_sink SELECT k, c0, rn FROM ({ranked}) WHERE rn <= {n}"
        sink, key = [("k", "STRING NOT NULL"), ("c0", "INT"), ("rn", "BIGINT NOT NULL")], ["k", "rn"]
    case = assemble(name, [table], sink, dml, key, "upsert", {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="top_n", features=[f"top_{n}", order.lower(),
                                                        "upsert_source" if table.upsert else "append_source"])


_DELAYS_S = (0, 60, 600)  # a join source's watermark delay: none, one grid step, ten


def _timely(data: list[list[object]], delay_s: int) -> list[list[object]]:
    """The rows in their drawn order, each event time (the last value) moved up to be later than its
    source's watermark when it comes (the highest time so far minus the delay): never late."""
    highest: datetime | None = None
    timely = []
    for row in data:
        at = datetime.fromisoformat(str(row[-1]))
        if highest is not None and at <= highest - timedelta(seconds=delay_s):
            at = highest if delay_s else highest + timedelta(seconds=1)
        highest = at if highest is None else max(highest, at)
        timely.append([*row[:-1], at.isoformat(sep=" ")])
    return timely


@st.composite
def _timely_source(draw: st.DrawFn, name: str, kind: str, *, upsert: bool = False) -> tuple[Table, list[list[object]]]:
    table = Table(name, (("c0", kind),), upsert=upsert, time="declared", delay_s=draw(st.sampled_from(_DELAYS_S)))
    return table, _timely(draw(rows(table, count=(2, 6))), table.delay_s)


@st.composite
def interval_join_cases(draw: st.DrawFn, name: str) -> Generated:
    left, left_rows = draw(_timely_source(f"{name}_l", "INT"))
    right, right_rows = draw(_timely_source(f"{name}_r", "STRING"))
    # A last row a day later on each side moves both watermarks past every interval: Flink then emits each
    # unmatched row (at its key's cleanup timer); before that, when it does depends on how the two reads
    # interleave and on that timer, not on the rows.
    data = {left.name: [*left_rows, ["kz", 0, LATER]], right.name: [*right_rows, ["kz", "z", LATER]]}
    kind = draw(st.sampled_from(["INNER", "LEFT", "RIGHT", "FULL"]))
    before, after = draw(st.sampled_from([0, 5])), draw(st.sampled_from([5, 10, 30]))
    dml = (f"INSERT INTO {name}_sink SELECT l.k, l.c0 AS lv, r.c0 AS rv FROM {left.name} AS l {kind} JOIN "
           f"{right.name} AS r ON l.k = r.k AND r.ts BETWEEN l.ts - INTERVAL '{before}' MINUTE "
           f"AND l.ts + INTERVAL '{after}' MINUTE")
    case = _timely_split(name, [left, right], [("k", "STRING"), ("lv", "INT"), ("rv", "STRING")], dml, data,
                         draw(st.integers(0, 6)))
    return Generated(case=case, kind="interval_join", single_source=False,
                     features=[f"interval:{kind.lower()}", *_order(data), *_delays(left, right),
                               *_split_kept(case)])


@st.composite
def temporal_join_cases(draw: st.DrawFn, name: str) -> Generated:
    probe, probe_rows = draw(_timely_source(f"{name}_p", "INT"))
    versions, changes = draw(_timely_source(f"{name}_v", "STRING", upsert=True))
    data = {probe.name: probe_rows, versions.name: changes}
    kind = draw(st.sampled_from(["INNER", "LEFT"]))
    dml = (f"INSERT INTO {name}_sink SELECT p.k, p.c0 AS pv, v.c0 AS vv FROM {probe.name} AS p {kind} JOIN "
           f"{versions.name} FOR SYSTEM_TIME AS OF p.ts AS v ON p.k = v.k")
    case = _timely_split(name, [probe, versions], [("k", "STRING"), ("pv", "INT"), ("vv", "STRING")], dml, data,
                         draw(st.integers(0, 6)))
    return Generated(case=case, kind="temporal_join", single_source=False,
                     features=[f"temporal:{kind.lower()}", *_order(data), *_delays(probe, versions),
                               *_split_kept(case)])


def _order(data: dict[str, list[list[object]]]) -> list[str]:
    """`out_of_order` when an input has a row older than one before it (its time is the row's last value)."""
    late = any(str(row[-1]) < max(str(r[-1]) for r in rows[:at]) for rows in data.values()
               for at, row in enumerate(rows) if at)
    return ["out_of_order"] if late else ["in_order"]


def _timely_split(name: str, sources: list[Table], columns: list[tuple[str, str]], dml: str,
                  data: dict[str, list[list[object]]], split: int) -> Case:
    """The case with its rows cut into two engine runs at `split`, or all in the first when a row of the
    second would be idle-late (below): Flink, reading both runs' rows as one input, never idles between
    them, so for such a row its result depends on an idle time, not on the rows (a known difference of
    the local model, corpus case join_full_interval_two_runs)."""
    case = assemble(name, sources, columns, dml, [], "append", data, split)
    return assemble(name, sources, columns, dml, [], "append", data, 1 << 30) if idle_late(case, sources) else case


def idle_late(case: Case, sources: list[Table]) -> bool:
    """Whether a row of the second engine run is not later than the watermark the first run ended with:
    every input is idle once a run caught up, so that is the highest of the sources' watermarks
    (local/event_time.py, as Flink's watermark valve once all its inputs are idle)."""
    marks = [max(datetime.fromisoformat(str(r[-1])) for r in case.rows[t.name]) - timedelta(seconds=t.delay_s)
             for t in sources if case.rows.get(t.name)]
    return bool(marks) and any(datetime.fromisoformat(str(r[-1])) <= max(marks)
                               for rows in case.more_rows.values() for r in rows)


def _split_kept(case: Case) -> list[str]:
    return ["one_run"] if not case.more_rows else []


def _delays(*sources: Table) -> list[str]:
    return [f"delay:{'/'.join(str(t.delay_s) for t in sources)}s"]
