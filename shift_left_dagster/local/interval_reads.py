"""Which run read each input row of an outer interval join, so that a padded row it emitted is final.

Flink's TimeIntervalJoin forgets a row once the watermark passed the last time a match could come
(an outer side's row emitted padded with NULLs then): a row of the other input read later joins nothing
of it. Locally the join is recomputed each run (translation/interval_join.py); without this, a match
read in a later run (its source idle while the row expired) would turn the padded row into a joined
one: a D into an append-only sink. Each run of such a query records the watermark before it and where
it began reading each source (RunState.interval_reads); each input row gets the run that read it and
that watermark (ARRIVAL_RUN, ARRIVAL_MARK), and the join's ON keeps a pair only when the row read first
had not expired by the watermark before the other's run.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import OFFSET, PARTITION, TableDef
from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.store import IntervalRead, RunState
from shift_left_dagster.local.views import Ranges, TableViews
from shift_left_dagster.translation.interval_join import ARRIVAL_MARK, ARRIVAL_RUN


def gated(sql: str) -> bool:
    """Whether a query's SQL reads its inputs' arrival columns (an outer interval join)."""
    return ARRIVAL_RUN in sql


def record_run(state: RunState, key: str, watermark_before: int) -> None:
    """This run of the query `key`: the watermark before it, and each source's next offset (its first read)."""
    state.interval_reads.setdefault(key, []).append(IntervalRead(
        watermark=watermark_before, starts={p.table_uid: dict(p.next) for p in state.sources.values()}))


def with_arrivals(views: TableViews, table: TableDef, frame: DataFrame, ranges: Ranges | None,
                  reads: list[IntervalRead] | None) -> DataFrame:
    """The table's rows (`frame`, as the scan reads them) with ARRIVAL_RUN and ARRIVAL_MARK: the run that
    read each record and the query's watermark before it. `reads` None: the scan is no interval join's
    input (or not append-only), so every row is of one run and no pair is gated."""
    if not reads or table.upsert or any(b.retractions for b in views.logs.store.batches(table.uid)):
        return frame.withColumn(ARRIVAL_RUN, F.lit(0)).withColumn(ARRIVAL_MARK, F.lit(MIN_WATERMARK))
    run: Column = F.lit(0)
    mark: Column = F.lit(MIN_WATERMARK)
    for index, read in enumerate(reads):  # the latest run that began at or before the record
        starts = read.starts.get(table.uid, {})
        began = reduce(lambda a, b: a | b, [(F.col(f"`{PARTITION}`") == p) & (F.col(f"`{OFFSET}`") >= starts.get(p, 0))
                                            for p in range(table.partitions)], F.lit(False))
        run, mark = F.when(began, index).otherwise(run), F.when(began, read.watermark).otherwise(mark)
    rows = views.located(table, ranges)
    return rows.select(*[F.col(f"`{name}`") for name in frame.columns], run.alias(ARRIVAL_RUN),
                       mark.alias(ARRIVAL_MARK))
