"""Flink SQL (the dialect's AST) -> Spark SQL, as small transforms over the tree.

Each base table becomes a Spark view the engine binds to the table's records
(`Scan`); Flink-only constructs are rewritten to their Spark equivalents;
anything without a faithful equivalent raises Unsupported, naming the
construct and its line, so a statement never runs with a silently different
meaning.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, UnsupportedError

from shift_left_dagster.project.dialect import OptionsHint, TableArgument
from shift_left_dagster.project.parsing import FLINK
from shift_left_dagster.project.stars import SYSTEM, VisibleColumns, expand_stars
from shift_left_dagster.translation.columns import OFFSET, OP, ROWTIME
from shift_left_dagster.translation.functions import (
    FUNCTIONS,
    UnknownFunction,
    spark_template,
    translate_call,
    translate_typed,
)
from shift_left_dagster.translation.interval_join import INTERVAL_TIME, hold_unmatched_rows
from shift_left_dagster.translation.intervals import interval_ms, interval_unit

# Hidden columns a stateless (incremental) query carries from each input record to its output row.
HIDDEN_OP, HIDDEN_ROWTIME, HIDDEN_SEQ = "__sl_op", "__sl_rowtime", "__sl_seq"
HIDDEN = {HIDDEN_OP: OP, HIDDEN_ROWTIME: ROWTIME, HIDDEN_SEQ: OFFSET}
# Validity interval columns of a versioned table's view (temporal joins).
VALID_FROM, VALID_TO = "__sl_valid_from", "__sl_valid_to"
# A table's arrival position (its record offset) where a result depends on arrival order (Scan.arrival).
ARRIVAL = "__sl_arrival"
# A RANGE-bounded OVER's key state as Flink kept it: the times the key's state was cleared before the row
# came (0: never), a column of the OVER's PARTITION BY (late_rows.py replays the clearings)
CLEARINGS = "__sl_clearings"
_Node = TypeVar("_Node", bound=exp.Expr)

WINDOW_TVFS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
_MICROS = {"SECOND": 1_000_000, "MINUTE": 60_000_000, "HOUR": 3_600_000_000, "DAY": 86_400_000_000}
_UNSUPPORTED_FUNCTIONS = {name: fn.unsupported for name, fn in FUNCTIONS.items() if fn.unsupported}
# Names Flink gives a derived table or a projection that has none (Spark's would differ).
DERIVED = "EXPR$"


class Unsupported(ValueError):
    """A Flink construct the local service can not run faithfully."""

    def __init__(self, construct: str, line: int, hint: str = "") -> None:
        self.construct, self.line = construct, line
        super().__init__(f"line {line}: {construct} is not supported by the local service{'; ' + hint if hint else ''}")


@dataclass(frozen=True)
class LateRule:
    """Which rows an event-time operator drops as late, as Flink's operator for it does (event_time.py):
    "after" drops a row not after the watermark (an unbounded OVER), "before" one before it (keep-first
    deduplication), "key" one not later than the last row its key emitted (a bounded OVER, per
    PARTITION BY column; `keys` empty when they are not plain columns: then all rows are one key)."""

    kind: Literal["after", "before", "key"]
    keys: tuple[str, ...] = ()
    # A RANGE frame's preceding interval (ms): Flink's RowTimeRangeBoundedPrecedingFunction clears a key's
    # state, its last emitted time with it, once the watermark passes 1.5 intervals after its newest row.
    range_ms: int | None = None
    # The rows of the table the OVER sees (Spark SQL over its columns): the WHERE of the OVER's SELECT and of
    # the derived tables and CTEs it reads the table through. Only they move a key's state; every row
    # moves the watermark (Flink's comes from the source, before any filter).
    where: str | None = None


@dataclass
class Scan:
    """One base-table reference of a query: the Spark view standing for it and how to read it."""

    view: str
    table: exp.Table
    options: dict[str, str]
    versioned: bool = False  # the build side of a temporal join: every version, with validity intervals
    # The time column an event-time operator reads this table's rows by (an OVER aggregate, a keep-first
    # deduplication, the probe side of a temporal join): the engine holds rows above its watermark.
    event_time: str | None = None
    late: LateRule | None = None  # how its event-time operator drops late rows (None: it drops none)
    # The view carries ARRIVAL, the record's arrival position: ties of a ROW_NUMBER and the element order
    # of an ARRAY_AGG follow it, as Flink's state follows arrival. `arrival_last_by`: a ROW_NUMBER kept at 1
    # ORDER BY this column DESC; when it is the time attribute (Flink's keep-last deduplication) the
    # latest tied row wins, so the engine negates the position.
    arrival: bool = False
    arrival_last_by: str | None = None
    clearings: bool = False  # the view carries CLEARINGS (a RANGE-bounded OVER reads it directly)
    # The time column a LEFT interval join bounds this table by (interval_join.py): when it is the time
    # attribute the query binds INTERVAL_UNTIL to its watermark.
    interval_time: str | None = None


@dataclass
class SparkQuery:
    sql: str
    scans: list[Scan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the local service ignored (query hints)


ColumnsOf = Callable[[exp.Table], list[str]]
_views = itertools.count()


def translate_query(query: exp.Expr, columns_of: ColumnsOf, *, incremental: bool = False,
                    precisions: Mapping[str, int] | None = None) -> SparkQuery:
    """Spark SQL for a Flink query (SELECT, set operation or VALUES).

    `columns_of` names a base table's visible columns (for `*`); `incremental`
    adds the hidden columns that carry each input record's op, time and offset;
    `precisions` are the declared precisions of the timestamp columns it reads
    (by lower-case name), the digits a CAST to STRING prints.
    """
    tree = query.copy()
    notes = _strip_query_hints(tree)
    _reject_unsupported(tree)
    if isinstance(tree, exp.Values):
        tree = _values_select(tree)
    _name_derived(tree)
    ctes = {cte.alias_or_name: cte.this for cte in tree.find_all(exp.CTE)}
    _expand_window_tvfs(tree, columns_of, ctes)
    _expand_stars(tree, columns_of, ctes)
    _mark_event_time_inputs(tree, ctes)
    _order_by_arrival(tree, ctes)
    hold_unmatched_rows(tree, ctes)
    scans = _replace_tables(tree, set(ctes))
    _type_row_branches(tree)
    tree = rewrite_bottom_up(tree, precisions or {})
    filters = _over_filters(tree)
    for scan in scans:
        rule = scan.table.meta.get(_OVER_FILTERS)
        if scan.late is not None and rule in filters:
            scan.late = replace(scan.late, where=filters[rule])
    if incremental:
        _add_hidden_columns(tree, ctes={cte.alias_or_name: cte.this for cte in tree.find_all(exp.CTE)})
    return SparkQuery(sql=spark_sql(tree), scans=scans, notes=notes)


def spark_sql(tree: exp.Expr) -> str:
    """The Spark SQL text; a construct sqlglot can not write for Spark fails here, not in Spark."""
    try:
        return tree.sql(dialect="spark", identify=True, comments=False, unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as error:
        raise Unsupported(str(error).splitlines()[0].rstrip("."), line_of(tree)) from None


def line_of(node: exp.Expr) -> int:
    """The first line a node's tokens are on (1 when unknown)."""
    for candidate in node.walk():
        line = candidate.meta.get("line") if candidate.meta else None
        if line:
            return int(line)
    return 1


# --- query hints ------------------------------------------------------------------------------


def _strip_query_hints(tree: exp.Expr) -> list[str]:
    """`SELECT /*+ STATE_TTL(...) */`, join and LOOKUP hints: planner advice with no effect on the
    result of a local run. They are removed (never passed to Spark) and noted. OPTIONS hints are
    table hints, honoured where the table is read."""
    notes: list[str] = []
    for select in list(tree.find_all(exp.Select)):
        hint = select.args.get("hint")
        if hint is None:
            continue
        names = [h.name.upper() if isinstance(h, exp.Func) else h.sql() for h in hint.expressions]
        select.set("hint", None)  # (its tokens come from a comment: their lines are not the statement's)
        notes.append(f"line {line_of(select)}: query hint {', '.join(names)} ignored by the local service")
    return notes


# --- derived names ----------------------------------------------------------------------------


def _name_derived(tree: exp.Expr) -> None:
    """Name what Flink names implicitly: a derived table without alias, and a projection that is
    neither a column nor aliased (EXPR$n), so `*` over it and the result columns have Flink's names."""
    numbers = itertools.count()
    for subquery in list(tree.find_all(exp.Subquery)):
        if isinstance(subquery.parent, (exp.From, exp.Join)) and not subquery.alias:
            subquery.set("alias", exp.TableAlias(this=exp.to_identifier(f"{DERIVED}{next(numbers)}")))
    for select in list(tree.find_all(exp.Select)):
        for index, item in enumerate(select.expressions):
            if not isinstance(item, (exp.Alias, exp.Column, exp.Star, exp.Dot)):
                item.replace(exp.alias_(item.copy(), f"{DERIVED}{index}", quoted=True))


# --- rejection ------------------------------------------------------------------------------


def _reject_unsupported(tree: exp.Expr) -> None:
    for node in tree.walk():
        if isinstance(node, exp.MatchRecognize):
            raise Unsupported("MATCH_RECOGNIZE", line_of(node))
        if isinstance(node, exp.Lateral) and not isinstance(node.this, exp.Explode):
            raise Unsupported("LATERAL TABLE (user-defined table functions)", line_of(node))
        if isinstance(node, exp.SimilarTo):
            raise Unsupported("SIMILAR TO", line_of(node))
        if isinstance(node, exp.Anonymous) and node.name.upper() in _UNSUPPORTED_FUNCTIONS:
            raise Unsupported(_UNSUPPORTED_FUNCTIONS[node.name.upper()], line_of(node))
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) and node.this.name.upper() == "TABLE":
            inner = node.this.expressions[0] if node.this.expressions else None
            name = inner.name.upper() if isinstance(inner, exp.Anonymous) else ""
            if name not in WINDOW_TVFS:
                construct = _UNSUPPORTED_FUNCTIONS.get(name, f"table function {name or '?'}")
                raise Unsupported(construct, line_of(node))


# --- VALUES ---------------------------------------------------------------------------------


def _values_select(values: exp.Values) -> exp.Select:
    """VALUES (...), (...) as SELECT c1, ... FROM VALUES ... AS v(c1, ...): Spark's inline table."""
    width = len(values.expressions[0].expressions) if values.expressions else 0
    names = [f"c{i + 1}" for i in range(width)]
    values.set("alias", exp.TableAlias(this=exp.to_identifier("v"), columns=[exp.to_identifier(n) for n in names]))
    return exp.select(*names).from_(values)


# --- window table functions -------------------------------------------------------------------


def _expand_window_tvfs(tree: exp.Expr, columns_of: ColumnsOf, ctes: dict[str, exp.Expr]) -> None:
    """TABLE(TUMBLE|HOP|CUMULATE|SESSION(TABLE t, DESCRIPTOR(c), ...)) -> a derived table adding
    window_start, window_end (TIMESTAMP) and window_time (the time attribute's type)."""
    for table in list(tree.find_all(exp.Table)):
        call = table.this
        if not (isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" and call.expressions):
            continue
        tvf = call.expressions[0]
        line = line_of(tvf)
        args = tvf.expressions
        if len(args) < 3 or not isinstance(args[0], TableArgument) or not (
            isinstance(args[1], exp.Anonymous) and args[1].name.upper() == "DESCRIPTOR"
        ):
            raise Unsupported(f"{tvf.name.upper()} with these arguments", line,
                              "write TABLE t, DESCRIPTOR(time_column), INTERVAL ... positionally")
        source: exp.Table = args[0].this
        time_column = args[1].expressions[0].name
        sizes = [_interval_micros(a, line) for a in args[2:]]
        names = _visible_columns(columns_of, ctes)(source)
        if isinstance(source.this, exp.Identifier) and source.name not in ctes:
            names = [*names, ROWTIME]  # a table's system column, which Flink's TVF output keeps too
        inner_source = source.copy()
        inner_source.set("alias", exp.TableAlias(this=exp.to_identifier("__sl_w_in")))
        columns = ", ".join(f"`__sl_w_in`.`{n}`" for n in names)
        us = f"unix_micros(CAST(`__sl_w_in`.`{time_column}` AS TIMESTAMP))"
        keys = args[0].args.get("partition_by") or []
        if tvf.name.upper() == "SESSION":
            exploded = _sessions(names, us, [k.name for k in keys], sizes, line)
        elif keys:
            raise Unsupported(f"{tvf.name.upper()} with PARTITION BY", line)
        else:
            windows = _window_bounds(tvf.name.upper(), sizes, line)
            exploded = _spark_tree(f"SELECT {columns}, explode({windows.format(us=us)}) AS `__sl_w` "
                                   f"FROM __sl_w_source")
        _only(exploded, exp.Table).replace(inner_source)
        outer = ", ".join(f"`{n}`" for n in names)
        derived = _spark_tree(
            f"SELECT {outer}, CAST(timestamp_micros(`__sl_w`.`s`) AS TIMESTAMP_NTZ) AS `window_start`, "
            f"CAST(timestamp_micros(`__sl_w`.`e`) AS TIMESTAMP_NTZ) AS `window_end`, "
            f"timestamp_micros(`__sl_w`.`e` - 1000) AS `window_time` FROM (__sl_w_inner) AS `__sl_w_out`")
        _only(derived, exp.Subquery).this.replace(exploded)
        for output in derived.expressions:  # not one of the columns `*` stands for
            output.meta[SYSTEM] = output.alias_or_name == ROWTIME
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(source.name))
        table.replace(exp.Subquery(this=derived, alias=alias))


def _only(tree: exp.Expr, kind: type[_Node]) -> _Node:
    """The node of `kind` a template tree holds (there is one by construction)."""
    found = tree.find(kind)
    assert found is not None, f"no {kind.__name__} in {tree.sql()}"
    return found


def _spark_tree(spark_sql: str) -> exp.Expr:
    """Spark SQL the translator writes itself, marked so the Flink rewrites leave it alone."""
    tree = sqlglot.parse_one(spark_sql, read="spark")
    for node in tree.walk():
        node.meta["spark"] = True
    return tree


def _sessions(names: list[str], us: str, keys: list[str], sizes: list[int], line: int) -> exp.Expr:
    """The records of a SESSION TVF with their session's (s, e) bounds in micros as `__sl_w`: per
    partition key, in time order, a record at most the gap after the previous one joins its session
    (Flink merges the windows [t, t + gap) that overlap or touch); s is its first time, e its last + gap."""
    if len(sizes) != 1:
        raise Unsupported(f"SESSION with {len(sizes)} interval argument(s)", line)
    gap = sizes[0]
    by = f"PARTITION BY {', '.join(f'`{k}`' for k in keys)} " if keys else ""
    outer = ", ".join(f"`{n}`" for n in names)
    columns = ", ".join(f"`__sl_w_in`.`{n}`" for n in names)
    opens = (f"CASE WHEN `__sl_us` - lag(`__sl_us`) OVER ({by}ORDER BY `__sl_us`) <= {gap} THEN 0 ELSE 1 END")
    numbered = f"sum(`__sl_opens`) OVER ({by}ORDER BY `__sl_us` ROWS UNBOUNDED PRECEDING)"
    session = f"{by.rstrip()}{', ' if keys else 'PARTITION BY '}`__sl_session`"
    return _spark_tree(
        f"SELECT {outer}, named_struct('s', min(`__sl_us`) OVER ({session}), "
        f"'e', max(`__sl_us`) OVER ({session}) + {gap}) AS `__sl_w` FROM ("
        f"SELECT {outer}, `__sl_us`, {numbered} AS `__sl_session` FROM ("
        f"SELECT {outer}, `__sl_us`, {opens} AS `__sl_opens` FROM ("
        f"SELECT {columns}, {us} AS `__sl_us` FROM __sl_w_source) AS `__sl_w_times`) AS `__sl_w_opens`) "
        f"AS `__sl_w_sessions`")


def _window_bounds(kind: str, sizes: list[int], line: int) -> str:
    """Spark SQL for the array of (s, e) window bounds in micros of a record at {us}."""
    if kind == "TUMBLE" and len(sizes) == 1:
        size = sizes[0]
        return f"array(named_struct('s', {{us}} - pmod({{us}}, {size}), 'e', {{us}} - pmod({{us}}, {size}) + {size}))"
    if kind == "HOP" and len(sizes) == 2:
        slide, size = sizes
        if size % slide:
            raise Unsupported("HOP with a size that is not a multiple of its slide", line)
        last = f"({{us}} - pmod({{us}}, {slide}))"
        return (f"transform(sequence({last} - {size - slide}, {last}, {slide}), "
                f"x -> named_struct('s', x, 'e', x + {size}))")
    if kind == "CUMULATE" and len(sizes) == 2:
        step, size = sizes
        if size % step:
            raise Unsupported("CUMULATE with a max size that is not a multiple of its step", line)
        start = f"({{us}} - pmod({{us}}, {size}))"
        first_end = f"({start} + (floor(({{us}} - {start}) / {step}) + 1) * {step})"
        return (f"transform(sequence(CAST({first_end} AS BIGINT), {start} + {size}, {step}), "
                f"x -> named_struct('s', {start}, 'e', x))")
    raise Unsupported(f"{kind} with {len(sizes)} interval argument(s)", line)


def _interval_micros(node: exp.Expr, line: int) -> int:
    if isinstance(node, exp.Interval) and node.this is not None and interval_unit(node) is not None:
        unit = str(interval_unit(node)).rstrip("S")
        if unit in _MICROS and node.this.name.strip().isdigit():
            return int(node.this.name.strip()) * _MICROS[unit]
    raise Unsupported(f"window size {node.sql()}", line, "use INTERVAL 'n' SECOND|MINUTE|HOUR|DAY")


# --- SELECT * -------------------------------------------------------------------------------


def _expand_stars(tree: exp.Expr, columns_of: ColumnsOf, ctes: dict[str, exp.Expr]) -> None:
    """`*` and `t.*` -> the visible columns, by the rule column lineage uses too (project/stars.py); a
    VALUES a star reads without a column list gets Flink's names for its columns (EXPR$0, ...) first."""
    for values in list(tree.find_all(exp.Values)):
        alias = values.args.get("alias")
        select = values.find_ancestor(exp.Select)
        starred = select is not None and any(e.is_star for e in select.expressions)
        if starred and isinstance(values.parent, (exp.From, exp.Join)) and not (alias and alias.columns):
            alias = alias or exp.TableAlias()
            width = len(values.expressions[0].expressions)
            alias.set("columns", [exp.to_identifier(f"{DERIVED}{i}") for i in range(width)])
            values.set("alias", alias)
    expand_stars(tree, _visible_columns(columns_of, ctes))


def _visible_columns(columns_of: ColumnsOf, ctes: dict[str, exp.Expr]) -> Callable[[exp.Table], list[str]]:
    """What `*` over a table stands for: a CTE's output names (its own stars expanded), else `columns_of`."""

    def visible(table: exp.Table) -> list[str]:
        if not table.args.get("db") and table.name in ctes:
            return _output_names(ctes[table.name], visible)
        if isinstance(table.this, exp.Identifier):
            return columns_of(table)
        raise Unsupported(f"SELECT * over {table.sql()}", line_of(table), "name the columns")

    return visible


def _output_names(query: exp.Expr, visible: VisibleColumns) -> list[str]:
    if isinstance(query, exp.Subquery):
        return _output_names(query.this, visible)
    if isinstance(query, exp.SetOperation):
        return _output_names(query.left, visible)
    if isinstance(query, exp.Select):
        expand_stars(query, visible)
        return [e.alias_or_name for e in query.expressions if not e.meta.get(SYSTEM)]
    raise Unsupported(f"SELECT * over {query.key.upper()}", line_of(query))


# --- event-time operators -------------------------------------------------------------------

_EVENT_TIME, _LATE, _CLEARINGS, _OVER_FILTERS = "event_time", "late", "clearings", "over_filters"
_rules = itertools.count()  # a bounded OVER's number, naming the WHEREs that decide its rows (_over_filters)
_RANKINGS = (exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank, exp.CumeDist)  # Flink's Rank, no event time


def _mark_event_time_inputs(tree: exp.Expr, ctes: dict[str, exp.Expr]) -> None:
    """Tag the base tables feeding an operator that emits on the watermark with the time column it
    reads them by: an OVER aggregate ORDER BY one column, a ROW_NUMBER() ... ORDER BY c ASC kept
    at 1 (Flink's keep-first deduplication; keep-last emits at once), and the probe side of a
    temporal join FOR SYSTEM_TIME AS OF a column. The engine keeps the tag only where the column is
    the table's time attribute (otherwise Flink runs no event-time operator)."""
    for window in list(tree.find_all(exp.Window)):
        select = window.find_ancestor(exp.Select)
        order = _window_order(window, select)
        if select is None or order is None:
            continue
        if isinstance(window.this, exp.RowNumber):
            if order.args.get("desc") or not _kept_at_one(window, select):
                continue
            late = LateRule("before")
        elif isinstance(window.this, _RANKINGS):
            continue
        else:
            late = _over_late_rule(_window_definition(window, select), select, order.this.name, ctes)
        _mark_inputs(select, order.this.name, ctes, probe=False, late=late)
    for join in list(tree.find_all(exp.Join)):
        version = join.this.args.get("version") if isinstance(join.this, exp.Table) else None
        joined = join.parent
        if version is not None and isinstance(version.expression, exp.Column) and isinstance(joined, exp.Select):
            _mark_inputs(joined, version.expression.name, ctes, probe=True, late=None)


def _window_definition(window: exp.Window, select: exp.Select | None) -> exp.Window:
    """The OVER's specification: its own, or the named WINDOW's it refers to."""
    if window.args.get("order") is None and not window.args.get("partition_by") and select is not None:
        name = window.alias
        return next((w for w in select.args.get("windows") or [] if w.this.name == name), window)
    return window


def _over_late_rule(definition: exp.Window, select: exp.Select, time: str, ctes: dict[str, exp.Expr]) -> LateRule:
    """Flink's rule for an OVER aggregate ordered by time: unbounded (the default frame) drops rows not
    after the watermark; bounded (ROWS n / RANGE interval PRECEDING) those not later than their key's last.
    Where the OVER reads one table only filtered and projected (_plain_input), the rule knows which rows
    the OVER sees (their WHERE, replayed by late_rows.py), and a RANGE frame also partitions by the key's
    clearings (CLEARINGS, carried up from the table's view), once."""
    spec = definition.args.get("spec")
    if spec is None or str(spec.args.get("start") or "").upper() == "UNBOUNDED":
        return LateRule("after")
    keys = [k for k in definition.args.get("partition_by") or [] if k.name != CLEARINGS]
    plain = all(isinstance(k, exp.Column) for k in keys)
    names = tuple(k.name for k in keys) if plain else ()
    span = interval_ms(spec.args.get("start")) if str(spec.args.get("kind") or "").upper() == "RANGE" else None
    found = _plain_input(select, ctes, {time, *names}) if plain else None
    if found is None:
        return LateRule("key", names)
    table, chain = found
    wheres = [s for s in [select, *chain] if s.args.get("where") is not None]
    if any(s.args["where"].find(exp.Select) for s in wheres):  # (a subquery's rows are not the table's)
        return LateRule("key", names)
    rule = next(_rules)
    for filtering in wheres:
        filtering.meta.setdefault(_OVER_FILTERS, set()).add(rule)
    table.meta[_OVER_FILTERS] = rule
    if span is None:
        return LateRule("key", names)
    table.meta[_CLEARINGS] = True
    if len(keys) == len(definition.args.get("partition_by") or []):
        definition.append("partition_by", _passed_up(CLEARINGS, select, chain))
    return LateRule("key", names, span)


def _passed_up(column: str, select: exp.Select, chain: list[exp.Select]) -> exp.Column:
    """A hidden column of the table's view (CLEARINGS, ARRIVAL) as `select` reads it: each derived table
    or CTE of the chain (_plain_input) passes its input's on, once."""
    for inner in reversed(chain):
        if column not in inner.named_selects:
            source = inner.args["from_"].this.alias_or_name
            inner.append("expressions", exp.alias_(exp.column(column, table=source, quoted=True), column, quoted=True))
    return exp.column(column, table=select.args["from_"].this.alias_or_name, quoted=True)


def _plain_input(select: exp.Select, ctes: dict[str, exp.Expr],
                 passed: set[str]) -> tuple[exp.Table, list[exp.Select]] | None:
    """The base table a SELECT reads alone, directly or through derived tables and CTEs that only filter
    and project it (no join, aggregation, DISTINCT, OVER, LIMIT or set operation), each passing on by name
    the `passed` columns and those its outer WHEREs read; with those SELECTs, outermost first. None when
    the SELECT reads anything else."""
    chain: list[exp.Select] = []
    current = select
    needed = set(passed)
    while True:
        needed |= _where_columns(current)
        from_ = current.args.get("from_")
        if from_ is None or current.args.get("joins") or current.args.get("laterals"):
            return None
        relation = from_.this
        if isinstance(relation, exp.Table) and isinstance(relation.this, exp.Identifier) and \
                relation.args.get("version") is None and (relation.args.get("db") or relation.name not in ctes):
            return relation, chain
        inner = ctes.get(relation.name) if isinstance(relation, exp.Table) and not relation.args.get("db") else \
            relation.this if isinstance(relation, exp.Subquery) else None
        if not isinstance(inner, exp.Select) or not _filters_and_projects(inner, needed):
            return None
        chain.append(inner)
        current = inner


def _filters_and_projects(select: exp.Select, passed: set[str]) -> bool:
    """A SELECT that only filters and projects its one input, passing the `passed` columns on by name."""
    if any(select.args.get(arg) for arg in ("group", "having", "distinct", "limit", "offset", "qualify", "windows")):
        return False
    if any(node for projection in select.expressions for node in projection.find_all(exp.Window, exp.AggFunc)):
        return False
    through = {p.name for p in select.expressions if isinstance(p, exp.Column)} | {
        p.alias for p in select.expressions if isinstance(p, exp.Alias) and isinstance(p.this, exp.Column)
        and p.this.name == p.alias}
    return passed <= through


def _where_columns(select: exp.Select) -> set[str]:
    where = select.args.get("where")
    return {c.name for c in where.find_all(exp.Column)} if where is not None else set()


def _over_filters(tree: exp.Expr) -> dict[int, str]:
    """Per bounded OVER (its rule's number), the WHERE conditions deciding the rows it sees, as Spark SQL
    over its table's columns (read after the translation rewrote them)."""
    conditions: dict[int, list[str]] = {}
    for select in tree.find_all(exp.Select):
        for rule in select.meta.get(_OVER_FILTERS, ()):
            condition = select.args["where"].this.copy()
            for column in condition.find_all(exp.Column):
                column.set("table", None)
            conditions.setdefault(rule, []).append(f"({spark_sql(condition)})")
    return {rule: " AND ".join(found) for rule, found in conditions.items()}


def _window_order(window: exp.Window, select: exp.Select | None) -> exp.Ordered | None:
    """The one ORDER BY column of an OVER (inline or a named WINDOW), else None."""
    if isinstance(window.this, exp.Identifier) or isinstance(window.parent, exp.Select) and \
            window in (window.parent.args.get("windows") or []):
        return None  # a WINDOW w AS (...) definition itself
    order = _window_definition(window, select).args.get("order")
    if order is None or len(order.expressions) != 1 or not isinstance(order.expressions[0].this, exp.Column):
        return None
    return order.expressions[0]


def _kept_at_one(window: exp.Window, select: exp.Select) -> bool:
    """ROW_NUMBER() AS rn in a derived table whose outer query keeps rn = 1 (or rn <= 1, rn < 2)."""
    alias = window.parent.alias if isinstance(window.parent, exp.Alias) else None
    outer = select.parent.parent.parent if isinstance(select.parent, exp.Subquery) and \
        isinstance(select.parent.parent, exp.From) else None
    where = outer.args.get("where") if isinstance(outer, exp.Select) else None
    if alias is None or where is None:
        return False
    for node in where.find_all(exp.EQ, exp.LTE, exp.LT):
        bound = {exp.EQ: "1", exp.LTE: "1", exp.LT: "2"}[type(node)]
        if isinstance(node.this, exp.Column) and node.this.name == alias and \
                isinstance(node.expression, exp.Literal) and node.expression.name == bound:
            return True
    return False


def _mark_inputs(select: exp.Select, column: str, ctes: dict[str, exp.Expr], *, probe: bool,
                 late: LateRule | None) -> None:
    """Tag the base tables of the select's FROM and joins (only its FROM when the operator is a
    temporal join: the probe side), through derived tables and CTEs."""
    from_ = select.args.get("from_")
    relations = ([from_.this] if from_ else []) + ([] if probe else [j.this for j in select.args.get("joins") or []])
    for relation in relations:
        _mark_tables(relation, column, ctes, late)


def _mark_tables(node: exp.Expr, column: str, ctes: dict[str, exp.Expr], late: LateRule | None) -> None:
    for table in node.find_all(exp.Table):
        if table.args.get("version") is not None:
            continue  # a temporal join's versioned side is read whole
        if not table.args.get("db") and table.name in ctes:
            _mark_tables(ctes[table.name], column, ctes, late)
        elif isinstance(table.this, exp.Identifier):
            table.meta[_EVENT_TIME], table.meta[_LATE] = column, late


# --- arrival order ---------------------------------------------------------------------------

_ARRIVAL, _ARRIVAL_LAST, _ARRIVAL_SORTED = "arrival", "arrival_last_by", "arrival_sorted"


def _order_by_arrival(tree: exp.Expr, ctes: dict[str, exp.Expr]) -> None:
    """Where Flink's result follows arrival order, order by it too: a ROW_NUMBER's ties (Flink's Top-N
    keeps the row that came first; keep-last deduplication the one that came last), the rows of an OVER
    with a ROWS frame that tie on its ORDER BY (Flink's operator takes a timestamp's rows as they came; a
    RANGE frame makes them peers) and ARRAY_AGG's elements (appended as they come; an updated row's
    element retracted and appended again). Only over one base table (its view then carries ARRIVAL): an
    OVER's read directly or through derived tables and CTEs that filter and project it (_plain_input),
    ARRAY_AGG's directly; elsewhere the order stays Spark's."""
    ordered: set[int] = set()  # the definitions ordered by arrival already (a named WINDOW serves several)
    for window in list(tree.find_all(exp.Window)):
        select = window.find_ancestor(exp.Select)
        found = _plain_input(select, ctes, set()) if select is not None else None
        if isinstance(window.this, exp.Identifier) or found is None or select is None:
            continue  # a named WINDOW's definition: ordered through the OVERs that use it
        table, chain = found
        definition = _window_definition(window, select)
        order = definition.args.get("order")
        if order is None or id(definition) in ordered or not (
                isinstance(window.this, exp.RowNumber) or _rows_frame(definition)):
            continue
        ordered.add(id(definition))
        table.meta[_ARRIVAL] = True
        first = order.expressions[0]
        if isinstance(window.this, exp.RowNumber) and len(order.expressions) == 1 and first.args.get("desc") \
                and isinstance(first.this, exp.Column) and _kept_at_one(window, select) and not chain:
            table.meta[_ARRIVAL_LAST] = first.this.name
        order.append("expressions", exp.Ordered(this=_passed_up(ARRIVAL, select, chain)))
    for aggregate in list(tree.find_all(exp.ArrayAgg)):
        outer = aggregate.find_ancestor(exp.Select)
        found = _plain_input(outer, ctes, set()) if outer is not None else None
        read = found[0] if found is not None and not found[1] else None  # (read directly only)
        if read is not None and not isinstance(aggregate.parent, exp.Window):
            read.meta[_ARRIVAL] = True
            aggregate.meta[_ARRIVAL_SORTED] = exp.column(ARRIVAL, table=read.alias_or_name, quoted=True)


def _rows_frame(definition: exp.Window) -> bool:
    """Whether an OVER's frame counts rows (ROWS BETWEEN ...), not peers of equal order (RANGE, the default)."""
    spec = definition.args.get("spec")
    return spec is not None and str(spec.args.get("kind") or "").upper() == "ROWS"


def _replace_tables(tree: exp.Expr, cte_names: set[str]) -> list[Scan]:
    """Every base table -> a view `sl_<n>` aliased as the table (qualified columns still resolve).

    A temporal join's table (FOR SYSTEM_TIME AS OF t) becomes its versions view,
    and the join keeps the version valid at t: valid_from <= t < valid_to.
    """
    scans: list[Scan] = []
    for table in list(tree.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            continue
        if not table.args.get("db") and table.name in cte_names:
            continue
        hints = table.args.get("hints") or []
        options = {k: v for h in hints if isinstance(h, OptionsHint) for k, v in h.options.items()}
        version = table.args.get("version")
        scan = Scan(view=f"sl_{next(_views)}", table=table.copy(), options=options, versioned=version is not None,
                    event_time=table.meta.get(_EVENT_TIME), late=table.meta.get(_LATE),
                    arrival=bool(table.meta.get(_ARRIVAL)), arrival_last_by=table.meta.get(_ARRIVAL_LAST),
                    clearings=bool(table.meta.get(_CLEARINGS)),
                    interval_time=table.meta.get(INTERVAL_TIME))
        scans.append(scan)
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
        replacement = exp.Table(this=exp.to_identifier(scan.view), alias=alias)
        if version is not None:
            _temporal_condition(table, version, alias.name)
        table.replace(replacement)
    return scans


def _temporal_condition(table: exp.Table, version: exp.Version, alias: str) -> None:
    join = table.parent
    if not isinstance(join, exp.Join) or join.args.get("on") is None:
        raise Unsupported("FOR SYSTEM_TIME AS OF outside a JOIN ... ON", line_of(table))
    if (join.side or "").upper() not in ("", "LEFT"):
        raise Unsupported(f"{join.side.upper()} temporal join", line_of(table), "use JOIN or LEFT JOIN")
    at = version.expression
    valid_from = exp.column(VALID_FROM, table=alias, quoted=True)
    valid_to = exp.column(VALID_TO, table=alias, quoted=True)
    within = exp.and_(
        exp.LTE(this=valid_from, expression=at.copy()),
        exp.paren(exp.or_(exp.Is(this=valid_to, expression=exp.Null()), exp.LT(this=at.copy(), expression=valid_to))),
    )
    join.set("on", exp.and_(join.args["on"], within))


# --- functions and types ---------------------------------------------------------------------


def _type_row_branches(tree: exp.Expr) -> None:
    """ROW(...) beside a CAST(... AS ROW<...>) in CASE, IF or COALESCE takes the cast's type: Flink
    unifies ROW types by position, Spark's CASE wants one struct type (field names included)."""
    for node in list(tree.find_all(exp.Case, exp.If, exp.Coalesce)):
        if isinstance(node, exp.If) and isinstance(node.parent, exp.Case):
            continue  # a CASE branch: its CASE sees it
        branches = _branches(node)
        typed = next((b.to for b in branches if isinstance(b, exp.Cast) and b.to.is_type(exp.DataType.Type.STRUCT)),
                     None)
        if typed is None:
            continue
        for branch in branches:
            if isinstance(branch, exp.Anonymous) and branch.name.upper() == "ROW":
                branch.replace(exp.Cast(this=branch.copy(), to=typed.copy()))


def _branches(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Case):
        return [i.args["true"] for i in node.args.get("ifs") or []] + [d for d in [node.args.get("default")] if d]
    if isinstance(node, exp.If):
        return [b for b in (node.args.get("true"), node.args.get("false")) if b is not None]
    return [node.this, *node.expressions]


def rewrite_bottom_up(tree: exp.Expr, precisions: Mapping[str, int]) -> exp.Expr:
    """Every node rewritten after its children, so a call inside another's arguments is translated
    too (TO_TIMESTAMP(JSON_VALUE(...))); an unsupported call fails naming itself and its line."""
    for child in list(tree.iter_expressions()):
        rewrite_bottom_up(child, precisions)
    if tree.meta.get("spark"):
        return tree
    line = line_of(tree) if isinstance(tree, (exp.Func, exp.Binary)) else 0
    try:
        new = _rewrite_node(tree, precisions)
    except UnknownFunction as error:
        hint = "" if error.name in FUNCTIONS else \
            "it is no Flink built-in function (user-defined functions do not run locally)"
        raise Unsupported(error.reason, line or line_of(tree), hint) from None
    if new is not tree:
        tree.replace(new)
    return new


def _rewrite_node(node: exp.Expr, precisions: Mapping[str, int]) -> exp.Expr:
    if isinstance(node, exp.Anonymous):
        return _rewrite_function(node)
    if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.TEXT:
        return _cast_to_string(node, precisions)
    if isinstance(node, exp.Cast) and node.to.this in _PARSED_FROM_STRING:
        return _cast_from_string(node)
    if isinstance(node, exp.Column) and not node.table and not node.this.quoted \
            and node.name.upper() in ("LOCALTIMESTAMP", "LOCALTIME", "CURRENT_TIME"):
        if node.name.upper() != "LOCALTIMESTAMP":
            raise UnknownFunction(node.name.upper(), f"{node.name.upper()} (the TIME type)")
        return exp.Anonymous(this="localtimestamp", expressions=[])
    if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column) and node.this.name.upper() == "MAP" \
            and not node.this.this.quoted and not node.this.table:
        return exp.Anonymous(this="map", expressions=node.expressions)
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        # a[i] (1-based, Spark's [] is 0-based) or m[k]: try_element_at reads both, NULL when absent, as Flink
        return exp.Anonymous(this="try_element_at", expressions=[node.this, node.expressions[0]])
    if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
        return _floor_ceil(node)
    if isinstance(node, exp.TimestampDiff) and isinstance(node.this, exp.Column) \
            and node.this.name.upper() in ("SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"):
        # The generic parser read TIMESTAMPDIFF(unit, a, b) as (this=unit, expression=a, unit=b).
        end, unit = node.args["unit"], node.this.name.upper()
        end = exp.column(end.name) if isinstance(end, exp.Var) else end
        if unit in _MONTHS_IN:
            return exp.IntDiv(this=exp.Paren(this=_months_between(node.expression, end)),
                              expression=exp.Literal.number(_MONTHS_IN[unit]))
        return exp.Anonymous(this="timestampdiff", expressions=[exp.var(unit), node.expression, end])
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.JSON):
        return _is_json(node.this, node.expression)
    if isinstance(node, exp.ArrayAgg) and not isinstance(node.parent, exp.Window):
        # Flink keeps NULL elements; Spark's collect_list drops NULLs, never a struct holding one.
        arrival = node.meta.get(_ARRIVAL_SORTED)
        if arrival is not None:  # in arrival order (_order_by_arrival)
            return spark_template("transform(array_sort(collect_list(named_struct('a', {a}, 'v', {v}))), "
                                  "__sl_e -> __sl_e.v)", a=arrival, v=node.this)
        return spark_template("transform(collect_list(named_struct('v', {v})), __sl_e -> __sl_e.v)", v=node.this)
    if isinstance(node, exp.DataType):
        return _spark_data_type(node)
    return translate_typed(node)


def _is_json(value: exp.Expr, predicate: exp.JSON) -> exp.Expr:
    """`v IS JSON [VALUE|SCALAR|ARRAY|OBJECT]`: whether the text parses as JSON (of that kind); FALSE for
    NULL, as Flink's. Spark parses it as a VARIANT, whose schema names its kind."""
    kind = (predicate.this.name if isinstance(predicate.this, exp.Expr) else str(predicate.this or "VALUE")).upper()
    shape = "schema_of_variant(try_parse_json({v}))"
    test = {"VALUE": "try_parse_json({v}) IS NOT NULL",
            "OBJECT": f"startswith({shape}, 'OBJECT')", "ARRAY": f"startswith({shape}, 'ARRAY')",
            "SCALAR": f"NOT (startswith({shape}, 'OBJECT') OR startswith({shape}, 'ARRAY'))"}.get(kind)
    if test is None:
        raise Unsupported(f"IS JSON {kind}", line_of(predicate))
    return spark_template(f"coalesce({test}, false)", v=value)


def _rewrite_function(node: exp.Anonymous) -> exp.Expr:
    name, args = node.name.upper(), node.expressions
    if name == "ROW":
        return exp.Anonymous(this="struct", expressions=args)
    if name == "TIMESTAMPADD" and len(args) == 3 and isinstance(args[0], exp.Column) and not args[0].table:
        return exp.Anonymous(this="timestampadd", expressions=[exp.var(args[0].name.upper()), args[1], args[2]])
    if name == "PROCTIME" and not args:
        return exp.CurrentTimestamp()
    if name == "CURRENT_WATERMARK":
        # Runs recompute over all input in order: no record is late, as before any watermark.
        return exp.cast(exp.Null(), exp.DataType.build("TIMESTAMP", dialect="spark"))
    if name == "LISTAGG" and args:  # Spark's listagg is NULL over only NULLs, as Flink's; its default separator is ''
        separator = args[1] if len(args) > 1 else exp.Literal.string(",")
        return exp.Anonymous(this="listagg", expressions=[args[0], separator])
    if name == "TO_TIMESTAMP_LTZ" and len(args) == 2 and isinstance(args[1], exp.Literal) and not args[1].is_string:
        unit = {"0": "timestamp_seconds", "3": "timestamp_millis", "6": "timestamp_micros"}.get(args[1].name)
        if unit is None:
            raise Unsupported(f"TO_TIMESTAMP_LTZ with precision {args[1].name}", line_of(node), "use 0, 3 or 6")
        return exp.Anonymous(this=unit, expressions=[args[0]])
    if name == "TO_TIMESTAMP_LTZ" and args:
        return exp.Anonymous(this="to_timestamp", expressions=args)
    if name == "TO_TIMESTAMP" and args:
        pattern = args[1] if len(args) > 1 else exp.Literal.string("yyyy-MM-dd HH:mm:ss")
        return exp.Anonymous(this="to_timestamp_ntz", expressions=[args[0], pattern])
    return translate_call(node)


def _cast_to_string(node: exp.Cast, precisions: Mapping[str, int]) -> exp.Expr:
    """CAST(x AS STRING) printed as Flink prints: a BOOLEAN as TRUE or FALSE, a timestamp with as many
    fraction digits as its precision (a column's declared one, else 3: what Flink's time functions
    return). Spark's type of x picks the branch when it analyses the query (typeof folds away)."""
    operand = node.this
    digits = precisions.get(operand.name.lower(), 3) if isinstance(operand, exp.Column) else 3
    pattern = "yyyy-MM-dd HH:mm:ss" + ("." + "S" * digits if digits else "")
    kind = exp.Anonymous(this="typeof", expressions=[operand.copy()])
    timestamp = exp.Anonymous(this="date_format", expressions=[
        exp.Anonymous(this="to_timestamp_ntz", expressions=[exp.cast(operand.copy(), "STRING")]),
        exp.Literal.string(pattern)])
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=kind, expression=exp.Literal.string("boolean")),
               true=exp.Upper(this=exp.cast(operand.copy(), "STRING"))),
        exp.If(this=exp.In(this=kind.copy(), expressions=[exp.Literal.string("timestamp"),
                                                           exp.Literal.string("timestamp_ntz")]), true=timestamp),
    ], default=node.copy())


_INTEGERS = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT}
_PARSED_FROM_STRING = _INTEGERS | {exp.DataType.Type.DATE, exp.DataType.Type.DECIMAL}
# A Flink integer: spaces around, a sign, digits, and a fraction Flink checks and drops ('.5' is 0).
_INTEGER = r"^ *[+-]?([0-9]+([.][0-9]*)?|[.][0-9]*) *$"
# A Flink date, whitespace trimmed and cut at a space: a year of up to 4 digits, a month, a day.
_DATE = r"^[0-9][0-9]?[0-9]?[0-9]?(-[0-9][0-9]?)?(-[0-9][0-9]?)?$"
# A Flink decimal of up to 18 digits from up to 18 characters: blanks around, a sign, digits with a
# point, an exponent; its parser reads the character that ends the digits (or the exponent's) without
# checking it, so '1x' is 1 and 'x' is 0. Groups: integer digits, fraction digits, exponent.
_FAST_DECIMAL = r"^[ \n\t]*[+-]?([0-9]*)(?:[.]([0-9]*))?(?:[eE]([+-]?[0-9]*)[^0-9]?|[^eE0-9.])?[ \n\t]*$"
_FAST_DIGITS = 18


def _cast_from_string(node: exp.Cast) -> exp.Expr:
    """CAST of a STRING to an integer type or DATE, parsed as Flink parses it: a decimal string
    truncated to its integer ('-3.9' is -3), a year or a year-month read as their first day ('42' is
    0042-01-01, '2026-3' is 2026-03-01), a timestamp read as its date. What Flink can not parse is
    NULL for TRY_CAST; CAST leaves it to Spark's cast, which fails on it as Flink does. Spark's type
    of x picks the branch when it analyses the query (typeof folds away). A number that does not fit
    the DECIMAL is NULL, as Flink makes it (DecimalData.fromBigDecimal), where Spark's cast fails."""
    operand, kind = node.this, node.to
    other: exp.Expr = exp.TryCast(this=operand.copy(), to=kind.copy(), safe=True) \
        if kind.this == exp.DataType.Type.DECIMAL else node
    if kind.this in _INTEGERS and not isinstance(node, exp.TryCast):
        other = _narrowed(operand, kind, node)
    if _never_a_string(operand):  # (the parse would be a branch Spark analyses and optimizes for nothing)
        return other
    if kind.this in _INTEGERS:  # sign and integer digits, a 0 between: '-.5' is -0
        parsed = spark_template(f"CASE WHEN regexp_like({{s}}, '{_INTEGER}') THEN regexp_replace("
                                f"regexp_extract({{s}}, '^ *([+-]?[0-9]*)', 1), '^([+-]?)', '$10') END", s=operand)
    elif kind.this == exp.DataType.Type.DECIMAL:
        precision, scale = [int(p.name) for p in kind.expressions] + [10, 0][len(kind.expressions):]
        if precision > _FAST_DIGITS:  # Flink parses it as Java's BigDecimal does, as Spark's cast
            return exp.If(this=exp.EQ(this=exp.Anonymous(this="typeof", expressions=[operand.copy()]),
                                      expression=exp.Literal.string("string")), true=node.copy(), false=other)
        parsed = _fast_decimal(operand, precision, scale)
    else:  # the year padded to 4 digits, as Spark's cast reads it
        head = spark_template(r"regexp_extract(regexp_replace({s}, '^\\s+|\\s+$', ''), '^[^ ]*', 0)", s=operand)
        parsed = spark_template(f"CASE WHEN regexp_like({{d}}, '{_DATE}') THEN concat(repeat('0', "
                                f"4 - length(regexp_extract({{d}}, '^[0-9]+', 0))), {{d}}) END", d=head)
    lax = exp.TryCast(this=parsed, to=kind.copy(), safe=True)
    value = lax if isinstance(node, exp.TryCast) else exp.Coalesce(this=lax, expressions=[node.copy()])
    return exp.If(this=exp.EQ(this=exp.Anonymous(this="typeof", expressions=[operand.copy()]),
                              expression=exp.Literal.string("string")), true=value, false=other.copy())


_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
         exp.DataType.Type.BIGINT: 64}
_WIDER = {8: "'smallint', 'int', 'bigint'", 16: "'int', 'bigint'", 32: "'bigint'", 64: "''"}


def _narrowed(operand: exp.Expr, kind: exp.DataType, cast: exp.Expr) -> exp.Expr:
    """CAST of a number to an integer type too narrow for it, as Flink's generated Java casts it (where
    Spark's ANSI cast fails): a wider integer or a DECIMAL wraps, two's complement of its integer part
    (a DECIMAL truncated: BigDecimal.longValue); a DOUBLE or FLOAT saturates into INT's or BIGINT's range,
    NaN being 0, and then wraps into a narrower type ((byte) (int) d). Any other operand keeps `cast`.
    Spark's type of the operand picks the branch when it analyses the query, so each branch reads the
    number from its text, which every type casts to and the unused branches analyse over."""
    bits = _BITS[kind.this]
    target = kind.sql(dialect="spark")

    def wrapped(value: str) -> str:  # an integral value (no bigger than DECIMAL(38, 0)) into `bits`
        size, half = 2 ** bits, 2 ** (bits - 1)
        rest = f"pmod({value}, {size})"
        return f"CAST(IF({rest} >= {half}, {rest} - {size}, {rest}) AS {target})"

    whole = wrapped("CAST(regexp_extract(CAST({x} AS STRING), '^-?[0-9]+', 0) AS DECIMAL(38, 0))")
    real = "CAST(CAST({x} AS STRING) AS DOUBLE)"
    if bits == 64:
        saturated = (f"CAST(CASE WHEN isnan({real}) THEN 0 WHEN {real} >= 9.223372036854775807E18 THEN "
                     f"9223372036854775807 WHEN {real} <= -9.223372036854775808E18 THEN -9223372036854775808 "
                     f"ELSE CAST({real} AS BIGINT) END AS BIGINT)")
    else:
        as_int = (f"CAST(CASE WHEN isnan({real}) THEN 0 WHEN {real} > 2147483647 THEN 2147483647 WHEN {real} < "
                  f"-2147483648 THEN -2147483648 ELSE {real} END AS INT)")
        saturated = as_int if bits == 32 else wrapped(as_int)
    kind_of = spark_template("typeof({x})", x=operand)
    return exp.If(
        this=spark_template(f"{{k}} IN ({_WIDER[bits]}) OR {{k}} LIKE 'decimal%'", k=kind_of),
        true=spark_template(whole, x=operand),
        false=exp.If(this=spark_template("{k} IN ('float', 'double')", k=kind_of),
                     true=spark_template(saturated, x=operand), false=cast.copy()))


# What Spark never types STRING: arithmetic and SUM/AVG (a DOUBLE over strings), COUNT
_NUMERIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg, exp.Sum, exp.Avg, exp.Count)


def _never_a_string(operand: exp.Expr) -> bool:
    """An operand Spark never types STRING (a number computed, or a number literal): its CAST needs no
    parsing branch."""
    inner = operand.unnest()
    return isinstance(inner, _NUMERIC) or (isinstance(inner, exp.Literal) and not inner.is_string)


def _fast_decimal(operand: exp.Expr, precision: int, scale: int) -> exp.Expr:
    """The number Flink's short-decimal parser reads in a string of up to 18 characters (NULL: none,
    or more integer digits, leading zeros counted, than the precision leaves): digits, point and
    exponent as a string Spark's cast reads, rounding half up as Flink does. A longer string is
    Spark's cast, as Flink's BigDecimal parse."""
    def group(n: int) -> str:
        return f"regexp_extract({{s}}, '{_FAST_DECIMAL}', {n})"

    exponent = f"coalesce(try_cast({group(3)} AS INT), 0)"  # none, or a sign alone: 0
    return spark_template(
        f"CASE WHEN octet_length({{s}}) > {_FAST_DIGITS} THEN {{s}} "
        f"WHEN regexp_like({{s}}, '{_FAST_DECIMAL}') AND NOT regexp_like({{s}}, '^[ \\n\\t]*[+-]?$') "
        f"AND NOT regexp_like({{s}}, '[eE][+-]$') AND length({group(1)}) + {exponent} + {scale} <= {precision} "
        f"THEN concat(CASE WHEN regexp_like({{s}}, '^[ \\n\\t]*-') THEN '-' ELSE '' END, '0', {group(1)}, '.', "
        f"{group(2)}, '0E', {exponent}) END", s=operand)


_MONTHS_IN = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def _months_between(start: exp.Expr, end: exp.Expr) -> exp.Expr:
    """Whole months from start to end as Flink counts them: the most months whose TIMESTAMPADD to start
    is not past end, so 2024-02-29 to 2025-02-28 is 12 (Spark's timestampdiff says 11); negative when
    end is earlier."""
    def forward(a: exp.Expr, b: exp.Expr) -> exp.Expr:
        counted = exp.Anonymous(this="timestampdiff", expressions=[exp.var("MONTH"), a.copy(), b.copy()])
        one_more = exp.Anonymous(this="timestampadd", expressions=[
            exp.var("MONTH"), exp.Add(this=counted.copy(), expression=exp.Literal.number(1)), a.copy()])
        return exp.Add(this=counted, expression=exp.If(this=exp.LTE(this=one_more, expression=b.copy()),
                                                        true=exp.Literal.number(1), false=exp.Literal.number(0)))

    return exp.If(this=exp.LTE(this=start.copy(), expression=end.copy()), true=forward(start, end),
                  false=exp.Neg(this=exp.Paren(this=forward(end, start))))


def _floor_ceil(node: exp.Floor | exp.Ceil) -> exp.Expr:
    unit = node.args["to"].name.upper()
    truncated = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(unit), node.this.copy()])
    if isinstance(node, exp.Floor):
        return truncated
    step = exp.Interval(this=exp.Literal.string("1"), unit=exp.var(unit))
    return exp.If(this=exp.EQ(this=truncated.copy(), expression=node.this.copy()), true=node.this.copy(),
                  false=exp.Add(this=truncated, expression=step))


def _spark_data_type(node: exp.DataType) -> exp.DataType:
    """Flink types in CASTs -> Spark: TIMESTAMP -> TIMESTAMP_NTZ, TIMESTAMP_LTZ -> TIMESTAMP, no precisions."""
    kind = node.this
    T = exp.DataType.Type
    if kind in (T.TIMESTAMP, T.DATETIME):
        return exp.DataType(this=T.TIMESTAMPNTZ)
    if kind in (T.TIMESTAMPLTZ, T.TIMESTAMPTZ):
        return exp.DataType(this=T.TIMESTAMP)
    if kind in (T.VARCHAR, T.CHAR, T.NCHAR, T.NVARCHAR):
        return exp.DataType(this=T.TEXT)
    if kind == T.VARBINARY:
        return exp.DataType(this=T.BINARY)
    if kind == T.LIST and len(node.expressions) == 1:  # MULTISET<T> is held as MAP<T, INT> (element -> count)
        return exp.DataType(this=T.MAP, expressions=[node.expressions[0], exp.DataType(this=T.INT)], nested=True)
    return node


# --- incremental (stateless) queries -------------------------------------------------------------


def _add_hidden_columns(query: exp.Expr, ctes: dict[str, exp.Expr], done: set[int] | None = None) -> None:
    """Each row source of the query passes its input record's op, time and offset through."""
    done = set() if done is None else done
    if id(query) in done:
        return
    done.add(id(query))
    if isinstance(query, exp.Subquery):
        _add_hidden_columns(query.this, ctes, done)
        return
    if isinstance(query, exp.SetOperation):
        _add_hidden_columns(query.left, ctes, done)
        _add_hidden_columns(query.right, ctes, done)
        return
    if not isinstance(query, exp.Select):
        raise Unsupported(f"{query.key.upper()} in a stateless statement", line_of(query))
    source = query.args["from_"].this
    if isinstance(source, exp.Subquery):
        _add_hidden_columns(source, ctes, done)
    elif isinstance(source, exp.Table) and source.name in ctes:
        _add_hidden_columns(ctes[source.name], ctes, done)
    for hidden in HIDDEN:
        query.append("expressions", exp.alias_(exp.column(hidden, table=source.alias_or_name, quoted=True), hidden,
                                              quoted=True))


def translate_expression(flink_sql: str) -> str:
    """Spark SQL of one Flink scalar expression (computed columns)."""
    select = sqlglot.parse_one(f"SELECT {flink_sql}", dialect=FLINK)
    _reject_unsupported(select)
    return spark_sql(rewrite_bottom_up(select.expressions[0], {}))
