"""Late rows: the records an event-time operator drops because its watermark already passed them.

Flink's OVER aggregates and keep-first deduplication drop a late record when it arrives (the rule
of each is translation/spark.py's LateRule, event_time.py says why). Locally a run's records are
processed after the watermark of the previous run, so in each run, before its query is recomputed,
the records of the run's new offsets are judged against the query's watermark before the run (and,
for a bounded OVER, the last time each key emitted, from the records of earlier runs). Their offsets
join the statement's progress (SourceProgress.dropped, committed with the run) and the recompute
reads the table without them, in this run and every later one. That is one small Spark job per
scan with a rule, and none before the query has a watermark (nothing can be late then).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import OFFSET, PARTITION, TableDef
from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.storage import in_ranges
from shift_left_dagster.local.store import RunState, SourceProgress
from shift_left_dagster.local.views import Ranges, TableViews
from shift_left_dagster.translation.spark import LateRule, Scan, SparkQuery

_LAST = "__sl_last"


def _dropped_key(query_key: str, index: int) -> str:
    """A scan's key in SourceProgress.dropped: its query's watermark key and its position in the query
    (stable when the statement is compiled again after a restart)."""
    return f"{query_key}:{index}"


def dropped_rows(state: RunState | None, table_uid: str, query_key: str, index: int) -> dict[int, list[int]]:
    """The offsets (partition -> offsets) of the late rows the query's scan at `index` dropped so far."""
    progress = _progress(state, table_uid) if state is not None else None
    return progress.dropped.get(_dropped_key(query_key, index), {}) if progress is not None else {}


def drop_late_rows(views: TableViews, queries: list[tuple[str, SparkQuery]], sources: Mapping[str, TableDef],
                   state: RunState, upper: Mapping[str, Mapping[int, int]],
                   fired: Mapping[str, tuple[int, int]]) -> None:
    """Record in the progress the late rows of this run's new offsets [next, upper), per scan with a rule."""
    for query_key, query in queries:
        before = fired.get(query_key, (MIN_WATERMARK, MIN_WATERMARK))[0]
        if before == MIN_WATERMARK:
            continue
        for index, scan in enumerate(query.scans):
            table = sources[scan.view]
            progress = _progress(state, table.uid)
            if scan.late is None or scan.event_time is None or progress is None:
                continue
            new = {p: (progress.next.get(p, 0), upper[table.uid][p]) for p in range(table.partitions)}
            if not any(end > start for start, end in new.values()):
                continue
            found = _late_offsets(views, table, scan, progress, new, before)
            merged = progress.dropped.setdefault(_dropped_key(query_key, index), {})
            for partition, offsets in found.items():
                merged[partition] = sorted(set(merged.get(partition, [])) | set(offsets))


def _late_offsets(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress, new: Ranges,
                  watermark: int) -> dict[int, list[int]]:
    """Where the records of the new ranges are that the scan's rule drops (one Spark job)."""
    assert scan.late is not None and scan.event_time is not None
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    if scan.late.kind == "key":
        late = _after_key_last(views, table, scan.late, progress, new, time, watermark)
    else:
        rows = views.located(table, new)
        late = rows.where(time < watermark if scan.late.kind == "before" else time <= watermark)
    found: dict[int, list[int]] = {}
    for row in late.select(PARTITION, OFFSET).collect():
        found.setdefault(int(row[PARTITION]), []).append(int(row[OFFSET]))
    return found


def _after_key_last(views: TableViews, table: TableDef, rule: LateRule, progress: SourceProgress, new: Ranges,
                    time: Column, watermark: int) -> DataFrame:
    """The new records not later than their key's last emitted time: the highest time at or below the
    watermark among the key's records of earlier runs (a bounded OVER fired each of them)."""
    declared = [table.column(k) for k in rule.keys]
    keys = [F.col(f"`{c.name}`") for c in declared if c is not None] if all(declared) else []
    read = {p: (progress.start.get(p, 0), end) for p, (_start, end) in new.items()}
    fresh = in_ranges(dict(new))
    earlier = F.when(~fresh & (time <= watermark), time)
    rows = views.located(table, read).withColumn(_LAST, F.max(earlier).over(Window.partitionBy(*keys)))
    return rows.where(fresh & (time <= F.col(_LAST)))


def _progress(state: RunState, table_uid: str) -> SourceProgress | None:
    return next((p for p in state.sources.values() if p.table_uid == table_uid), None)
