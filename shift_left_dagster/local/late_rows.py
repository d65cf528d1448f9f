"""Late rows: the records an event-time operator drops because its watermark already passed them.

Flink's OVER aggregates and keep-first deduplication drop a late record when it arrives (the rule
of each is translation/spark.py's LateRule, event_time.py says why). Locally a run's records are
processed after the watermark of the previous run, so in each run, before its query is recomputed,
the records of the run's new offsets are judged against the query's watermark before the run (and,
for a bounded OVER, the last time each key emitted, from the records of earlier runs). Their offsets
join the statement's progress (SourceProgress.dropped, committed with the run) and the recompute
reads the table without them, in this run and every later one. That is one small Spark job per
scan with a rule, and none before the query has a watermark (nothing can be late then).

Within a run the watermark advances per record, as Flink's does (every record moves it to its
highest time so far minus the delay, emitted after the record): `arrival_watermarks` gives each
record the watermark it met. Where that is Flink's own (one source of one partition: the order is the
log's), window TVFs (windows.py) count a record only in the windows not fired at its arrival, and an
unbounded OVER or a keep-first deduplication judges it by that watermark (a keep-first row at that
watermark is kept but held back while the watermark stays there: Flink's timer for it fires only at
the next watermark). A bounded OVER is replayed
record by record on the driver (its rule depends on which rows its key fired before): dropped rows
join the progress, and a late row it keeps is held back until the watermark next rises, as Flink's
timer for it fires only then.

A bounded OVER over a table of several partitions is replayed too, run by run (each run's offsets are
recorded, interval_reads.py), reading a run's new records partition by partition, as Flink's Kafka
reader emits a fetch split by split: each partition's watermark is its highest time so far minus the
delay, the source's the lowest over the partitions with records in the run (the others are idle,
event_time.py), so a partition read later in a run still holds the watermark at what it had before.
Flink's own interleaving of partitions is not deterministic; this is one it can take, and the same
the run's watermark ends at (event_time.source_watermark).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import OFFSET, PARTITION, TableDef
from shift_left_dagster.local.event_time import MIN_WATERMARK, watermark_inputs, watermark_spec
from shift_left_dagster.local.storage import in_ranges
from shift_left_dagster.local.store import RunState, SourceProgress
from shift_left_dagster.local.views import Ranges, TableViews
from shift_left_dagster.local.windows import ARRIVAL_WATERMARK
from shift_left_dagster.translation.spark import LateRule, Scan, SparkQuery

_LAST = "__sl_last"
_MET = "__sl_met"  # the watermark a record met
REPLAYED_ROWS = 50_000  # a bounded OVER's table replayed on the driver up to this many records
Place = tuple[int, int]  # a record's partition and offset


def _dropped_key(query_key: str, index: int) -> str:
    """A scan's key in SourceProgress.dropped: its query's watermark key and its position in the query
    (stable when the statement is compiled again after a restart)."""
    return f"{query_key}:{index}"


def _held_key(query_key: str, index: int) -> str:
    """A scan's entry in SourceProgress.dropped for the rows held back in the last run (replaced each run)."""
    return f"{query_key}:{index}:held"


def cleared_rows(state: RunState | None, table_uid: str, query_key: str, index: int) -> dict[int, dict[int, list[int]]]:
    """The rows of the query's scan at `index` kept after their key's state was cleared (a RANGE-bounded
    OVER): how many times it was -> partition -> offsets; the OVER partitions by it (CLEARINGS)."""
    progress = _progress(state, table_uid) if state is not None else None
    return {} if progress is None else progress.clearings.get(_dropped_key(query_key, index), {})


def dropped_rows(state: RunState | None, table_uid: str, query_key: str, index: int) -> dict[int, list[int]]:
    """The offsets (partition -> offsets) of the late rows the query's scan at `index` dropped so far, and
    of those it holds back in this run (a bounded OVER's late row waiting for the next watermark)."""
    progress = _progress(state, table_uid) if state is not None else None
    if progress is None:
        return {}
    found = {p: list(o) for p, o in progress.dropped.get(_dropped_key(query_key, index), {}).items()}
    for partition, offsets in progress.dropped.get(_held_key(query_key, index), {}).items():
        found[partition] = sorted(set(found.get(partition, [])) | set(offsets))
    return found


def drop_late_rows(views: TableViews, queries: list[tuple[str, SparkQuery]], sources: Mapping[str, TableDef],
                   state: RunState, upper: Mapping[str, Mapping[int, int]],
                   fired: Mapping[str, tuple[int, int]], *, idle_partitions: bool = True) -> None:
    """Record in the progress the late rows of this run's new offsets [next, upper), per scan with a rule."""
    for query_key, query in queries:
        before = fired.get(query_key, (MIN_WATERMARK, MIN_WATERMARK))[0]
        inputs = {sources[s.view].uid for s in watermark_inputs(query)}
        for index, scan in enumerate(query.scans):
            table = sources[scan.view]
            progress = _progress(state, table.uid)
            if scan.late is None or scan.event_time is None or progress is None:
                continue
            alone = inputs == {table.uid} and not table.upsert  # the query's watermark is this table's
            per_record = alone and table.partitions == 1
            runs = run_starts(state, query_key, table.uid)
            if alone and scan.late.kind == "key":
                replayed = _replay_bounded_over(views, table, scan, progress, upper[table.uid], runs,
                                                idle_partitions=idle_partitions)
                if replayed is not None:
                    key = _dropped_key(query_key, index)
                    progress.dropped[key], progress.dropped[_held_key(query_key, index)] = replayed.dropped, \
                        replayed.held
                    progress.clearings[key] = replayed.clearings
                    continue
            if alone and table.partitions > 1 and scan.late.kind != "key":
                met = _met_by_record(views, table, {p: (progress.start.get(p, 0), end)
                                                    for p, end in upper[table.uid].items()}, runs,
                                     idle_partitions=idle_partitions)
                if met is not None:
                    after = fired.get(query_key, (MIN_WATERMARK, MIN_WATERMARK))[1]
                    _judge_met(progress, scan, met, _dropped_key(query_key, index), _held_key(query_key, index),
                               before, after)
                    continue
            if per_record and scan.late.kind == "before":
                after = fired.get(query_key, (MIN_WATERMARK, MIN_WATERMARK))[1]
                progress.dropped[_held_key(query_key, index)] = _held_at_watermark(
                    views, table, scan, progress, upper[table.uid], after)
            if before == MIN_WATERMARK and (not per_record or scan.late.kind == "key"):
                continue  # nothing is late before the query has a watermark
            new = {p: (progress.next.get(p, 0), upper[table.uid][p]) for p in range(table.partitions)}
            if not any(end > start for start, end in new.values()):
                continue
            found = _late_offsets(views, table, scan, progress, new, before, per_record=per_record and
                                  scan.late.kind != "key")
            merged = progress.dropped.setdefault(_dropped_key(query_key, index), {})
            for partition, offsets in found.items():
                merged[partition] = sorted(set(merged.get(partition, [])) | set(offsets))


def run_starts(state: RunState | None, query_key: str, table_uid: str) -> list[dict[int, int]]:
    """Where each recorded run of the query began reading the table, per partition (interval_reads.py)."""
    reads = state.interval_reads.get(query_key, []) if state is not None else []
    return [r.starts.get(table_uid, {}) for r in reads]


def _met_by_record(views: TableViews, table: TableDef, read: Ranges, runs: list[dict[int, int]], *,
                   idle_partitions: bool) -> dict[Place, tuple[int | None, int]] | None:
    """Per record of `read` (a table of several partitions), its event time and the watermark it met: the
    one after the record read before it (`_arrivals`). None when there are more than the driver replays."""
    if sum(end - start for start, end in read.values()) > REPLAYED_ROWS:
        return None
    spec = watermark_spec(table)
    time = F.unix_millis(F.col(f"`{spec.column}`").cast("timestamp"))
    records = views.located(table, read).select(F.col(f"`{PARTITION}`").alias("p"), F.col(f"`{OFFSET}`").alias("o"),
                                                time.alias("t")).collect()
    met: dict[Place, tuple[int | None, int]] = {}
    watermark = MIN_WATERMARK
    for record, after in _arrivals(records, runs, table.partitions, spec.delay_ms, idle_partitions=idle_partitions):
        met[(int(record["p"]), int(record["o"]))] = (record["t"], watermark)
        watermark = after
    return met


def _judge_met(progress: SourceProgress, scan: Scan, met: dict[Place, tuple[int | None, int]], dropped_key: str,
               held_key: str, before: int, after: int) -> None:
    """The late rows of the run's new records by the watermark each met (`_met_by_record`, never below the
    watermark before the run), into the progress; a keep-first deduplication's rows at the watermark they
    met that is still the watermark are held (as `_held_at_watermark`)."""
    assert scan.late is not None
    dropped: list[Place] = []
    held: list[Place] = []
    for (partition, offset), (moment, watermark) in met.items():
        if moment is None:
            continue
        if offset >= progress.next.get(partition, 0):
            watermark = max(watermark, before)
            if moment < watermark if scan.late.kind == "before" else moment <= watermark:
                dropped.append((partition, offset))
        if scan.late.kind == "before" and after != MIN_WATERMARK and moment == watermark == after:
            held.append((partition, offset))
    merged = progress.dropped.setdefault(dropped_key, {})
    for partition, offsets in _by_partition(dropped).items():
        merged[partition] = sorted(set(merged.get(partition, [])) | set(offsets))
    if scan.late.kind == "before":
        progress.dropped[held_key] = _by_partition(held)


def _late_offsets(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress, new: Ranges,
                  watermark: int, *, per_record: bool) -> dict[int, list[int]]:
    """Where the records of the new ranges are that the scan's rule drops (one Spark job): judged
    against the watermark before the run, or, `per_record`, the one each record met (that or what
    the run's earlier records moved it to, as Flink's watermark advances record by record)."""
    assert scan.late is not None and scan.event_time is not None
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    if scan.late.kind == "key":
        late = _after_key_last(views, table, scan.late, progress, new, time, watermark)
    else:
        rows = views.located(table, new)
        met: Column = F.lit(watermark)
        if per_record:
            earlier = Window.partitionBy(F.col(f"`{PARTITION}`")).orderBy(F.col(f"`{OFFSET}`")).rowsBetween(
                Window.unboundedPreceding, -1)
            rows = rows.withColumn(_MET, F.greatest(met, F.coalesce(
                F.max(time).over(earlier) - watermark_spec(table).delay_ms, met)))
            met = F.col(_MET)
        late = rows.where(time < met if scan.late.kind == "before" else time <= met)
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
    seen = _seen(rule)
    earlier = F.when(~fresh & seen & (time <= watermark), time)
    rows = views.located(table, read).withColumn(_LAST, F.max(earlier).over(Window.partitionBy(*keys)))
    return rows.where(fresh & seen & (time <= F.col(_LAST)))


def _held_at_watermark(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress,
                       upper: Mapping[int, int], watermark: int) -> dict[int, list[int]]:
    """A keep-first deduplication's rows still waiting after this run (one Spark job): those whose time
    was the watermark they met and still is. Flink keeps such a row and registers its timer at the
    row's time, already reached: the timer fires at the next watermark, which comes only when it rises."""
    assert scan.event_time is not None
    if watermark == MIN_WATERMARK:
        return {}
    read = {p: (progress.start.get(p, 0), end) for p, end in upper.items()}
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    earlier = Window.partitionBy(F.col(f"`{PARTITION}`")).orderBy(F.col(f"`{OFFSET}`")).rowsBetween(
        Window.unboundedPreceding, -1)
    met = F.max(time).over(earlier) - watermark_spec(table).delay_ms
    held = views.located(table, read).withColumn(_MET, met).where(
        (time == F.lit(watermark)) & (F.col(_MET) == F.lit(watermark)))
    found: dict[int, list[int]] = {}
    for row in held.select(PARTITION, OFFSET).collect():
        found.setdefault(int(row[PARTITION]), []).append(int(row[OFFSET]))
    return found


def _progress(state: RunState, table_uid: str) -> SourceProgress | None:
    return next((p for p in state.sources.values() if p.table_uid == table_uid), None)


def arrival_watermarks(views: TableViews, table: TableDef, frame: DataFrame, ranges: Ranges | None, *,
                       exact: bool, runs: list[dict[int, int]] | None = None,
                       idle_partitions: bool = True) -> DataFrame:
    """The table's rows (`frame`, as the scan reads them) with ARRIVAL_WATERMARK: the watermark each
    record met, its partition's highest earlier time minus the delay, or over several partitions the
    one `_arrivals` gives it (`runs`: where each run began; up to REPLAYED_ROWS records). `exact` when
    the query has one source, append-only; else the lowest watermark (only the run's watermark gates)."""
    lowest = frame.withColumn(ARRIVAL_WATERMARK, F.lit(MIN_WATERMARK))
    if not exact or table.upsert or any(b.retractions for b in views.logs.store.batches(table.uid)):
        return lowest
    if table.partitions > 1:
        met = None if ranges is None or runs is None else _met_by_record(
            views, table, ranges, runs, idle_partitions=idle_partitions)
        if met is None:
            return lowest
        spark = frame.sparkSession
        arrived = spark.createDataFrame([(p, o, w) for (p, o), (_t, w) in met.items()],
                                        f"`{PARTITION}` INT, `{OFFSET}` BIGINT, `{ARRIVAL_WATERMARK}` BIGINT")
        rows = views.located(table, ranges).join(F.broadcast(arrived), [PARTITION, OFFSET])
        return rows.select(*[F.col(f"`{name}`") for name in frame.columns], F.col(f"`{ARRIVAL_WATERMARK}`"))
    spec = watermark_spec(table)
    time = F.unix_millis(F.col(f"`{spec.column}`").cast("timestamp"))
    earlier = Window.partitionBy(F.col(f"`{PARTITION}`")).orderBy(F.col(f"`{OFFSET}`")).rowsBetween(
        Window.unboundedPreceding, -1)
    rows = views.located(table, ranges)
    arrival = F.coalesce(F.max(time).over(earlier) - spec.delay_ms, F.lit(MIN_WATERMARK))
    return rows.select(*[F.col(f"`{name}`") for name in frame.columns], arrival.alias(ARRIVAL_WATERMARK))


@dataclass
class Replayed:
    """A bounded OVER's replay: offsets dropped, kept but waiting for the next watermark, and kept after
    their key's state was cleared (how many times it was -> offsets), each by partition."""

    dropped: dict[int, list[int]]
    held: dict[int, list[int]]
    clearings: dict[int, dict[int, list[int]]]


def _replay_bounded_over(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress,
                         upper: Mapping[int, int], runs: list[dict[int, int]], *,
                         idle_partitions: bool) -> Replayed | None:
    """A bounded OVER (ROWS n / RANGE interval PRECEDING), replayed record by record as Flink's
    RowTime*BoundedPrecedingFunction runs it, in the order and with the watermarks of `_arrivals` (`runs`:
    where each recorded run began, per partition): a record not later than its key's last triggering
    time is dropped; a kept one fires (is emitted) when the watermark next rises to its time, so a late
    one that is kept waits for the next rise. A RANGE frame also sets a cleanup timer per key, 1.5
    intervals (+1 ms) after the newest row it kept, moved only when a row needs it later than one interval
    after itself: when it fires the key's state is cleared, its last triggering time with it (a row older
    than one emitted before is kept again), and an outdated cleanup timer counts as a triggering time.
    The rows a key keeps after a clearing count only each other: the OVER partitions by the number of
    clearings before each row (CLEARINGS). None when the table holds more records than the driver replays
    (then runs judge as before)."""
    assert scan.late is not None and scan.event_time is not None
    read = {p: (progress.start.get(p, 0), end) for p, end in upper.items()}
    if sum(end - start for start, end in read.values()) > REPLAYED_ROWS:
        return None
    declared = [table.column(k) for k in scan.late.keys]
    keys = [F.col(f"`{c.name}`") for c in declared if c is not None] if all(declared) else []
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    records = views.located(table, read).select(
        F.col(f"`{PARTITION}`").alias("p"), F.col(f"`{OFFSET}`").alias("o"), F.struct(*keys).alias("k"),
        time.alias("t"), _seen(scan.late).alias("seen")).collect()
    span = scan.late.range_ms
    timers = _KeyTimers()
    for record, watermark in _arrivals(records, runs, table.partitions, watermark_spec(table).delay_ms,
                                       idle_partitions=idle_partitions):
        if record["t"] is not None and record["seen"]:  # (a row the OVER's WHERE filters out moves the watermark only)
            timers.arrive((int(record["p"]), int(record["o"])), tuple(record["k"]), record["t"], span)
        timers.advance(watermark)
    return timers.replayed()


def _arrivals(records: list[Row], runs: list[dict[int, int]], partitions: int, delay: int, *,
              idle_partitions: bool) -> Iterator[tuple[Row, int]]:
    """The records (`p`, `o`, `t`) in the order a run reads them, each with the watermark after it: run by
    run (`runs`: where each began, per partition; records before the first form one run), partition by
    partition, in offset order. A partition's watermark is its highest time so far minus `delay`; the
    source's the lowest over the run's partitions with records (every partition when idleness is off;
    one without any time yet holds it at the minimum)."""
    starts = {p: [r.get(p, 0) for r in runs] for p in range(partitions)}

    def run_of(record: Row) -> int:
        return bisect.bisect_right(starts[record["p"]], record["o"])

    highest: dict[int, int] = {}
    watermark = MIN_WATERMARK
    for _run, group in itertools.groupby(sorted(records, key=lambda r: (run_of(r), r["p"], r["o"])), key=run_of):
        read = list(group)
        active = sorted({int(r["p"]) for r in read}) if idle_partitions else range(partitions)
        for record in read:
            if record["t"] is not None:
                highest[record["p"]] = max(highest.get(record["p"], record["t"]), record["t"])
            lows = [highest.get(p) for p in active]
            if all(low is not None for low in lows):
                watermark = max(watermark, min(low for low in lows if low is not None) - delay)
            yield record, watermark


def _seen(rule: LateRule) -> Column:
    """Whether the OVER sees a row of its table: its WHERE (and those it reads the table through) keeps it."""
    return F.lit(True) if rule.where is None else F.coalesce(F.expr(rule.where), F.lit(False))


class _KeyTimers:
    """A bounded OVER's per-key state and event-time timers, as Flink keeps them (_replay_bounded_over)."""

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        self.last: dict[tuple[object, ...], int] = {}  # per key, its last triggering time
        self.cleanup: dict[tuple[object, ...], int] = {}  # per key, its cleanup time (RANGE frames)
        self.waiting: dict[tuple[object, ...], dict[int, list[Place]]] = {}  # per key, time -> records kept
        self.timers: list[tuple[int, int, tuple[object, ...]]] = []  # a heap of (time, order, key)
        self.scheduled: set[tuple[tuple[object, ...], int]] = set()  # one timer per key and time
        self.order = itertools.count()  # (ties in time fire in the order they were set)
        self.dropped: list[Place] = []
        self.clearings: dict[tuple[object, ...], int] = {}  # per key, how many times its state was cleared
        self.after_clearing: dict[Place, int] = {}  # a record kept after its key's state was cleared -> how often

    def arrive(self, at: Place, key: tuple[object, ...], moment: int, span: int | None) -> None:
        if moment <= self.last.get(key, MIN_WATERMARK):
            self.dropped.append(at)
            return
        self.waiting.setdefault(key, {}).setdefault(moment, []).append(at)
        if self.clearings.get(key):
            self.after_clearing[at] = self.clearings[key]
        self._schedule(key, moment)
        if span is not None and (key not in self.cleanup or self.cleanup[key] < moment + span + 1):
            self.cleanup[key] = moment + span * 3 // 2 + 1
            self._schedule(key, self.cleanup[key])

    def advance(self, watermark: int) -> None:
        """The watermark rises to `watermark` (if higher): every timer at or before it fires, in time order."""
        if watermark <= self.watermark:
            return
        self.watermark = watermark
        while self.timers and self.timers[0][0] <= watermark:
            moment, _order, key = heapq.heappop(self.timers)
            self.scheduled.discard((key, moment))
            if self.cleanup.get(key, moment + 1) <= moment:  # the key's state cleared
                del self.cleanup[key]
                self.last.pop(key, None)
                self.clearings[key] = self.clearings.get(key, 0) + 1
                self.dropped.extend(at for ats in self.waiting.pop(key, {}).values() for at in ats)
                continue
            self.waiting.get(key, {}).pop(moment, None)  # emitted
            self.last[key] = moment

    def replayed(self) -> Replayed:
        """What the replay found, by partition."""
        clearings: dict[int, dict[int, list[int]]] = {}
        for (partition, offset), count in self.after_clearing.items():
            clearings.setdefault(count, {}).setdefault(partition, []).append(offset)
        return Replayed(_by_partition(self.dropped), _by_partition(self.held()), clearings)

    def held(self) -> list[Place]:
        """Records kept but not emitted though the watermark passed them: they fire at its next rise."""
        return sorted(at for times in self.waiting.values() for moment, ats in times.items()
                      if moment <= self.watermark for at in ats)

    def _schedule(self, key: tuple[object, ...], moment: int) -> None:
        if (key, moment) not in self.scheduled:
            self.scheduled.add((key, moment))
            heapq.heappush(self.timers, (moment, next(self.order), key))


def _by_partition(places: list[Place]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for partition, offset in sorted(places):
        found.setdefault(partition, []).append(offset)
    return found
