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

from pyspark.sql import DataFrame, Window
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
    markers = rows.sparkSession.createDataFrame(
        [(p, start, run, mark) for (p, start), (run, mark) in latest.items()],
        f"`{PARTITION}` INT, `{OFFSET}` BIGINT, `{ARRIVAL_RUN}` INT, `{ARRIVAL_MARK}` BIGINT")
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
