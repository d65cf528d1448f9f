"""Queries as jobs: INSERT INTO ... SELECT, EXECUTE STATEMENT SET, CREATE TABLE AS, SELECT.

A job reads each source between offsets (offsets.py) and writes each sink a
batch per run. Stateless jobs over append tables are incremental: each run
reads only the offsets not read yet, and each output row keeps its input
record's op and time. Every other job recomputes its query over the state of
its inputs and writes the changelog of the difference against what it wrote
before (its own batches), so an upsert sink ends as Flink would hold it.
Window aggregations are an exception: they append the windows the run's
watermark fired (windows.py, event_time.py). Other event-time operators (OVER
aggregates, keep-first deduplication, event-time temporal joins) recompute over
their inputs without the rows above the run's watermark: a row is emitted in
the run whose watermark passes its time (event_time.py), and without the late
rows their operator dropped (late_rows.py). GROUP BY aggregations over
append-only input are another exception: each run adds its new records to
accumulators kept per key and writes the difference for the keys they touch
(group_aggregation.py). A SELECT appends its changelog to its results
(results.py); in snapshot mode ('sql.snapshot.mode' = 'now') every source is
bounded at its current end, as Confluent Cloud's snapshot queries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, partial, reduce
from typing import cast

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from shift_left_dagster.local.catalog import (
    DELETE,
    INSERT,
    OP,
    ROWTIME,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    ColumnDef,
    TableDef,
    TableId,
    resolve,
    table_from_create,
)
from shift_left_dagster.local.errors import flink_detail
from shift_left_dagster.local.event_time import (
    MIN_WATERMARK,
    arrival_sign,
    check_time_attributes,
    combine,
    idleness,
    interval_args,
    interval_join_times,
    source_watermark,
    watermark_inputs,
    watermark_spec,
)
from shift_left_dagster.local.group_aggregation import (
    BEFORE,
    EMITTED,
    IN_RESULT,
    NEW,
    TOUCHED,
    AggregateStates,
    GroupAggregation,
    NotIncremental,
    merge,
    plan,
    results,
)
from shift_left_dagster.local.interval_reads import (
    gated,
    record_run,
    recorded,
    temporal,
    versions_as_read,
    with_arrivals,
)
from shift_left_dagster.local.late_rows import (
    arrival_watermarks,
    cleared_rows,
    drop_late_rows,
    dropped_rows,
)
from shift_left_dagster.local.literal_rows import LiteralRows, literal_rows
from shift_left_dagster.local.offsets import ScanError, ScanOptions, bound_offsets, scan_options, start_offsets
from shift_left_dagster.local.results import Change, changelog, current, upsert_key
from shift_left_dagster.local.sink_types import sink_type_mismatch
from shift_left_dagster.local.spark import in_row_order
from shift_left_dagster.local.storage import DRIVER_ROWS, TableLogs
from shift_left_dagster.local.store import AggregateState, Batch, RunState, SourceProgress, Store
from shift_left_dagster.local.types import decode_wire, flink_type_name, parse_type, spark_type_of, wire_column
from shift_left_dagster.local.views import TableViews
from shift_left_dagster.local.windows import WindowedQuery, fired_args, gate_windows
from shift_left_dagster.project.analysis import state_reasons
from shift_left_dagster.project.dialect import StatementSet
from shift_left_dagster.project.parsing import Statement
from shift_left_dagster.translation.interval_join import INTERVAL_UNTIL
from shift_left_dagster.translation.spark import (
    HIDDEN,
    HIDDEN_OP,
    HIDDEN_ROWTIME,
    HIDDEN_SEQ,
    SparkQuery,
    translate_query,
)
from shift_left_dagster.values import except_all, same_value, timestamp_precision

MAX_RESULT_ROWS = 100_000
MAX_RESULT_CHANGES = 10_000_000
SNAPSHOT_MODE = "sql.snapshot.mode"
LOG_ORDER = "__sl_order"  # a stateless row's place in its source's log: offset * 4 + op
SELECT_KEY = "select"  # RunState.watermarks key of a SELECT's query (a sink's is its position)


class JobError(ValueError):
    """A query that can not run, in words a person can act on."""


@dataclass
class Sink:
    table: TableDef
    query: SparkQuery
    target: list[str]  # stored columns receiving the query's columns, in order
    incremental: bool
    compared: dict[str, list[str]] = field(default_factory=dict)  # upsert source view -> columns the query reads
    before: str = "keep"  # how -U rows are written: keep (retract sink), drop or delete (upsert sink)
    aggregation: GroupAggregation | None = None  # a GROUP BY run on accumulators kept per key
    groups: list[str] = field(default_factory=list)  # columns holding every GROUP BY key (keyless sink updates)
    shaped: DataFrame | None = None  # a sink reading no table: its rows as validated, which its one run writes
    literal: LiteralRows | None = None  # an INSERT ... VALUES of plain literals: its rows, typed without Spark

    @property
    def windowed(self) -> bool:
        """A window aggregation: each run appends the windows its watermark fired."""
        return isinstance(self.query, WindowedQuery)


@dataclass
class Job:
    name: str
    sql_kind: str
    sinks: list[Sink] = field(default_factory=list)
    select: SparkQuery | None = None
    create: Statement | None = None  # CREATE TABLE AS: the DDL to apply before the first run
    sources: dict[str, TableDef] = field(default_factory=dict)  # view -> table read
    options: dict[str, ScanOptions] = field(default_factory=dict)  # table uid -> how it is scanned
    notes: list[str] = field(default_factory=list)  # what the local service ignored (query hints)
    snapshot: bool = False  # 'sql.snapshot.mode' = 'now': every source bounded at its end when it starts
    idle_partitions: bool = True  # a partition without new records in a run is idle (event_time.py)
    result_key: list[int] | None = None  # a SELECT's upsert key: positions of its GROUP BY columns
    append_only: bool = True  # a SELECT whose result only ever grows

    @property
    def tables(self) -> list[TableDef]:
        """Every table the job reads or writes, as it was compiled against."""
        return list(self.sources.values()) + [s.table for s in self.sinks]

    def queries(self) -> list[tuple[str, SparkQuery]]:
        """(watermark key, query) of each sink, then of the SELECT."""
        keyed = [(str(i), s.query) for i, s in enumerate(self.sinks)]
        return keyed + ([(SELECT_KEY, self.select)] if self.select is not None else [])


@dataclass
class FirstRun:
    """The sinks' DataFrames of a statement's first run, analysed by Spark when it starts (its validation),
    run as they are when the run reads up to the same offsets."""

    job: Job
    upper: dict[str, dict[int, int]]
    records: dict[int, DataFrame]  # sink position -> its shaped records


@dataclass
class RunOutput:
    """One run of a job: whether it had new input, its progress, and what it wrote."""

    advanced: bool
    state: RunState
    batches: list[Batch] = field(default_factory=list)
    results: list[Change] = field(default_factory=list)  # a SELECT's changelog rows to append


def missing_table(table_id: TableId) -> JobError:
    return JobError(f"Table (or view) '{table_id.name}' does not exist or you do not have permission to access it.")


class Jobs:
    def __init__(self, spark: SparkSession, store: Store, logs: TableLogs) -> None:
        self.spark, self.store, self.logs = spark, store, logs
        self.views = TableViews(logs)
        self.aggregates = AggregateStates(logs.root.parent, spark)

    # --- compiling -------------------------------------------------------------------

    def compile(self, name: str, statement: Statement, properties: Mapping[str, str], *,
                starting: bool = False) -> Job:
        """The job of a query statement, analysed by Spark over empty inputs: whatever Spark can not
        run fails here, when the statement is created, never on a later run. `starting`: a statement
        about to start, whose plain sinks (`first_run`) are analysed over their first run's input instead."""
        job = self._compile(name, statement, properties)
        job.snapshot = is_snapshot(properties)
        job.idle_partitions = idleness(properties)
        self.validate(job, statement, [s for s in job.sinks if not (starting and _plain(s)) and s.literal is None])
        return job

    def validate(self, job: Job, statement: Statement, sinks: Sequence[Sink]) -> None:
        with _in_flink_terms(job, statement):
            for sink in sinks:
                frame = self.bind(job, sink.query, empty=True, incremental=sink.incremental)
                shaped = self._checked(job, sink, frame)
                if not sink.query.scans:  # no view to bind: the run's DataFrame is this one
                    sink.shaped = shaped
            if job.select is not None:
                _ = self.bind(job, job.select, empty=True).schema

    def first_run(self, job: Job, statement: Statement, state: RunState) -> FirstRun:
        """The plain sinks' records of a job's next run (its first), analysed now: the validation
        `compile(starting=True)` left to this, failing as it would (JobError in Flink's terms), and the
        DataFrames the run then writes without analysing its query again."""
        upper = self._upper(job, state)
        first = FirstRun(job=job, upper=upper, records={})
        with _in_flink_terms(job, statement):
            for index, sink in enumerate(job.sinks):
                if _plain(sink):
                    frame = self.bind(job, sink.query, state, upper, incremental=sink.incremental)
                    first.records[index] = self._checked(job, sink, frame)
        return first

    def _checked(self, job: Job, sink: Sink, frame: DataFrame) -> DataFrame:
        """A sink's query result shaped into its stored columns, its types checked against the sink's."""
        if job.create is None:
            self._check_sink_types(frame, sink)
        shaped = self.shape(frame, sink, incremental=sink.incremental)
        _ = shaped.schema
        return shaped

    @staticmethod
    def _check_sink_types(frame: DataFrame, sink: Sink) -> None:
        table = sink.table
        mismatch = sink_type_mismatch([f for f in frame.schema.fields if f.name not in HIDDEN], sink.target,
                                      f"{table.id.catalog}.{table.id.database}.{table.id.name}",
                                      [(c.name, c.type) for c in table.stored_columns])
        if mismatch:
            raise JobError(mismatch)

    def _compile(self, name: str, statement: Statement, properties: Mapping[str, str]) -> Job:
        tree = statement.tree
        if isinstance(tree, exp.Query):
            job = Job(name=name, sql_kind="SELECT")
            job.select = self._translate(job, tree, properties, incremental=False)
            appends = all(t.changelog_mode == "append" for t in job.sources.values()) and not state_reasons(tree)
            job.append_only = isinstance(job.select, WindowedQuery) or appends
            job.result_key = None if job.append_only else upsert_key(tree)
            return job
        if isinstance(tree, exp.Create):
            return self._compile_ctas(name, statement, properties)
        # what is left is an INSERT or a STATEMENT SET (of INSERTs only: the dialect checks it)
        inserts = cast(list[exp.Insert], tree.expressions if isinstance(tree, StatementSet) else [tree])
        job = Job(name=name, sql_kind="EXECUTE_STATEMENT_SET" if isinstance(tree, StatementSet) else "INSERT_INTO")
        for insert in inserts:
            job.sinks.append(self._compile_insert(job, insert, properties))
        return job

    def _compile_ctas(self, name: str, statement: Statement, properties: Mapping[str, str]) -> Job:
        create = statement.tree
        target = create.this.this if isinstance(create.this, exp.Schema) else create.this
        table_id = resolve(target, properties)
        job = Job(name=name, sql_kind="CREATE_TABLE_AS", create=statement)
        query = self._translate(job, create.expression, properties, incremental=False)
        table = self.store.table(table_id)
        if table is None:  # not created yet: the query's output gives the columns (checked again at start)
            fields = self.bind(job, query).schema.fields
            columns = [ColumnDef(name=f.name, type=flink_type_name(f.dataType)) for f in fields]
            table = table_from_create(statement, "pending", table_id, columns)
        sink = Sink(table=table, query=query, target=[c.name for c in table.stored_columns], incremental=False)
        sink.aggregation = self._group_aggregation(job, create.expression, sink)
        sink.groups = _group_columns(create.expression, sink.target)
        job.sinks.append(sink)
        return job

    def _group_aggregation(self, job: Job, query: exp.Expression, sink: Sink) -> GroupAggregation | None:
        """How a stateful sink's query runs on accumulators per group key; None: it recomputes (the
        reason is NotIncremental's). Spark analyses the rewritten queries over the empty sources."""
        if sink.windowed:
            return None
        bind_views = cache(lambda: self.bind(job, sink.query, empty=True))

        def types_of(sql: str) -> T.StructType:  # the sink's views bound once, when plan first asks Spark
            bind_views()
            return self.spark.sql(sql).schema

        try:
            return plan(query, sink.query, [job.sources[s.view] for s in sink.query.scans], sink.table, sink.target,
                        types_of)
        except (NotIncremental, PySparkException):  # (a query Spark refuses fails in validate, in Flink's words)
            return None

    def _compile_insert(self, job: Job, insert: exp.Insert, properties: Mapping[str, str]) -> Sink:
        target = insert.this.this if isinstance(insert.this, exp.Schema) else insert.this
        table_id = resolve(target, properties)
        table = self.store.table(table_id)
        if table is None:
            raise missing_table(table_id)
        stored = [c.name for c in table.stored_columns]
        if isinstance(insert.this, exp.Schema):
            listed = [i.name for i in insert.this.expressions]
            unknown = [c for c in listed if not any(s.lower() == c.lower() for s in stored)]
            if unknown:
                raise JobError(f"Unknown target column '{unknown[0]}' of table '{table.name}'.")
            stored = [next(s for s in stored if s.lower() == c.lower()) for c in listed]
        query = insert.expression.copy()
        if insert.args.get("with"):
            query.set("with", insert.args["with"].copy())
        # VALUES, or a SELECT without FROM, has no input records to carry: it runs once, like a recomputed
        # query without sources. Every other stateless query runs incrementally: over append and retract
        # tables on their records, over upsert tables on what Flink's ChangelogNormalize makes of them.
        stateless = not isinstance(query, exp.Values) and query.find(exp.Table) is not None \
            and not state_reasons(query)
        sink_query = self._translate(job, query, properties, incremental=stateless)
        if table.changelog_mode == "append" and not isinstance(sink_query, WindowedQuery):
            _refuse_updates_into_append(query, table.name)
        sink = Sink(table=table, query=sink_query, target=stored, incremental=stateless)
        if not insert.args.get("with"):
            sink.literal = literal_rows(query, table, stored)
        if not stateless:
            sink.aggregation = self._group_aggregation(job, query, sink)
            sink.groups = _group_columns(query, stored)
        upserts = [s.view for s in sink_query.scans if job.sources[s.view].upsert]
        if stateless and upserts:
            _normalized_sink(sink, job, query, upserts)
        return sink

    def _translate(self, job: Job, query: exp.Expression, properties: Mapping[str, str], *,
                   incremental: bool) -> SparkQuery:
        def columns_of(table: exp.Table) -> list[str]:
            found = self.store.table(resolve(table, properties))
            if found is None:
                raise missing_table(resolve(table, properties))
            return [c.name for c in found.columns]

        translated = translate_query(query, columns_of, incremental=incremental,
                                     precisions=self._timestamp_precisions(query, properties))
        if not incremental:
            translated = gate_windows(translated)
        if isinstance(translated, WindowedQuery) and not is_snapshot(properties):
            check_time_attributes(query, lambda t: self.store.table(resolve(t, properties)))
        job.notes += [note for note in translated.notes if note not in job.notes]
        interval_join_times(translated.scans, lambda t: self.store.table(resolve(t, properties)),
                            snapshot=is_snapshot(properties))
        for scan in translated.scans:
            table = self.store.table(resolve(scan.table, properties))
            if table is None:
                raise missing_table(resolve(scan.table, properties))
            if scan.event_time and (is_snapshot(properties) or  # bounded: every row is emitted at its end
                                    scan.event_time.lower() != watermark_spec(table).column.lower()):
                scan.event_time, scan.late = None, None  # not the time attribute: no event-time operator in Flink
            try:  # Flink checks source options when a statement reads the table, not at CREATE
                options = scan_options(table.options, scan.options, properties)
            except ScanError as error:
                raise ScanError(f"Unable to create a source for reading table '{table.name}'. {error}") from None
            if job.options.setdefault(table.uid, options) != options:
                raise JobError(f"Table '{table.name}' is read twice with different scan options; the local "
                               f"service tracks one read position per table and statement.")
            job.sources[scan.view] = table
        return translated

    def _timestamp_precisions(self, query: exp.Expression, properties: Mapping[str, str]) -> dict[str, int]:
        """The declared precision of each timestamp column the query's tables hold, by lower-case name
        (a name two tables declare with different precisions is left out)."""
        found: dict[str, set[int]] = {}
        for reference in query.find_all(exp.Table):
            table = self.store.table(resolve(reference, properties))
            for column in table.columns if table is not None else []:
                declared = parse_type(column.type) if column.type else None  # (a computed column's is unset)
                if declared is not None and declared.is_type("timestamp", "timestampltz"):
                    found.setdefault(column.name.lower(), set()).add(timestamp_precision(declared))
        return {name: next(iter(kinds)) for name, kinds in found.items() if len(kinds) == 1}

    # --- running ---------------------------------------------------------------------

    def start(self, job: Job, state: RunState | None) -> RunState:
        """Fix start offsets and bounds when a job first starts (a resumed job keeps its own)."""
        state = state or RunState()
        for table in {t.uid: t for t in job.sources.values()}.values():
            known = state.sources.get(table.name)
            if known is not None and known.table_uid == table.uid:
                continue
            options = job.options[table.uid]
            ends = self.store.end_offsets(table.uid)
            first_offset_at = partial(self.views.first_offset_at, table)
            start = start_offsets(options, table.partitions, ends, first_offset_at)
            bound = bound_offsets(options, table.partitions, ends, first_offset_at)
            if job.snapshot:  # a snapshot query reads what exists when it starts
                now = {p: ends.get(p, 0) for p in range(table.partitions)}
                bound = now if bound is None else {p: min(bound.get(p, 0), now[p]) for p in now}
            state.sources[table.name] = SourceProgress(table_uid=table.uid, start=start, bound=bound, next=dict(start))
        return state

    def bind(self, job: Job, query: SparkQuery, state: RunState | None = None,
             upper: dict[str, dict[int, int]] | None = None, incremental: bool = False,
             empty: bool = False, fired: tuple[int, int] | None = None) -> DataFrame:
        """The query's DataFrame over its sources' views (all records when no range is given,
        none when `empty`); a window aggregation's windows are those `fired` selects (default: all),
        and an event-time operator's input rows those at or below its watermark (`fired`'s second)."""
        query_key = next((key for key, q in job.queries() if q is query), "")
        for index, scan in enumerate(query.scans):
            table = job.sources[scan.view]
            progress = next((p for p in (state.sources.values() if state else []) if p.table_uid == table.uid), None)
            ranges = None
            if empty:
                ranges = {p: (0, 0) for p in range(table.partitions)}
            elif progress is not None and upper is not None:
                ranges = _ranges(progress, upper[table.uid], incremental=incremental)
            if scan.versioned:  # as each probe row saw them when emitted (interval_reads.py)
                reads = state.interval_reads.get(query_key) if state and temporal(query) and not empty else None
                frame = self.views.versions(table, ranges, versions_as_read(table.uid, table.partitions, reads)
                                            if reads else None)
            elif incremental and table.upsert:
                history = None if ranges is None or progress is None else {
                    p: (progress.start.get(p, 0), end) for p, (_low, end) in ranges.items()}
                emit_from = None if ranges is None else {p: low for p, (low, _end) in ranges.items()}
                frame = self.views.normalized(table, history if not empty else ranges, emit_from,
                                              sink_compared(job, scan.view))
            elif incremental:
                frame = self.views.changes(table, ranges)
            else:  # without the late rows its event-time operator dropped (late_rows.py)
                frame = self.views.state(table, ranges, skip=dropped_rows(state, table.uid, query_key, index),
                                         arrival=arrival_sign(scan, table), clearings=cleared_rows(
                                             state, table.uid, query_key, index) if scan.clearings else None)
            if gated(query.sql):  # an outer interval join's pairs (interval_reads.py)
                plain = scan.interval_time and not (scan.event_time or scan.late or scan.arrival or empty)
                frame = with_arrivals(self.views, table, frame, ranges,
                                      state.interval_reads.get(query_key) if state and plain else None)
            if isinstance(query, WindowedQuery) and scan.view in query.arrival_views:  # late_rows.py
                frame = arrival_watermarks(self.views, table, frame, ranges, exact=fired is not None and not (
                    job.snapshot or len({job.sources[s.view].uid for s in query.scans}) > 1),
                    reads=state.interval_reads.get(query_key) if state else None, idle_partitions=job.idle_partitions)
            if scan.event_time and fired is not None:
                frame = _released(frame, scan.event_time, fired[1])
            frame.createOrReplaceTempView(scan.view)
        if isinstance(query, WindowedQuery):
            return self.spark.sql(query.sql, args=fired_args(fired))
        if INTERVAL_UNTIL in query.sql:  # a LEFT interval join's expired rows (interval_join.py)
            return self.spark.sql(query.sql, args=interval_args(query, fired))
        return self.spark.sql(query.sql)

    def advance(self, job: Job, state: RunState, first: FirstRun | None = None) -> RunOutput:
        """One run: whether there was new input, the new progress, and the batches written (a
        SELECT's result rows). The caller commits them and the progress together. `first`: records
        analysed for this run when it reads up to the same offsets."""
        upper = self._upper(job, state)
        ready = first.records if first is not None and first.job is job and first.upper == upper else {}
        fresh = {uid for uid, ends in upper.items() if self._behind(state, uid, ends)}
        if state.runs and not fresh:
            return RunOutput(False, state)
        fired = self._fire(job, state, upper)
        for key, query in job.queries():
            if recorded(query) and key in fired:
                record_run(state, key, fired[key][0], {job.sources[s.view].uid for s in query.scans}, fresh)
        drop_late_rows(self.views, job.queries(), job.sources, state, upper, fired,
                       idle_partitions=job.idle_partitions)
        if any(s.aggregation is not None for s in job.sinks):
            self.aggregates.prune(job.name, [a.path for a in state.aggregates.values()])
        output = RunOutput(True, state)
        for index, sink in enumerate(job.sinks):
            read = {job.sources[s.view].uid for s in sink.query.scans}
            if state.runs and not read & fresh:
                continue
            if sink.aggregation is not None or sink.literal is not None:
                batch = self._aggregate(job, str(index), sink, state, upper) if sink.literal is None else \
                    self.logs.write_rows(sink.table, sink.literal.batch(datetime.now(UTC)), job.name)
                if batch is not None:
                    output.batches.append(batch)
                continue
            records = sink.shaped if sink.shaped is not None else ready[index] if index in ready else self.shape(
                self.bind(job, sink.query, state, upper, incremental=sink.incremental, fired=fired.get(str(index))),
                sink, incremental=sink.incremental)
            small = self._reads_few(job, sink.query, state, upper, incremental=sink.incremental)
            if sink.incremental:  # source order kept (Flink keeps each partition's order)
                in_order = None if small else self._in_log_order(job, sink.query, state, upper, records)
                batch = self.logs.write(sink.table, records if in_order is None else in_order, job.name,
                                        order_by=[LOG_ORDER], ordered=in_order is not None, small_input=small,
                                        collect=small, scanless=False)
            elif sink.windowed:  # the windows this run fired: append-only
                batch = self.logs.write(sink.table, records, job.name, small_input=small, collect=True,
                                        scanless=not sink.query.scans)
            else:  # the changelog of what changed since the last run
                batch = self.logs.write(sink.table, self._changelog(job.name, sink, records), job.name,
                                        small_input=small, collect=True, scanless=not sink.query.scans)
            if batch is not None:
                output.batches.append(batch)
        if job.select is not None:
            output.results = self._select_changes(job, state, upper, fired.get(SELECT_KEY))
        for progress in state.sources.values():
            progress.next = dict(upper[progress.table_uid])
        state.runs += 1
        return output

    def _fire(self, job: Job, state: RunState, upper: dict[str, dict[int, int]]) -> dict[str, tuple[int, int]]:
        """Per query with event-time operators (by watermark key), the watermarks (before, after] of this
        run: each source's watermark after reading [next, upper), combined per query (event_time.py)."""
        timed = [(key, query) for key, query in job.queries()
                 if isinstance(query, WindowedQuery) or any(s.event_time or s.interval_time for s in query.scans)]
        inputs = {key: {job.sources[s.view].uid for s in watermark_inputs(query)} for key, query in timed}
        read = set().union(*inputs.values())
        marks: dict[str, int | None] = {}
        for progress in state.sources.values():
            uid = progress.table_uid
            if uid not in read:
                continue
            table = next(t for t in job.sources.values() if t.uid == uid)
            spec = watermark_spec(table)
            ranges = {p: (progress.next.get(p, 0), upper[uid][p]) for p in range(table.partitions)}
            ended = progress.bound is not None and all(upper[uid].get(p, 0) >= end for p, end in progress.bound.items())
            marks[uid] = source_watermark(progress, self.views.highest_times(table, spec.column, ranges), spec,
                                          table.partitions, idle_partitions=job.idle_partitions, ended=ended)
            progress.watermark = combine(progress.watermark, [marks[uid]])
        fired: dict[str, tuple[int, int]] = {}
        for key, _query in timed:
            before = state.watermarks.get(key)
            settled = [p.watermark for p in state.sources.values() if p.table_uid in inputs[key]] \
                if job.idle_partitions else []
            after = combine(before, [marks[u] for u in inputs[key]], settled)
            if after is not None:
                state.watermarks[key] = after
            fired[key] = (MIN_WATERMARK if before is None else before, MIN_WATERMARK if after is None else after)
        return fired

    def complete(self, state: RunState) -> bool:
        """Bounded sources all read to their bounds (a job without sources is complete after one run)."""
        return state.runs > 0 and all(
            p.bound is not None and all(p.next.get(k, 0) >= v for k, v in p.bound.items())
            for p in state.sources.values()
        )

    def select_schema(self, job: Job) -> T.StructType:
        """The columns of a SELECT's result (hidden columns left out)."""
        assert job.select is not None
        fields = self.bind(job, job.select, empty=True).schema.fields
        return T.StructType([f for f in fields if f.name not in HIDDEN])

    def _select_changes(self, job: Job, state: RunState, upper: dict[str, dict[int, int]],
                        fired: tuple[int, int] | None) -> list[Change]:
        """The rows a SELECT's results grow by in this run (results.py)."""
        assert job.select is not None
        frame = self.bind(job, job.select, state, upper, fired=fired)
        fields = [f for f in frame.schema.fields if f.name not in HIDDEN]
        wired = frame.select(*[wire_column(f.name, f.dataType).alias(f"c{i}") for i, f in enumerate(fields)])
        rows = [[decode_wire(row[i], f.dataType) for i, f in enumerate(fields)]
                for row in wired.limit(MAX_RESULT_ROWS).collect()]
        if isinstance(job.select, WindowedQuery):  # the windows fired in this run
            return [(INSERT, row) for row in rows]
        return changelog(current(self.store.results(job.name, 0, MAX_RESULT_CHANGES)), rows, job.result_key)

    def _upper(self, job: Job, state: RunState) -> dict[str, dict[int, int]]:
        """Offsets to read up to now: the end of each partition, capped by the bound."""
        upper: dict[str, dict[int, int]] = {}
        for progress in state.sources.values():
            table = next(t for t in job.sources.values() if t.uid == progress.table_uid)
            ends = self.store.end_offsets(table.uid)
            upper[table.uid] = {
                p: min(ends.get(p, 0), progress.bound.get(p, 0)) if progress.bound is not None else ends.get(p, 0)
                for p in range(table.partitions)
            }
        return upper

    @staticmethod
    def _reads_few(job: Job, query: SparkQuery, state: RunState, upper: dict[str, dict[int, int]], *,
                   incremental: bool) -> bool:
        """Whether a run of the query reads at most DRIVER_ROWS records: its new offsets, or all of them
        when it recomputes (offsets are dense, so a range holds as many records as it is long)."""
        total = 0
        for scan in query.scans:
            uid = job.sources[scan.view].uid
            progress = next(p for p in state.sources.values() if p.table_uid == uid)
            total += sum(end - start for start, end in _ranges(progress, upper[uid], incremental=incremental).values())
        return total <= DRIVER_ROWS

    def _in_log_order(self, job: Job, query: SparkQuery, state: RunState, upper: dict[str, dict[int, int]],
                      records: DataFrame) -> DataFrame | None:
        """An incremental run's records over their optimized plan when they come out in their sources' log
        order: Spark computes them row by row from its scans, and each source partition's new records
        are one file that one task reads whole (storage.py); None when they may not."""
        for scan in query.scans:
            table = job.sources[scan.view]
            progress = next(p for p in state.sources.values() if p.table_uid == table.uid)
            if not self.logs.read_whole(table, _ranges(progress, upper[table.uid], incremental=True)):
                return None
        return in_row_order(records)

    @staticmethod
    def _behind(state: RunState, uid: str, ends: dict[int, int]) -> bool:
        progress = next(p for p in state.sources.values() if p.table_uid == uid)
        return any(end > progress.next.get(p, 0) for p, end in ends.items())

    def shape(self, result: DataFrame, sink: Sink, *, incremental: bool, now: Column | None = None,
              carry: Sequence[str] = ()) -> DataFrame:
        """The query's columns by position -> the sink's stored columns (cast), $rowtime and $op;
        `carry` columns of `result` pass through after them. A stateful row's time is `now`
        (default: when it is written). An incremental row's -U is as the sink takes it (`sink.before`:
        kept, dropped, or a tombstone), and each row carries its place in the source's log (LOG_ORDER)."""
        fields = [f for f in result.schema.fields if f.name not in carry]
        data = [f.name for f in fields if f.name not in HIDDEN]
        if len(data) != len(sink.target):
            raise JobError(
                f"Column types of query result and sink for '{sink.table.name}' do not match. Cause: Different "
                f"number of columns. Query schema: [{', '.join(data)}] Sink schema: [{', '.join(sink.target)}]")
        hidden = [f.name for f in fields if f.name in HIDDEN]
        if len({f.name.lower() for f in result.schema.fields}) == len(result.schema.fields):
            frame, positional = result, data  # each column named once: read by its name, no renaming step
        else:  # a name twice (SELECT id, id * 10 AS id): the query's columns renamed by position first
            positional = [f"__sl_c{i}" for i in range(len(data))]
            places = iter(positional)
            frame = result.toDF(*[f.name if f.name in HIDDEN or f.name in carry else next(places)
                                  for f in result.schema.fields])
        source = {t.lower(): p for t, p in zip(sink.target, positional, strict=True)}
        produced = {p: f.dataType for p, f in zip(positional, [f for f in fields if f.name not in HIDDEN], strict=True)}
        columns: list[Column] = []
        for column in sink.table.stored_columns:
            kind = spark_type_of(column.type)
            position = source.get(column.name.lower())
            value = _named(position) if position is not None else F.lit(None)
            if position is None or produced[position] != kind:  # (a cast is a JVM round trip or four)
                value = value.cast(kind)
            columns.append(value.alias(column.name))
        # A stateless row keeps its input record's time, a window result its window_time (windows.py);
        # any other stateful row gets the time it is written.
        written = F.current_timestamp() if now is None else now
        time = F.col(HIDDEN_ROWTIME) if incremental or HIDDEN_ROWTIME in hidden else written
        rowtime_column = sink.table.rowtime_column
        rowtime = F.coalesce(_named(source[rowtime_column.lower()]).cast("timestamp"), time) \
            if rowtime_column and rowtime_column.lower() in source else time
        op = F.col(HIDDEN_OP) if incremental else F.lit(INSERT)
        if incremental and sink.before == "drop":
            frame = frame.where(op != UPDATE_BEFORE)
        elif incremental and sink.before == "delete":  # as a tombstone
            op = F.when(op == UPDATE_BEFORE, F.lit(DELETE)).otherwise(op)
        # By offset, a -U before its +U (op < 4), taken before a -U becomes a tombstone: one long, which
        # Spark sorts by radix where two keys cost it a comparison sort.
        order = [(F.col(HIDDEN_SEQ) * 4 + F.col(HIDDEN_OP)).alias(LOG_ORDER)] if incremental else []
        return frame.select(*columns, rowtime.alias(ROWTIME), op.cast("tinyint").alias(OP), *order,
                            *[F.col(f"`{c}`") for c in carry])

    def _changelog(self, producer: str, sink: Sink, new: DataFrame, now: Column | None = None) -> DataFrame:
        """What to write so the sink goes from what this job wrote before to `new` (written at `now`)."""
        table = sink.table
        if not any(b.producer == producer for b in self.store.batches(table.uid)):
            return new  # first run: everything is an insert
        stored = [c.name for c in table.stored_columns]
        old = self.views.state(table, producer=producer).select(*[F.col(f"`{c}`") for c in stored + [ROWTIME]])
        if not table.upsert:
            return _multiset_changes(table, new, old, F.current_timestamp() if now is None else now, sink.groups)
        n, o = new.alias("n"), old.alias("o")
        keys = table.primary_key
        joined = n.join(o, on=[F.col(f"n.`{k}`") == F.col(f"o.`{k}`") for k in keys], how="full_outer")
        return _upsert_changes(table, joined, "n", "o")

    def _aggregate(self, job: Job, key: str, sink: Sink, state: RunState,
                   upper: dict[str, dict[int, int]]) -> Batch | None:
        """A GROUP BY sink's run on its accumulators (group_aggregation.py): what the new records add
        merged into the stored accumulators, and the difference written for the keys they touch.
        Accumulators stored for other tables, or sources that retracted records (an append table
        written with retractions), start over: the accumulators are computed over the whole input and
        the result diffed against the sink, as recomputing does."""
        aggregation = sink.aggregation
        assert aggregation is not None
        table, keys, accumulators = sink.table, aggregation.key_columns, aggregation.accumulators
        kept = state.aggregates.get(key)
        retracted = any(b.retractions for s in aggregation.rows.scans
                        for b in self.store.batches(job.sources[s.view].uid))
        resume = kept is not None and kept.fingerprint == aggregation.fingerprint and not retracted
        rows = self.bind(job, aggregation.rows, state, upper, incremental=resume)
        schema = self._state_schema(aggregation, table, rows)
        stored = self.aggregates.read(kept.path, schema) if kept is not None and resume else None
        merged = merge(aggregation, stored, rows)
        now = F.lit(datetime.now(UTC))  # one time for the rows written and the rows kept as emitted
        groups = self._emit(aggregation, sink, merged, now)
        touched, new, old = F.col(TOUCHED), F.col(NEW), F.col(EMITTED)
        unchanged = new.isNotNull() & old.isNotNull() & _same_row(table, NEW, EMITTED) \
            if table.upsert and stored is not None else F.lit(False)
        emitted = F.when(~touched | unchanged, old).otherwise(new)  # an unchanged upsert row is not written again
        before = F.when(touched, old) if stored is not None else F.lit(None).cast(schema[EMITTED].dataType)
        path = self.aggregates.write(groups.select(*keys, *accumulators, emitted.alias(EMITTED), before.alias(BEFORE),
                                                   touched), job.name, key)
        state.aggregates[key] = AggregateState(path=path, fingerprint=aggregation.fingerprint)
        # The run's changes, from the keys it touched: each one's row before and after.
        changed = T.StructType([*schema.fields, T.StructField(BEFORE, schema[EMITTED].dataType),
                                T.StructField(TOUCHED, T.BooleanType())])
        written = self.aggregates.read(path, changed).where(touched)
        after = written.where(F.col(EMITTED).isNotNull()).select(f"{EMITTED}.*")
        if stored is None:  # starting over: the sink may hold rows of this statement already
            records = self._changelog(job.name, sink, after.withColumn(OP, F.lit(INSERT).cast("tinyint")), now)
        elif table.upsert:
            records = _upsert_changes(table, written, EMITTED, BEFORE)
        else:
            records = _retract_changes(table, written, EMITTED, BEFORE, now)
        small = self._reads_few(job, aggregation.rows, state, upper, incremental=resume)
        return self.logs.write(table, records, job.name, small_input=small, collect=True, scanless=False)

    @staticmethod
    def _state_schema(aggregation: GroupAggregation, table: TableDef, rows: DataFrame) -> T.StructType:
        """The columns of stored accumulators: keys, accumulators, and the row last emitted."""
        emitted = T.StructType([T.StructField(c.name, spark_type_of(c.type)) for c in table.stored_columns]
                               + [T.StructField(ROWTIME, T.TimestampType())])
        return T.StructType([*rows.schema.fields[:aggregation.keys],
                             *[T.StructField(a, t) for a, t in zip(aggregation.accumulators, aggregation.types,
                                                                   strict=True)],
                             T.StructField(EMITTED, emitted)])

    def _emit(self, aggregation: GroupAggregation, sink: Sink, groups: DataFrame, now: Column) -> DataFrame:
        """`groups` with column NEW: the sink row (stored columns, $rowtime) of each group the run touched
        and the HAVING keeps, NULL for the others."""
        shaped = self.shape(results(aggregation, groups), sink, incremental=False, now=now,
                            carry=[*groups.columns, IN_RESULT])
        row = F.struct(*[F.col(f"`{c.name}`") for c in sink.table.stored_columns], F.col(f"`{ROWTIME}`"))
        return shaped.select(*[F.col(f"`{c}`") for c in groups.columns], F.when(F.col(IN_RESULT), row).alias(NEW))


def _named(name: str) -> Column:
    """The column of that name, whatever characters it holds."""
    return F.col(f"`{name.replace('`', '``')}`")


def _plain(sink: Sink) -> bool:
    """A sink whose run binds its query over its sources' offsets alone: no accumulators, windows,
    event-time operator or interval join (their runs depend on watermarks), and some table to read."""
    query = sink.query
    return sink.aggregation is None and not sink.windowed and bool(query.scans) and INTERVAL_UNTIL not in query.sql \
        and not any(s.event_time or s.interval_time or s.late for s in query.scans)


@contextmanager
def _in_flink_terms(job: Job, statement: Statement) -> Iterator[None]:
    """Spark's analysis errors of a statement's queries as JobError, in Flink's terms."""
    try:
        yield
    except PySparkException as error:
        views = {view: table.name for view, table in job.sources.items()}
        raise JobError(flink_detail(error, statement.sql, views)) from None


def _ranges(progress: SourceProgress, upper: dict[int, int], *, incremental: bool) -> dict[int, tuple[int, int]]:
    """The offsets a run reads of one source, per partition: its new ones, or all since the start when
    it recomputes."""
    low = progress.next if incremental else progress.start
    return {p: (low.get(p, 0), end) for p, end in upper.items()}


def _multiset_changes(table: TableDef, new: DataFrame, old: DataFrame, now: Column,
                      groups: Sequence[str] = ()) -> DataFrame:
    """A table without primary key from `old` rows to `new` ones: the rows added (+I) and removed (-D);
    with `groups` (the columns of a GROUP BY's keys), a group's removed and added row are its update."""
    plain = [F.col(f"`{c.name}`") for c in table.stored_columns]
    declared = {c.name: c.type for c in table.stored_columns}
    added = except_all(new.select(*plain), old.select(*plain), declared)
    removed = except_all(old.select(*plain), new.select(*plain), declared)
    if groups:
        return _retract_changes(table, _paired(added, removed, groups), "__sl_added", "__sl_removed", now)
    return added.select("*", now.alias(ROWTIME), F.lit(INSERT).cast("tinyint").alias(OP)).unionByName(
        removed.select("*", now.alias(ROWTIME), F.lit(DELETE).cast("tinyint").alias(OP)))


def _paired(added: DataFrame, removed: DataFrame, groups: Sequence[str]) -> DataFrame:
    """Added and removed rows as struct columns __sl_added and __sl_removed, one of each group key per row
    (either NULL). Any pairing leaves the same table, so the rows of keys a GROUP BY's output does not
    tell apart (a NULL key beside a rolled-up total) pair in any order."""
    def numbered(frame: DataFrame, name: str) -> DataFrame:
        nth = F.row_number().over(Window.partitionBy(*[F.col(f"`{g}`") for g in groups]).orderBy(F.lit(1)))
        return frame.select(F.struct(*[F.col(f"`{c}`") for c in frame.columns]).alias(name),
                            *[F.col(f"`{g}`").alias(f"{name}_{i}") for i, g in enumerate(groups)],
                            nth.alias(f"{name}_nth"))

    a, r = numbered(added, "__sl_added"), numbered(removed, "__sl_removed")
    same = reduce(lambda x, y: x & y, [a[f"__sl_added_{i}"].eqNullSafe(r[f"__sl_removed_{i}"])
                                        for i in range(len(groups))], a["__sl_added_nth"] == r["__sl_removed_nth"])
    return a.join(r, on=same, how="full_outer")


def _retract_changes(table: TableDef, frame: DataFrame, new: str, old: str, now: Column) -> DataFrame:
    """A table without primary key, from rows pairing a group's `new` row with its `old` one (struct
    columns; either may be NULL), as Flink's GroupAggregate sends them: +I of a new row, -U of the old
    row then +U of the new one, -D of a removed row; an unchanged row is not sent."""
    in_new, in_old = F.col(new).isNotNull(), F.col(old).isNotNull()
    updated = in_new & in_old & ~_same_row(table, new, old)

    def sent(kind: int, row: str) -> Column:
        return F.struct(F.lit(kind).cast("tinyint").alias(OP), F.col(row).alias("row"))

    changes = F.array(F.when(in_new & ~in_old, sent(INSERT, new)), F.when(updated, sent(UPDATE_BEFORE, old)),
                      F.when(updated, sent(UPDATE_AFTER, new)), F.when(in_old & ~in_new, sent(DELETE, old)))
    out = frame.select(F.explode(F.filter(changes, lambda c: c.isNotNull())).alias("__sl_c"))
    return out.select(*[F.col(f"__sl_c.row.`{c.name}`").alias(c.name) for c in table.stored_columns],
                      now.alias(ROWTIME), F.col(f"__sl_c.{OP}").alias(OP))


def _upsert_changes(table: TableDef, frame: DataFrame, new: str, old: str) -> DataFrame:
    """An upsert table's changes from rows pairing a key's `new` row with its `old` one (table aliases
    or struct columns; either may be missing): +I of a new key, +U of a changed row, -D of a removed
    one (with the time of the row it removes)."""
    key = table.primary_key[0]
    in_new, in_old = F.col(f"{new}.`{key}`").isNotNull(), F.col(f"{old}.`{key}`").isNotNull()
    unchanged = in_new & in_old & _same_row(table, new, old)
    op = F.when(~in_old, INSERT).when(~in_new, DELETE).otherwise(UPDATE_AFTER)
    pick = [F.when(in_new, F.col(f"{new}.`{c}`")).otherwise(F.col(f"{old}.`{c}`")).alias(c)
            for c in [*[c.name for c in table.stored_columns], ROWTIME]]
    return frame.where((in_new | in_old) & ~unchanged).select(*pick, op.cast("tinyint").alias(OP))


def _same_row(table: TableDef, new: str, old: str) -> Column:
    """Two rows of an upsert table hold the same values (its key aside)."""
    same = F.lit(True)
    for column in table.stored_columns:
        if column.name not in table.primary_key:
            same = same & same_value(F.col(f"{new}.`{column.name}`"), F.col(f"{old}.`{column.name}`"),
                                     spark_type_of(column.type), flink=column.type)
    return same


def _released(frame: DataFrame, column: str, watermark: int) -> DataFrame:
    """The rows an event-time operator has been released: time at or below its watermark (epoch ms)."""
    return frame.where(F.unix_millis(F.col(f"`{column}`").cast("timestamp")) <= F.lit(watermark))


def _normalized_sink(sink: Sink, job: Job, query: exp.Expression, upserts: list[str]) -> None:
    """A stateless query over upsert tables: what Flink's planner makes of the changelog it writes.

    An append sink can not take the updates ChangelogNormalize produces (Flink refuses the
    statement). A retract sink gets every -U. An upsert sink gets none when its primary key is the
    source's key as the query projects it, and the query does not filter; otherwise it gets them
    (a filter needs -U to retract a row it now drops; a row whose sink key changed leaves its old
    key), and writes them as tombstones.
    """
    table = sink.table
    if not table.upsert and table.changelog_mode == "append":
        keys = ", ".join(job.sources[upserts[0]].primary_key)
        raise JobError(f"Table sink '{table.id.catalog}.{table.id.database}.{table.name}' doesn't support "
                       f"consuming update and delete changes which is produced by node "
                       f"ChangelogNormalize(key=[{keys}])")
    if table.upsert:
        filtered = any(s.args.get("where") for s in query.find_all(exp.Select))
        keyed = len(upserts) == 1 and _keeps_upsert_key(query, sink.target, table.primary_key, job.sources[upserts[0]])
        sink.before = "drop" if keyed and not filtered else "delete"
    # every part of a column: `t.c0.f` parses as column f of table c0, and reads the column c0
    names = {part.name.lower() for c in query.find_all(exp.Column) for part in c.parts}
    star = any(True for _ in query.find_all(exp.Star))
    for view in upserts:
        source = job.sources[view]
        sink.compared[view] = [c.name for c in source.columns if star or c.name.lower() in names] + (
            [ROWTIME] if ROWTIME.lower() in names else [])


def _keeps_upsert_key(query: exp.Expression, target: list[str], sink_key: list[str], source: TableDef) -> bool:
    """Whether a sink's primary key is exactly the upsert source's key, each key column projected as
    itself by a plain SELECT (Flink's upsert-key rule: any other key, even a wider one, needs -U)."""
    if not isinstance(query, exp.Select) or len(sink_key) != len(source.primary_key):
        return False
    projected: list[str | None] = []  # per output column, the source column it is, if it is one
    for output in query.expressions:
        if isinstance(output, exp.Star):
            projected += [c.name.lower() for c in source.columns]
        else:
            column = output.this if isinstance(output, exp.Alias) else output
            projected.append(column.name.lower() if isinstance(column, exp.Column) else None)
    positions = {name.lower(): index for index, name in enumerate(target)}
    keys: set[str] = set()
    for key in sink_key:
        index = positions.get(key.lower(), len(projected))
        column = projected[index] if index < len(projected) else None
        if column is None:
            return False
        keys.add(column)
    return keys == {k.lower() for k in source.primary_key}


def _group_columns(query: exp.Expression, target: list[str]) -> list[str]:
    """The sink columns holding every key of the query's top-level GROUP BY (ROLLUP, CUBE and GROUPING
    SETS included), each projected as itself; empty when a key is not in the output."""
    group = query.args.get("group") if isinstance(query, exp.Select) else None
    if group is None:
        return []
    keys: set[str] = set()
    for expression in group.expressions:
        if isinstance(expression, (exp.Rollup, exp.Cube)):
            keys |= {k.sql() for k in expression.expressions}
        elif isinstance(expression, exp.GroupingSets):
            for grouping_set in expression.expressions:
                members = grouping_set.expressions if isinstance(grouping_set, exp.Tuple) else [grouping_set.unnest()]
                keys |= {k.sql() for k in members}
        else:
            keys.add(expression.sql())
    outputs = [o.unalias().sql() for o in query.expressions]
    columns = [name for name, output in zip(target, outputs, strict=False) if output in keys]
    return columns if keys <= set(outputs) else []


def sink_compared(job: Job, view: str) -> list[str] | None:
    """The columns ChangelogNormalize compares for an upsert source view (those the query reads)."""
    return next((s.compared[view] for s in job.sinks if view in s.compared), None)


def _refuse_updates_into_append(query: exp.Expression, sink: str) -> None:
    """Flink refuses a query whose result updates (a group aggregate, DISTINCT) into an append-only sink,
    when the statement is created. Only the query's own top level is judged: what is not certainly an
    update stream (window aggregates, aggregates under a projection) is left to run."""
    top = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(top, exp.Select):
        return
    aggregates = [a for e in top.expressions for a in e.find_all(exp.AggFunc) if not a.find_ancestor(exp.Window)]
    if top.args.get("group") or top.args.get("distinct") or aggregates:
        node = "GroupAggregate" if top.args.get("group") or aggregates else "Deduplicate"
        raise JobError(f"Table sink '{sink}' doesn't support consuming update changes which is produced by "
                       f"node {node}. Declare the sink with 'changelog.mode' = 'upsert' (and a PRIMARY KEY) "
                       "or 'retract'.")


def is_snapshot(properties: Mapping[str, str]) -> bool:
    """'sql.snapshot.mode' = 'now': a snapshot query, bounded at what exists when it starts."""
    return (properties.get(SNAPSHOT_MODE) or "").strip().lower() == "now"
