"""A corpus case as open-source Flink SQL: the tables, views and input files runner.py creates.

Confluent tables become OSS tables fed the case's rows, read as a caught-up
Confluent statement reads its topics (unbounded: no end-of-input watermark):
- a source is a continuously monitored `filesystem` directory of JSON (`<t>__log`)
  whose last line is an end marker, and a view `<t>` without the marker; an
  upsert source's view keeps the last row per key, which is what Flink makes
  of an upsert topic (ChangelogNormalize; ordered by the event-time attribute
  when there is one: a versioned view, as temporal joins need);
- `$rowtime` (Confluent's record timestamp) is a column only when the DML names
  it, filled from the table's METADATA FROM 'timestamp' column. Without a
  WATERMARK clause it gets Flink's ascending-timestamps strategy ($rowtime -
  1 ms): Confluent's default (a histogram over at least 250 records per
  partition) can not be reproduced on a few records, and this is the local
  service's documented stand-in (local/event_time.py); a declared one is kept;
- the end marker carries the time that brings the source's watermark to the
  case's highest one: what Confluent's idleness detection does once every
  source of a caught-up statement went idle (an operator then takes the highest
  watermark of its inputs), without timers, so the result is deterministic
  (exact while every event-time operator reads the sources directly or through
  multi-input operators, as in every corpus case);
- the sink is `filesystem` (append: Flink refuses updating queries, as
  Confluent does), `blackhole` (upsert: no UPDATE_BEFORE) or `print` (retract),
  so the planner checks the INSERT against the same changelog contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlglot import exp

from shift_left_dagster.project.parsing import parse_one_statement
from shift_left_dagster.translation.intervals import interval_unit
from tests.oracle.corpus import Case, TableSpec, split_insert
from tests.oracle.literals import json_line, json_value, typed
from tests.oracle.partitions import UnplacedError, arrival_watermarks, epoch_ms, partition_of, read_order

ROWTIME = "$rowtime"
DEFAULT_DELAY_MS = 1
DEFAULT_WATERMARK = f"WATERMARK FOR `{ROWTIME}` AS `{ROWTIME}` - INTERVAL '0.001' SECOND"
_UNIT_MS = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
END = "__oracle_end"  # the marker column: its row is the last of a source's file
LAG = "__oracle_lag"  # a row's event time minus the watermark after it (ms), for a table of several partitions
DATA = "{data}"  # where the runner's input files are: replaced at run time (the cache key never sees it)


class CorpusError(ValueError):
    """A case the oracle can not express in open-source Flink as written."""


def uses_rowtime(case: Case) -> bool:
    return ROWTIME in case.dml.lower()


def oss_setup(case: Case) -> tuple[list[str], dict[str, str], list[str]]:
    """The OSS statements creating the case's tables, each source's JSON file, and the log tables
    whose end markers say Flink has read every record."""
    rowtime = uses_rowtime(case)
    if rowtime:
        _refuse_star_over_tables(case, {t.name.lower() for t in case.tables if t.timestamp_column})
    setup: list[str] = []
    files: dict[str, str] = {}
    logs: list[str] = []
    likes = {t.like.source.lower() for t in case.tables if t.like is not None}
    sources = [t for t in case.tables if t.name.lower() != case.sink.lower()]
    # $rowtime has a value only where the DDL maps the record timestamp to a column
    with_rowtime = {t.name for t in sources if rowtime and t.timestamp_column is not None}
    final = max((w for t in sources if (w := _final_watermark(case, t, t.name in with_rowtime)) is not None),
                default=None)
    for table in case.tables:
        if table.name.lower() == case.sink.lower():
            setup.append(_sink_ddl(case, table))
            continue
        add_rowtime = table.name in with_rowtime
        upsert = bool(table.primary_key) and table.changelog_mode == "upsert"
        log = f"{table.name}__log"
        layout = _layout(case, table, add_rowtime)
        files[f"{case.name}/{table.name}/data.json"] = _json_rows(case, table, add_rowtime, final, layout)
        setup.append(_source_ddl(table, log, f"{DATA}/{case.name}/{table.name}", add_rowtime, layout is not None))
        setup.append(_upsert_view(table, log, add_rowtime) if upsert else _append_view(table, log, add_rowtime))
        if table.name.lower() in likes:
            setup.append(_schema_twin(table))
        logs.append(log)
    return setup, files, logs


def _columns(table: TableSpec, add_rowtime: bool) -> list[str]:
    lines = []
    for column in table.columns:
        if column.expression is not None:
            lines.append(f"`{column.name}` AS {column.expression}")
        elif column.metadata_key not in (None, "timestamp"):
            raise CorpusError(f"{table.name}.{column.name}: METADATA FROM '{column.metadata_key}' has no OSS twin")
        elif column.virtual:
            raise CorpusError(f"{table.name}.{column.name}: a VIRTUAL timestamp is the time of the write, which "
                              f"rows can not give")
        else:
            lines.append(f"`{column.name}` {column.type}")
    if add_rowtime:
        lines.append(f"`{ROWTIME}` TIMESTAMP_LTZ(3)")
    return lines


def _source_ddl(table: TableSpec, name: str, path: str, add_rowtime: bool, partitioned: bool) -> str:
    lines = [*_columns(table, add_rowtime), f"`{END}` BOOLEAN"]
    attribute = _time_attribute(table, add_rowtime)
    if partitioned and attribute is not None:  # each row's watermark as the partitions make it (_layout)
        time = f"`{attribute[0]}`"
        lines += [f"`{LAG}` BIGINT", f"WATERMARK FOR {time} AS {time} - `{LAG}` * INTERVAL '0.001' SECOND"]
    elif table.watermark:
        lines.append(table.watermark)
    elif add_rowtime:
        lines.append(DEFAULT_WATERMARK)
    return (f"CREATE TABLE `{name}` (\n  " + ",\n  ".join(lines) + "\n) WITH ('connector' = 'filesystem', "
            f"'path' = '{path}', 'format' = 'json', 'json.fail-on-missing-field' = 'false', "
            f"'source.monitor-interval' = '100 ms')")


def _visible(table: TableSpec, add_rowtime: bool) -> str:
    return ", ".join(f"`{n}`" for n in [c.name for c in table.columns] + ([ROWTIME] if add_rowtime else []))


def _append_view(table: TableSpec, log: str, add_rowtime: bool) -> str:
    return (f"CREATE TEMPORARY VIEW `{table.name}` AS SELECT {_visible(table, add_rowtime)} FROM `{log}` "
            f"WHERE `{END}` IS NULL")


def _upsert_view(table: TableSpec, log: str, add_rowtime: bool) -> str:
    """The last row per key, as Flink reads an upsert topic; by the event-time attribute when the
    table has one (a versioned view, what temporal joins need), else in arrival (file) order."""
    if table.watermark:
        order = f"`{_watermark_column(table.watermark)}`"
    elif add_rowtime:
        order = f"`{ROWTIME}`"
    else:
        order = "PROCTIME()"
    names = _visible(table, add_rowtime)
    keys = ", ".join(f"`{k}`" for k in table.primary_key)
    return (f"CREATE TEMPORARY VIEW `{table.name}` AS SELECT {names} FROM (SELECT {names}, ROW_NUMBER() OVER "
            f"(PARTITION BY {keys} ORDER BY {order} DESC) AS `__oracle_rn` FROM `{log}` WHERE `{END}` IS NULL) "
            f"WHERE `__oracle_rn` = 1")


def _schema_twin(table: TableSpec) -> str:
    """The table with exactly its Confluent columns and key: what a LIKE clause copies."""
    lines = _columns(table, add_rowtime=False)
    if table.watermark:
        lines.append(table.watermark)
    if table.primary_key:
        lines.append(f"PRIMARY KEY ({', '.join(f'`{k}`' for k in table.primary_key)}) NOT ENFORCED")
    return f"CREATE TABLE `{table.name}__schema` ({', '.join(lines)}) WITH ('connector' = 'blackhole')"


def _watermark_column(clause: str) -> str:
    tree = parse_one_statement(f"CREATE TABLE t (c INT, {clause})").tree
    node = tree.find(exp.WatermarkColumnConstraint)
    assert node is not None
    return node.this.name


def sink_mode(case: Case) -> str:
    table = case.table(case.sink)
    return table.options.get("changelog.mode") or _like_mode(case, table)


def _sink_ddl(case: Case, table: TableSpec) -> str:
    mode = sink_mode(case)
    connector = {"append": f"'connector' = 'filesystem', 'path' = '{DATA}/{case.name}/__sink', 'format' = 'json'",
                 "upsert": "'connector' = 'blackhole'", "retract": "'connector' = 'print'"}[mode]
    lines = _columns(table, add_rowtime=False)
    if table.watermark:
        lines.append(table.watermark)
    if table.primary_key:
        lines.append(f"PRIMARY KEY ({', '.join(f'`{k}`' for k in table.primary_key)}) NOT ENFORCED")
    body = f" (\n  {', '.join(lines)}\n)" if lines else ""
    like = ""
    if table.like is not None:
        like = f" LIKE `{table.like.source}__schema` ({' '.join([*table.like.options, 'EXCLUDING OPTIONS'])})"
    return f"CREATE TABLE `{table.name}`{body} WITH ({connector}){like}"


def _like_mode(case: Case, table: TableSpec) -> str:
    if table.like is None:
        return table.changelog_mode
    source = case.table(table.like.source)
    excluded = any(o in ("EXCLUDING ALL", "EXCLUDING OPTIONS") for o in table.like.options)
    return source.changelog_mode if not excluded else table.changelog_mode


def _time_attribute(table: TableSpec, add_rowtime: bool) -> tuple[str, int] | None:
    """The table's event-time attribute and its watermark delay in milliseconds (None: no event time)."""
    if table.watermark is None:
        return (ROWTIME, DEFAULT_DELAY_MS) if add_rowtime else None
    node = parse_one_statement(f"CREATE TABLE t (c INT, {table.watermark})").tree.find(exp.WatermarkColumnConstraint)
    assert node is not None
    column, expression = node.this.name, node.expression
    if isinstance(expression, exp.Column) and expression.name == column:
        return column, 0
    if isinstance(expression, exp.Sub) and isinstance(expression.this, exp.Column) \
            and expression.this.name == column and isinstance(expression.expression, exp.Interval):
        interval = expression.expression
        unit = (interval_unit(interval) or "").rstrip("S")
        if unit in _UNIT_MS:
            return column, int(float(interval.this.name) * _UNIT_MS[unit])
    raise CorpusError(f"{table.name}: {table.watermark} (write `c` or `c - INTERVAL 'n' UNIT`)")


@dataclass(frozen=True)
class _Layout:
    """A table of several partitions with an event time, as Flink reads it (partitions.py): its rows in
    read order, each with its attribute's distance to the watermark after it (ms; None: no watermark
    yet), and the watermark after the last."""

    rows: list[list[Any]]
    lags: list[int | None]
    final: datetime | None


def _layout(case: Case, table: TableSpec, add_rowtime: bool) -> _Layout | None:
    """None for a table of one partition or without an event time: its file order is its read order."""
    attribute = _time_attribute(table, add_rowtime)
    if table.partitions == 1 or attribute is None:
        return None
    columns = [c.name for c in table.insertable]
    if not table.key_columns or any(k not in columns for k in table.key_columns):
        raise CorpusError(f"{table.name}: {table.partitions} partitions with an event time: distribute it by "
                          f"columns rows give (DISTRIBUTED BY HASH(...)), so the oracle knows each row's partition")
    keys = [columns.index(k) for k in table.key_columns]
    types = [table.insertable[i].type for i in keys]
    runs = [case.rows.get(table.name, []), case.more_rows.get(table.name, [])]
    try:
        placed = [[partition_of([typed(row[i], types[n]) for n, i in enumerate(keys)], types, table.partitions)
                   for row in rows] for rows in runs]
    except UnplacedError as error:
        raise CorpusError(f"{table.name}: {error}") from None
    ordered = [[rows[i] for i in read_order([placed[n]])] for n, rows in enumerate(runs)]
    where = [[placed[n][i] for i in read_order([placed[n]])] for n in range(len(runs))]
    times = [_attribute_times(table, attribute[0], rows) for rows in ordered]
    watermarks, final = arrival_watermarks([list(zip(where[n], times[n], strict=True)) for n in range(len(runs))],
                                           attribute[1])
    lags = [None if t is None or w is None else epoch_ms(t) - epoch_ms(w)
            for n in range(len(runs)) for t, w in zip(times[n], watermarks[n], strict=True)]
    return _Layout(rows=[row for rows in ordered for row in rows], lags=lags, final=final)


def _attribute_values(case: Case, table: TableSpec, attribute: str) -> list[datetime]:
    """The event times of the table's rows (the time attribute's values; $rowtime's is the timestamp column)."""
    return [v for v in _attribute_times(table, attribute, case.all_rows(table.name)) if v is not None]


def _attribute_times(table: TableSpec, attribute: str, rows: list[list[Any]]) -> list[datetime | None]:
    """The rows' event times, NULL as None (naive, UTC)."""
    name = table.timestamp_column if attribute == ROWTIME else attribute
    columns = table.insertable
    source = computed_from(table, str(name))
    at = next((i for i, c in enumerate(columns) if c.name == (source or name)), None)
    if at is None:
        raise CorpusError(f"{table.name}: the time attribute {attribute} is not a column rows give (nor "
                          f"TO_TIMESTAMP or CAST of one)")
    kind = "TIMESTAMP(3)" if source else columns[at].type
    values = [typed(row[at], kind) for row in rows]
    return [None if v is None else v.astimezone(UTC).replace(tzinfo=None) if v.tzinfo else v for v in values]


def computed_from(table: TableSpec, name: str) -> str | None:
    """The column a computed time attribute reads, when it is `TO_TIMESTAMP(c)` or `CAST(c AS TIMESTAMP)`
    of a column rows give (its values are then the column's text as a time), else None."""
    column = next((c for c in table.columns if c.name == name), None)
    if column is None or column.expression is None:
        return None
    tree = parse_one_statement(f"SELECT {column.expression}").tree.expressions[0]
    argument = tree.this if isinstance(tree, exp.Cast) else (
        tree.this if isinstance(tree, exp.StrToTime | exp.TsOrDsToTimestamp) else
        tree.expressions[0] if isinstance(tree, exp.Anonymous) and tree.name.upper() == "TO_TIMESTAMP"
        and len(tree.expressions) == 1 else None)
    return argument.name if isinstance(argument, exp.Column) else None


def _final_watermark(case: Case, table: TableSpec, add_rowtime: bool) -> datetime | None:
    """The source's watermark once every row is read (None: no event time, or no row)."""
    attribute = _time_attribute(table, add_rowtime)
    if attribute is None:
        return None
    layout = _layout(case, table, add_rowtime)
    if layout is not None:
        return layout.final
    times = _attribute_values(case, table, attribute[0])
    return max(times) - timedelta(milliseconds=attribute[1]) if times else None


def _json_rows(case: Case, table: TableSpec, add_rowtime: bool, final: datetime | None,
               layout: _Layout | None) -> str:
    """The table's rows as JSON lines (in read order, each with its watermark's lag, for a `layout`),
    then the end marker: a copy of the last row (or a row at the epoch when there is none) whose time
    attribute moves the table's watermark to `final`."""
    columns = table.insertable
    lines = []
    epoch = "1970-01-01 00:00:00"
    record: dict[str, Any] = {c.name: json_value(typed(epoch, c.type), c.type)
                              if c.type.upper().startswith("TIMESTAMP") else None for c in columns}
    if add_rowtime:
        record[ROWTIME] = json_value(typed(epoch, "TIMESTAMP_LTZ(3)"), "TIMESTAMP_LTZ(3)")
    rows = case.all_rows(table.name) if layout is None else layout.rows
    for at, row in enumerate(rows):
        if len(row) != len(columns):
            raise CorpusError(f"{case.name}: a row of {table.name} has {len(row)} values for {len(columns)} columns")
        values = [typed(v, c.type) for v, c in zip(row, columns, strict=True)]
        record = {c.name: json_value(v, c.type) for v, c in zip(values, columns, strict=True)}
        if add_rowtime:
            stamp = values[[c.name for c in columns].index(str(table.timestamp_column))]
            record[ROWTIME] = json_value(typed(stamp, "TIMESTAMP_LTZ(3)"), "TIMESTAMP_LTZ(3)")
        if layout is not None:
            record[LAG] = layout.lags[at]
        lines.append(json_line(record))
    attribute = _time_attribute(table, add_rowtime)
    if attribute is not None and final is not None:
        name, delay = attribute
        end = final + timedelta(milliseconds=delay)
        source = computed_from(table, name)
        if source is not None:  # the text the computed time attribute is read from
            record[source] = end.isoformat(sep=" ", timespec="milliseconds" if end.microsecond else "seconds")
        else:
            kind = "TIMESTAMP_LTZ(3)" if name == ROWTIME else next(c.type for c in columns if c.name == name)
            record[name] = json_value(typed(end, kind), kind)
        if layout is not None:
            record[LAG] = delay
    lines.append(json_line({**record, END: True}))
    return "".join(line + "\n" for line in lines)


def _refuse_star_over_tables(case: Case, names: set[str]) -> None:
    """OSS Flink's `*` would include the oracle's $rowtime column, Confluent's never does."""
    try:
        tree = parse_one_statement(case.dml).tree
    except ValueError:
        return  # a DML our dialect can not read: Flink and the local service say what they make of it
    for star in tree.find_all(exp.Star):
        item = star.parent if isinstance(star.parent, exp.Column) else star
        select = item.parent
        if not isinstance(select, exp.Select) or item not in select.expressions:
            continue  # COUNT(*) and the like
        sources = [select.args["from_"].this] if select.args.get("from_") else []
        sources += [j.this for j in (select.args.get("joins") or [])]
        if any(isinstance(s, exp.Table) and (s.name.lower() in names or not isinstance(s.this, exp.Identifier))
               for s in sources):
            raise CorpusError(f"{case.name}: SELECT * over a table while the dml reads $rowtime: name the columns")


def runner_case(case: Case) -> tuple[dict[str, Any], dict[str, str]]:
    """The runner's spec of one case, and the files it reads."""
    setup, files, logs = oss_setup(case)
    _target, columns, query = split_insert(case.dml)
    listed = f" ({', '.join(f'`{c}`' for c in columns)})" if columns else ""
    spec = {"name": case.name, "setup": setup, "logs": logs, "sink": case.sink, "sink_mode": sink_mode(case),
            "query": query, "insert": f"INSERT INTO `{case.sink}`{listed} {query}", "target_columns": columns,
            "ddls": [t.ddl for t in case.tables]}
    return spec, files
