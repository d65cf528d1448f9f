"""Which run read each input row of an outer interval join, so that a padded row it emitted is final.

Flink's TimeIntervalJoin forgets a row once the watermark passed the last time a match could come
(an outer side's row emitted padded with NULLs then): a row of the other input read later joins nothing
of it. Locally the join is recomputed each run (translation/interval_join.py); without this, a match
read in a later run (its source idle while the row expired) would turn the padded row into a joined
one: a D into an append-only sink. Each run of such a query records the watermark before it and where
it began reading each source (RunState.interval_reads); each input row gets the run that read it and
that watermark (ARRIVAL_RUN, ARRIVAL_MARK), and the join's ON keeps a pair only when the row read first
had not expired by the watermark before the other's run.

An event-time temporal join has the same shape of defect and uses the same runs: Flink's
TemporalRowTimeJoinOperator emits a probe row once, when the watermark passes its time, joined to the
version valid then among the versions it holds, and forgets it. Recomputed each run, a version read
later (its source idle meanwhile, or late for its time) would turn the emitted row into another: a D
into an append-only sink. So each version record counts only past the watermark before the run that
read it (versions_as_read): a probe row at t sees the versions whose run began before the watermark
passed t, those read by the run that emitted it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import OFFSET, PARTITION, TableDef
from shift_left_dagster.local.event_time import MAX_WATERMARK, MIN_WATERMARK
from shift_left_dagster.local.spark import integer_rows
from shift_left_dagster.local.store import IntervalRead, RunState
from shift_left_dagster.local.views import Ranges, TableViews, Validity
from shift_left_dagster.local.windows import WindowedQuery
from shift_left_dagster.translation.interval_join import ARRIVAL_MARK, ARRIVAL_RUN
from shift_left_dagster.translation.spark import VALID_FROM, VALID_TO, SparkQuery


def gated(sql: str) -> bool:
    """Whether a query's SQL reads its inputs' arrival columns (an outer interval join)."""
    return ARRIVAL_RUN in sql


def temporal(query: SparkQuery) -> bool:
    """Whether a query has an event-time temporal join (a versioned table, a probe side held by time)."""
    return any(s.versioned for s in query.scans) and any(s.event_time for s in query.scans)


def recorded(query: SparkQuery) -> bool:
    """Whether the engine records a query's runs: an outer interval join's, an event-time temporal join's,
    or one whose late rows or windows late_rows.py judges record by record (over several partitions it
    replays the table run by run)."""
    return gated(query.sql) or temporal(query) or any(s.late is not None for s in query.scans) or \
        bool(isinstance(query, WindowedQuery) and query.arrival_views)


def record_run(state: RunState, key: str, watermark_before: int, tables: set[str], fresh: set[str]) -> None:
    """This run of the query `key` (reading `tables`, by uid): the watermark before it, and where it began
    reading each of them. A run in which none of them has new records (`fresh`: the tables that have) reads
    no row of the query, so it is not recorded (after the first): a run of a statement set whose other
    queries' sources got the input would otherwise add an entry every time, and no row would take it."""
    reads = state.interval_reads.setdefault(key, [])
    if reads and not tables & fresh:
        return
    reads.append(IntervalRead(watermark=watermark_before, starts={
        p.table_uid: dict(p.next) for p in state.sources.values() if p.table_uid in tables}))


def with_arrivals(views: TableViews, table: TableDef, frame: DataFrame, ranges: Ranges | None,
                  reads: list[IntervalRead] | None) -> DataFrame:
    """The table's rows (`frame`, as the scan reads them) with ARRIVAL_RUN and ARRIVAL_MARK: the run that
    read each record and the query's watermark before it. `reads` None: the scan is no interval join's
    input (or not append-only), so every row is of one run and no pair is gated."""
    if not reads or table.upsert or any(b.retractions for b in views.logs.store.batches(table.uid)):
        return frame.withColumn(ARRIVAL_RUN, F.lit(0)).withColumn(ARRIVAL_MARK, F.lit(MIN_WATERMARK))
    located = with_runs(views.located(table, ranges), table.uid, table.partitions, reads)
    return located.select(*[F.col(f"`{name}`") for name in frame.columns], ARRIVAL_RUN, ARRIVAL_MARK)


def with_runs(rows: DataFrame, uid: str, partitions: int, reads: list[IntervalRead]) -> DataFrame:
    """`rows` ($partition, $offset, ...) with ARRIVAL_RUN and ARRIVAL_MARK: the latest run that began at or
    before each record and that run's watermark before it (run 0 and the lowest watermark when none did).
    The runs are data, not an expression: each run's start is a marker row sorted among the records of its
    partition, and each record takes the last marker before it (an expression of one CASE per run grew with
    every run of a long-lived statement, and Spark's analyser overflowed at a few hundred)."""
    latest: dict[tuple[int, int], tuple[int, int]] = {}  # (partition, start) -> the last run beginning there
    for index, read in enumerate(reads):
        for partition in range(partitions):
            latest[(partition, read.starts.get(uid, {}).get(partition, 0))] = (index, read.watermark)
    marker = "__sl_marker"
    markers = integer_rows(rows.sparkSession, [(p, start, run, mark) for (p, start), (run, mark) in latest.items()],
                           [(PARTITION, "INT"), (OFFSET, "BIGINT"), (ARRIVAL_RUN, "INT"), (ARRIVAL_MARK, "BIGINT")])
    both = rows.withColumn(marker, F.lit(False)).unionByName(markers.withColumn(marker, F.lit(True)),
                                                              allowMissingColumns=True)
    before = Window.partitionBy(f"`{PARTITION}`").orderBy(F.col(f"`{OFFSET}`"), F.col(marker).desc(),
                                                          F.col(f"`{ARRIVAL_RUN}`").asc_nulls_first()) \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return both.select(
        *[F.col(f"`{name}`") for name in rows.columns], F.col(marker),
        F.coalesce(F.last(F.col(f"`{ARRIVAL_RUN}`"), ignorenulls=True).over(before), F.lit(0)).alias(ARRIVAL_RUN),
        F.coalesce(F.last(F.col(f"`{ARRIVAL_MARK}`"), ignorenulls=True).over(before),
                   F.lit(MIN_WATERMARK)).alias(ARRIVAL_MARK),
    ).where(~F.col(marker)).drop(marker)


def versions_as_read(uid: str, partitions: int, reads: list[IntervalRead]) -> Validity:
    """The validity of a versioned table's records (views.versions) as each probe row saw them when emitted.

    A record read in a run whose watermark before was `mark` counts for a probe row at t only when t >
    mark (the row was not emitted before that run) and t >= its time: from max(time, mark + 1 ms), its
    VALID_FROM. It is the version at t while no later record (by time, then position) counts at t: its
    VALID_TO is the least VALID_FROM of the records after it. In order, each VALID_FROM is the record's
    time and VALID_TO the next one's (as without runs); a record late for its run's watermark counts only
    for probe rows not emitted yet, and a record read once the watermark is the highest for none. A probe
    row itself late (at or below the watermark before its run) sees what a row at its time saw when the
    watermark passed it: Flink joins it at the next watermark with the versions it still holds (a known
    difference, local/event_time.py)."""
    def validity(records: DataFrame, time: Column, keys: list[Column]) -> DataFrame:
        mark = F.col(f"`{ARRIVAL_MARK}`")
        counted = (F.when(time.isNull() | (mark >= F.lit(MAX_WATERMARK)), F.lit(None).cast("timestamp"))
                   .when(F.unix_millis(time) > mark, time).otherwise(F.timestamp_millis(mark + 1)))
        # the records after each (the versions' order reversed): a running frame, not an O(n^2) following one
        after = Window.partitionBy(*keys).orderBy(time.desc(), F.col(f"`{PARTITION}`").desc(),
                                                  F.col(f"`{OFFSET}`").desc()) \
            .rowsBetween(Window.unboundedPreceding, -1)
        return (with_runs(records, uid, partitions, reads).withColumn(VALID_FROM, counted)
                .withColumn(VALID_TO, F.min(F.col(VALID_FROM)).over(after)).drop(ARRIVAL_RUN, ARRIVAL_MARK))
    return validity
