"""Incremental group aggregation: a GROUP BY over append-only input, run as Flink's GroupAggregate.

Flink keeps per group key the aggregate's accumulators, updates them with each input record and
emits the key's new result row. Locally a run adds the records not read yet to the stored
accumulators, in one aggregation over both, and writes for the keys those records touch what
recomputing the query writes (jobs.py): the difference between the row last emitted for the key
and its new one. A run so costs O(new records + groups), never O(history).

Which queries: the top SELECT groups by plain expressions (optional HAVING) and its aggregates
are COUNT, SUM, MIN, MAX and AVG (no DISTINCT, no FILTER); below it nothing keeps state
(filters, projections, UNNEST); every source is append-only, so a run only adds to the
accumulators (MIN and MAX merge because nothing is retracted). An upsert sink's primary key
must be the group keys, so that the difference per key is the difference per sink row.
Everything else recomputes.

The queries are the translated Spark SQL (translation/spark.py) rewritten with sqlglot, never a
second translation: the rows query is the same SELECT without its grouping, with the group keys
and what each row adds to each accumulator as its columns (COUNT: 0 or 1; SUM, MIN, MAX: the
value; AVG: a sum and a count); the projection and HAVING are the query's, with each aggregate
replaced by its value over the accumulators and each group key by its column. Accumulators
combine with Spark's own SUM, MIN and MAX, so a DECIMAL sum is exact as Spark's SUM is.

State: per statement and sink, a parquet folder of (keys, accumulators, row last emitted), each
run writing a new one that the statement's RunState names, so it commits with the run's batches
(store.commit_run). The run's changes are read back from it: it also holds, for the keys the
run touched, the row emitted before. A folder no committed RunState names is a superseded or
interrupted run's, deleted at the statement's next run; a statement's folders go when it is
deleted.
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.local.catalog import TableDef
from shift_left_dagster.project.analysis import state_reasons
from shift_left_dagster.translation.spark import SparkQuery

STATE_DIR = "aggregates"  # in the service's data dir, beside the table logs
KEY, ACCUMULATOR, COLUMN = "__sl_g", "__sl_a", "__sl_p"  # group key, accumulator and query column names
EMITTED = "__sl_row"  # the row last emitted for the key (stored columns and $rowtime; NULL: none)
NEW = "__sl_new"  # the key's row after a run (NULL: none, out of the HAVING)
TOUCHED = "__sl_touched"  # whether a run's new records touched the key
BEFORE = "__sl_before"  # for a key a run touched, the row emitted before it
IN_RESULT = "__sl_in"  # whether a group the run touched is in the query's result (the HAVING keeps it)
_MERGES: dict[str, Callable[[Column], Column]] = {"sum": F.sum, "min": F.min, "max": F.max}
_AGGREGATES: dict[str, type[exp.AggFunc]] = {"sum": exp.Sum, "min": exp.Min, "max": exp.Max}
_LONG_DECIMAL = 20  # digits of a COUNT as a DECIMAL (Spark's Average divides by it)
_MAX_DIGITS = 38


class NotIncremental(ValueError):
    """Why a query recomputes over its whole input instead."""


@dataclass
class GroupAggregation:
    """How a GROUP BY sink runs incrementally."""

    rows: SparkQuery  # per input row: its group keys, then what it adds to each accumulator
    merges: list[str]  # per accumulator: the aggregate combining what rows add (sum, min, max)
    types: list[T.DataType]  # per accumulator: its Spark type
    keys: int
    having: str | None  # over the key and accumulator columns
    projection: list[str]  # the query's columns over the key and accumulator columns
    fingerprint: str  # the tables the accumulators were computed for (stored ones for others are stale)

    @property
    def key_columns(self) -> list[str]:
        return [f"{KEY}{i}" for i in range(self.keys)]

    @property
    def accumulators(self) -> list[str]:
        return [f"{ACCUMULATOR}{i}" for i in range(len(self.merges))]


def plan(query: exp.Expr, translated: SparkQuery, sources: Iterable[TableDef], sink: TableDef,
         target: list[str], types_of: Callable[[str], T.StructType]) -> GroupAggregation:
    """How `query` (its Flink tree; `translated` its Spark SQL over views `types_of` can analyse)
    runs incrementally into `sink`'s `target` columns; NotIncremental says why it can not."""
    tables = list(sources)
    _check_input(query, tables)
    top, keys = _check_top(sqlglot.parse_one(translated.sql, read="spark"))
    having = top.args.get("having")
    calls: dict[str, exp.AggFunc] = {}
    for node in [*top.expressions, *([having.this] if having is not None else [])]:
        for call in node.find_all(exp.AggFunc):
            calls.setdefault(_check_call(call), call)
    try:
        results = _types(types_of, top, keys, list(calls.values()))
        parts: list[tuple[exp.Expr, str]] = []
        slots: list[list[str]] = []
        for call, result in zip(calls.values(), results, strict=True):
            added = _contributions(call, result)
            slots.append([f"{ACCUMULATOR}{len(parts) + i}" for i in range(len(added))])
            parts += added
        types = _types(types_of, top, keys, [_AGGREGATES[m](this=v.copy()) for v, m in parts])
        rows = _select(top, keys, [v for v, _ in parts], grouped=False)
        types_of(rows)
    except PySparkException as error:
        raise NotIncremental(f"Spark can not analyse the accumulators: {error}") from None
    finals = {text: _final(call, result, names, [types[int(n[len(ACCUMULATOR):])] for n in names])
              for (text, call), result, names in zip(calls.items(), results, slots, strict=True)}
    projection = [_over_accumulators(item.unalias(), keys, finals) for item in top.expressions]
    _check_sink_key(sink, target, projection, len(keys))
    condition = _over_accumulators(having.this, keys, finals) if having is not None else None
    return GroupAggregation(
        rows=SparkQuery(sql=rows, scans=translated.scans), merges=[m for _, m in parts], types=types,
        keys=len(keys), having=_sql(condition) if condition is not None else None,
        projection=[_sql(e) for e in projection],
        fingerprint=_fingerprint([sink, *tables]))


def _fingerprint(tables: Iterable[TableDef]) -> str:
    """Accumulators stay valid while the tables they were computed for stay as they were."""
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tables).encode()).hexdigest()


def _check_input(query: exp.Expr, sources: list[TableDef]) -> None:
    """The top is a GROUP BY over a stateless input of append-only sources."""
    top = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(top, exp.Select) or top.args.get("group") is None:
        raise NotIncremental("the query's top is no GROUP BY")
    below = top.copy()
    for part in ("group", "having"):
        below.set(part, None)
    below.set("expressions", [exp.Star()])
    reasons = state_reasons(below)
    if reasons:
        raise NotIncremental(f"its input keeps state itself ({reasons[0]})")
    for select in below.find_all(exp.Select):
        in_from = isinstance(select.parent, exp.Subquery) and isinstance(select.parent.parent, exp.From)
        if select is not below and not in_from and not isinstance(select.parent, exp.CTE):
            raise NotIncremental("a subquery outside FROM is a join")
    for table in sources:
        if table.changelog_mode != "append":
            raise NotIncremental(f"table '{table.name}' is not append-only: its updates retract from groups")


def _check_top(top: exp.Expr) -> tuple[exp.Select, list[exp.Expr]]:
    """The translated top SELECT's group keys, when it is a plain grouping."""
    if not isinstance(top, exp.Select):
        raise NotIncremental("the translated query's top is no SELECT")
    if any(top.args.get(part) for part in ("distinct", "order", "limit", "offset", "qualify", "windows")):
        raise NotIncremental("the aggregate's result is distinct, ordered or limited")
    group = top.args["group"]
    if any(group.args.get(part) for part in ("rollup", "cube", "grouping_sets", "totals")):
        raise NotIncremental("grouping sets")
    keys = list(group.expressions)
    if not keys or any(isinstance(k, exp.Literal) for k in keys):
        raise NotIncremental("no group keys (or keys by position)")
    having = top.args.get("having")
    for node in [*top.expressions, *([having] if having is not None else [])]:
        if node.find(exp.Select, exp.Window) is not None:
            raise NotIncremental("a subquery or an OVER window over the groups")
    return top, keys


def _check_call(call: exp.AggFunc) -> str:
    """An aggregate call the accumulators can hold; its Spark SQL (equal calls share accumulators)."""
    if not isinstance(call, (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)):
        raise NotIncremental(f"aggregate {call.sql(dialect='spark')}")
    if call.find(exp.Distinct) is not None or isinstance(call.parent, exp.Filter) or call.args.get("expressions"):
        raise NotIncremental(f"aggregate {call.sql(dialect='spark')} (DISTINCT, FILTER or several arguments)")
    return _sql(call)


def _types(types_of: Callable[[str], T.StructType], top: exp.Select, keys: list[exp.Expr],
           values: list[exp.Expr]) -> list[T.DataType]:
    return [f.dataType for f in types_of(_select(top, keys, values)).fields[len(keys):]]


def _select(top: exp.Select, keys: list[exp.Expr], values: list[exp.Expr], *, grouped: bool = True) -> str:
    """The top SELECT over its input as it is, with the keys and `values` as its columns: grouping as
    it does (no HAVING), or per input row."""
    select = top.copy()
    select.set("having", None)
    if not grouped:
        select.set("group", None)
    select.set("expressions", [exp.alias_(k.copy(), f"{KEY}{i}", quoted=True) for i, k in enumerate(keys)]
               + [exp.alias_(v.copy(), f"{ACCUMULATOR}{i}", quoted=True) for i, v in enumerate(values)])
    return _sql(select)


def _contributions(call: exp.AggFunc, result: T.DataType) -> list[tuple[exp.Expr, str]]:
    """What one input row adds to each accumulator of a call, and the aggregate combining those:
    a count is a sum of 0/1, AVG a sum (of DOUBLEs, as Spark's Average sums any other number) and
    a count."""
    def counted(value: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Literal.number(0),
                      false=exp.Literal.number(1))

    if isinstance(call, exp.Count):
        return [(exp.Literal.number(1) if isinstance(call.this, exp.Star) else counted(call.this), "sum")]
    if isinstance(call, exp.Avg):
        if not isinstance(result, (T.DecimalType, T.DoubleType)):
            raise NotIncremental(f"AVG of {result.simpleString()}")
        value = call.this if isinstance(result, T.DecimalType) else exp.cast(call.this, exp.DataType.build("DOUBLE"))
        return [(value.copy(), "sum"), (counted(call.this), "sum")]
    return [(call.this.copy(), "min" if isinstance(call, exp.Min) else "max" if isinstance(call, exp.Max) else "sum")]


def _final(call: exp.AggFunc, result: T.DataType, names: list[str], types: list[T.DataType]) -> exp.Expr:
    """A call's value over its merged accumulators: the accumulator, or Spark's Average of a sum and a count."""
    if not isinstance(call, exp.Avg):
        return exp.column(names[0], quoted=True)
    total, count = (f"`{n}`" for n in names)
    if isinstance(result, T.DecimalType):
        _check_average_scale(types[0], result)
        value = f"CAST({total} / CAST({count} AS DECIMAL({_LONG_DECIMAL}, 0)) AS {result.simpleString()})"
    else:
        value = f"{total} / CAST({count} AS DOUBLE)"
    return sqlglot.parse_one(f"CASE WHEN {count} = 0 THEN NULL ELSE {value} END", read="spark")


def _check_average_scale(total: T.DataType, result: T.DecimalType) -> None:
    """Spark divides a DECIMAL sum by a count at a scale it cuts when the sum is wide; the average is
    exact only when that scale holds the result's."""
    assert isinstance(total, T.DecimalType)
    scale, digits = total.scale + _LONG_DECIMAL + 1, total.precision + _LONG_DECIMAL + 1
    if digits > _MAX_DIGITS:
        scale = max(_MAX_DIGITS - (digits - scale), min(scale, 6))
    if scale < result.scale:
        raise NotIncremental(f"AVG of a DECIMAL as wide as {total.simpleString()}")


def _over_accumulators(node: exp.Expr, keys: list[exp.Expr],
                       finals: dict[str, exp.Expr]) -> exp.Expr:
    """An expression over the groups as one over the key and accumulator columns."""
    def swap(n: exp.Expr) -> exp.Expr:
        for i, key in enumerate(keys):
            if n == key or _same_column(n, key):
                return exp.column(f"{KEY}{i}", quoted=True)
        if isinstance(n, exp.AggFunc):
            return finals[_sql(n)].copy()
        return n

    over = node.copy().transform(swap)
    loose = [c for c in over.find_all(exp.Column) if not c.name.startswith("__sl_")]
    if loose:
        raise NotIncremental(f"column {loose[0].sql(dialect='spark')} is neither a group key nor aggregated")
    return over


def _same_column(node: exp.Expr, key: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and isinstance(key, exp.Column) and node.name.lower() == key.name.lower() \
        and (not node.table or not key.table or node.table == key.table)


def _check_sink_key(sink: TableDef, target: list[str], projection: list[exp.Expr], keys: int) -> None:
    """An upsert sink's primary key is the group keys, each written as it is: one sink row per group."""
    if not sink.upsert:
        return
    bare = [(target[i].lower(), e.name) for i, e in enumerate(projection)
            if isinstance(e, exp.Column) and e.name.startswith(KEY)]
    primary = {c.lower() for c in sink.primary_key}
    if {t for t, _ in bare} != primary or len(bare) != len(primary) or \
            sorted(k for _, k in bare) != sorted(f"{KEY}{i}" for i in range(keys)):
        raise NotIncremental(f"the primary key of '{sink.name}' is not the group keys")


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark", identify=True, comments=False)


# --- running -------------------------------------------------------------------------------------


def merge(aggregation: GroupAggregation, stored: DataFrame | None, rows: DataFrame) -> DataFrame:
    """Every key's accumulators after a run: the `stored` ones (none: start over) with what the run's
    input `rows` add, in one aggregation over both (O(new rows + groups)); with the row last emitted
    for the key (EMITTED, NULL for a new key) and whether the run touched it (TOUCHED)."""
    keys, accumulators = aggregation.key_columns, aggregation.accumulators
    both = rows.select(*keys, *accumulators, F.lit(True).alias(TOUCHED))
    if stored is not None:
        both = stored.select(*keys, *accumulators, EMITTED, F.lit(False).alias(TOUCHED)).unionByName(
            both, allowMissingColumns=True)
    merged = [_MERGES[m](F.col(a)).cast(t).alias(a)
              for a, m, t in zip(accumulators, aggregation.merges, aggregation.types, strict=True)]
    emitted = F.first(EMITTED, ignorenulls=True) if stored is not None else F.lit(None)
    return both.groupBy(*keys).agg(*merged, emitted.alias(EMITTED), F.max(TOUCHED).alias(TOUCHED))


def results(aggregation: GroupAggregation, merged: DataFrame) -> DataFrame:
    """`merged` with the query's columns first (COLUMN<i>): those of each group the run touched and
    the HAVING keeps, NULL for the others; and IN_RESULT, whether it has them. The projection is
    evaluated only on groups in the HAVING, as in the query."""
    kept = F.col(TOUCHED) & F.coalesce(F.expr(aggregation.having), F.lit(False)) \
        if aggregation.having is not None else F.col(TOUCHED)
    columns = [F.when(kept, F.expr(e)).alias(f"{COLUMN}{i}") for i, e in enumerate(aggregation.projection)]
    return merged.select(*columns, *[F.col(f"`{c}`") for c in merged.columns], kept.alias(IN_RESULT))


# --- state folders -------------------------------------------------------------------------------


class AggregateStates:
    """The accumulator folders of each statement: <data dir>/aggregates/<statement>/<sink>-<id>."""

    def __init__(self, data_dir: Path, spark: SparkSession) -> None:
        self.data_dir, self.spark = data_dir, spark

    def read(self, path: str, schema: T.StructType) -> DataFrame:
        return self.spark.read.schema(schema).parquet(str(self.data_dir / path))

    def write(self, frame: DataFrame, statement: str, sink: str) -> str:
        """Write a run's state; its folder (relative to the data dir) counts once a RunState names it."""
        path = Path(STATE_DIR) / statement / f"{sink}-{uuid.uuid4().hex}"
        frame.write.parquet(str(self.data_dir / path))
        return str(path)

    def prune(self, statement: str, committed: Iterable[str]) -> None:
        """Delete the statement's folders its committed RunState does not name."""
        keep = {self.data_dir / p for p in committed}
        folder = self.data_dir / STATE_DIR / statement
        for path in folder.iterdir() if folder.is_dir() else []:
            if path not in keep:
                shutil.rmtree(path, ignore_errors=True)


def forget(data_dir: Path, statement: str) -> None:
    """Delete a statement's accumulators (it is being deleted)."""
    shutil.rmtree(data_dir / STATE_DIR / statement, ignore_errors=True)
