"""The stateless and aggregate part of the generated grammar: projections and filters over every
column type (scalars, DECIMAL, TIMESTAMP_LTZ, ARRAY, MAP, ROW, JSON documents), CAST/TRY_CAST, CASE
with ROW, UNNEST; GROUP BY with (DISTINCT) aggregates and HAVING; regular INNER/LEFT joins.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.oracle.drawn import JSON, NUMBERS, Generated, Table, assemble, rows, sink_type, tables

_PLUS = {"INT": "INT", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE", "DECIMAL(10, 2)": "DECIMAL(11, 2)"}
_NARROWER = {"INT": "TINYINT", "BIGINT": "INT", "DOUBLE": "SMALLINT", "DECIMAL(20, 4)": "INT"}


@st.composite
def scalar(draw: st.DrawFn, table: Table, alias: str = "t") -> tuple[str, str, str]:
    """(expression, its Flink type, feature) over one column of the table (aliased `alias`)."""
    name, kind = draw(st.sampled_from(table.columns))
    column = f"{alias}.{name}"
    choices = [(column, sink_type(kind), "column")]
    if kind != JSON and not kind.startswith(("ARRAY", "MAP", "ROW")):
        choices.append((f"CAST({column} AS STRING)", "STRING", f"cast:{kind}"))
    if kind in _PLUS:
        choices += [(f"{column} + 1", _PLUS[kind], f"plus:{kind}"),
                    (f"COALESCE({column}, 0)", kind, f"coalesce:{kind}"),
                    (f"CAST({column} AS DOUBLE)", "DOUBLE", f"cast_double:{kind}"),
                    (f"CAST({column} AS DECIMAL(12, 1))", "DECIMAL(12, 1)", f"cast_decimal:{kind}")]
    if kind in _NARROWER:  # a narrowing CAST: Flink wraps an integer or a DECIMAL, saturates a DOUBLE
        choices.append((f"CAST({column} AS {_NARROWER[kind]})", _NARROWER[kind], f"narrow:{kind}"))
    if kind == "DECIMAL(20, 4)":
        choices += [(f"{column} * 2", "DECIMAL(21, 4)", "decimal_times"),
                    (f"CAST({column} AS BIGINT)", "BIGINT", "decimal_to_bigint")]
    if kind == "STRING":
        choices += [(f"UPPER({column})", "STRING", "upper"), (f"CHAR_LENGTH({column})", "INT", "char_length"),
                    (f"CONCAT({column}, '-', {alias}.k)", "STRING", "concat"),
                    (f"COALESCE({column}, 'none')", "STRING", "coalesce:STRING"),
                    (f"TRY_CAST({column} AS INT)", "INT", "try_cast_int"),
                    (f"CASE WHEN {column} IS NULL THEN CAST(NULL AS ROW<x STRING, y INT>) "
                     f"ELSE ROW({alias}.k, CHAR_LENGTH({column})) END", "ROW<x STRING, y INT>", "case_row")]
    if kind in ("TIMESTAMP(3)", "TIMESTAMP_LTZ(3)"):
        choices += [(f"DATE_FORMAT({column}, 'yyyy-MM-dd HH:mm')", "STRING", f"date_format:{kind}"),
                    (f"EXTRACT(HOUR FROM {column})", "BIGINT", f"extract:{kind}"),
                    (f"CAST({column} AS DATE)", "DATE", f"cast_date:{kind}")]
    if kind.startswith("ARRAY"):
        element = kind[len("ARRAY<"):-1]
        choices += [(f"CARDINALITY({column})", "INT", "cardinality:ARRAY"),
                    (f"{column}[1]", element, "element:ARRAY")]
    if kind.startswith("MAP"):
        choices += [(f"CARDINALITY({column})", "INT", "cardinality:MAP"), (f"{column}['a']", "INT", "element:MAP")]
    if kind == "ROW<a INT, b STRING>":
        choices += [(f"{column}.a", "INT", "field:ROW"), (f"{column}.b", "STRING", "field:ROW")]
    if kind == "ROW<`value` INT, `timestamp` STRING>":
        choices += [(f"{column}.`value`", "INT", "field:ROW_keyword"),
                    (f"{column}.`timestamp`", "STRING", "field:ROW_keyword")]
    if kind == JSON:
        choices += [(f"JSON_VALUE({column}, '$.a')", "STRING", "json_value"),
                    (f"JSON_VALUE({column}, 'lax $.b')", "STRING", "json_value_lax"),
                    (f"JSON_EXISTS({column}, '$.a')", "BOOLEAN", "json_exists"),
                    (f"JSON_QUERY({column}, '$.a')", "STRING", "json_query"),
                    (f"{column} IS JSON", "BOOLEAN", "is_json")]
    if kind in ("INT", "STRING", "BOOLEAN"):
        choices.append((f"JSON_OBJECT('v' VALUE {column})", "STRING", f"json_object:{kind}"))
    choices.append((f"CASE WHEN {column} IS NULL THEN 'null' ELSE 'set' END", "STRING", "case_null"))
    return draw(st.sampled_from(choices))


@st.composite
def condition(draw: st.DrawFn, table: Table, alias: str = "t") -> tuple[str, str]:
    name, kind = draw(st.sampled_from(table.columns))
    column = f"{alias}.{name}"
    options = [(f"{column} IS NULL", "is_null"), (f"{column} IS NOT NULL", "is_not_null")]
    if kind in NUMBERS:
        options.append((f"{column} > 0", f"compare:{kind}"))
    if kind == "STRING":
        options += [(f"{column} LIKE 'a%'", "like"), (f"{column} <> 'b'", "compare:STRING")]
    if kind == "BOOLEAN":
        options.append((f"{column} IS TRUE", "is_true"))
    first = draw(st.sampled_from(options))
    if draw(st.booleans()):
        return first
    second = draw(st.sampled_from(options))
    joiner = draw(st.sampled_from(["AND", "OR"]))
    return f"({first[0]}) {joiner} ({second[0]})", f"{first[1]}+{joiner.lower()}"


@st.composite
def stateless_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t"))
    data = draw(rows(table))
    projected = draw(st.lists(scalar(table), min_size=1, max_size=4))
    where = draw(st.none() | condition(table))
    select = ", ".join(["t.k", *(f"{e} AS o{i}" for i, (e, _, _) in enumerate(projected))])
    dml = f"INSERT INTO {name}_sink SELECT {select} FROM {table.name} AS t" + (f" WHERE {where[0]}" if where else "")
    sink = [("k", "STRING" + (" NOT NULL" if table.upsert else "")),
            *((f"o{i}", t) for i, (_, t, _) in enumerate(projected))]
    features = [f for _, _, f in projected] + ([where[1]] if where else []) + [
        "upsert_source" if table.upsert else "append_source"]
    case = assemble(name, [table], sink, dml, ["k"] if table.upsert else [], "upsert" if table.upsert else "append",
                    {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="stateless", features=features)


@st.composite
def unnest_cases(draw: st.DrawFn, name: str) -> Generated:
    element = draw(st.sampled_from(["INT", "STRING"]))
    table = draw(tables(f"{name}_t", upsert=False, types=(f"ARRAY<{element}>",), width=(1, 1)))
    data = draw(rows(table))
    dml = f"INSERT INTO {name}_sink SELECT t.k, u.x FROM {table.name} AS t CROSS JOIN UNNEST(t.c0) AS u(x)"
    case = assemble(name, [table], [("k", "STRING"), ("x", element)], dml, [], "append", {table.name: data},
                    draw(st.integers(0, len(data))))
    return Generated(case=case, kind="unnest", features=[f"unnest:{element}"])


def _aggregates(table: Table) -> list[tuple[str, str, str]]:
    found = [("COUNT(*)", "BIGINT", "count_star")]
    for name, kind in table.columns:
        column = f"t.{name}"
        found += [(f"COUNT({column})", "BIGINT", "count"), (f"COUNT(DISTINCT {column})", "BIGINT", "count_distinct")]
        if kind in ("INT", "BIGINT", "DOUBLE"):
            found += [(f"SUM({column})", kind, f"sum:{kind}"), (f"MIN({column})", kind, f"min:{kind}"),
                      (f"MAX({column})", kind, f"max:{kind}"),
                      (f"SUM(DISTINCT {column})", kind, f"sum_distinct:{kind}")]
        if kind == "INT":
            found.append((f"AVG({column})", "INT", "avg:INT"))
        if kind == "DECIMAL(10, 2)":
            found += [(f"SUM({column})", "DECIMAL(38, 2)", "sum:DECIMAL"), (f"MAX({column})", kind, "max:DECIMAL")]
        if kind == "STRING":
            found += [(f"MIN({column})", "STRING", "min:STRING"), (f"MAX({column})", "STRING", "max:STRING"),
                      (f"ARRAY_AGG({column})", "ARRAY<STRING>", "array_agg")]
    return found


@st.composite
def aggregate_cases(draw: st.DrawFn, name: str) -> Generated:
    table = draw(tables(f"{name}_t", types=("INT", "BIGINT", "DOUBLE", "DECIMAL(10, 2)", "STRING", "BOOLEAN")))
    data = draw(rows(table))
    chosen = draw(st.lists(st.sampled_from(_aggregates(table)), min_size=1, max_size=4))
    where = draw(st.none() | condition(table))
    having = draw(st.none() | st.integers(0, 2))
    select = ", ".join(["t.k", *(f"{e} AS a{i}" for i, (e, _, _) in enumerate(chosen))])
    dml = (f"INSERT INTO {name}_sink SELECT {select} FROM {table.name} AS t" + (f" WHERE {where[0]}" if where else "")
           + " GROUP BY t.k" + (f" HAVING COUNT(*) > {having}" if having is not None else ""))
    sink = [("k", "STRING NOT NULL"), *((f"a{i}", t) for i, (_, t, _) in enumerate(chosen))]
    features = [f for _, _, f in chosen] + ([where[1]] if where else []) + (["having"] if having is not None else []) \
        + ["upsert_source" if table.upsert else "append_source"]
    case = assemble(name, [table], sink, dml, ["k"], "upsert", {table.name: data}, draw(st.integers(0, len(data))))
    return Generated(case=case, kind="aggregate", features=features)


@st.composite
def join_cases(draw: st.DrawFn, name: str) -> Generated:
    scalars = ("INT", "BIGINT", "DOUBLE", "DECIMAL(10, 2)", "STRING", "BOOLEAN", "DATE", "TIMESTAMP(3)")
    left = draw(tables(f"{name}_l", upsert=False, types=scalars))
    right = draw(tables(f"{name}_r", upsert=False, types=scalars))
    data = {left.name: draw(rows(left)), right.name: draw(rows(right))}
    kind = draw(st.sampled_from(["INNER", "LEFT"]))
    lc, lt = draw(st.sampled_from(left.columns))
    rc, rt = draw(st.sampled_from(right.columns))
    dml = (f"INSERT INTO {name}_sink SELECT l.k, l.{lc} AS lv, r.{rc} AS rv FROM {left.name} AS l "
           f"{kind} JOIN {right.name} AS r ON l.k = r.k")
    mode = "append" if kind == "INNER" else "retract"
    case = assemble(name, [left, right], [("k", "STRING"), ("lv", lt), ("rv", rt)], dml, [], mode, data,
                    draw(st.integers(0, 6)))
    return Generated(case=case, kind="join", features=[f"join:{kind.lower()}"], single_source=False)
