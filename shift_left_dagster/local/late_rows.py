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
record the watermark it met. Over one source, window TVFs (windows.py) count a record only in the
windows not fired at its arrival, and an unbounded OVER or a keep-first deduplication judges it by
that watermark (a keep-first row at that watermark is kept but held back while the watermark stays
there: Flink's timer for it fires only at the next watermark). A bounded OVER is replayed record by
record on the driver (its rule depends on which rows its key fired before): dropped rows join the
progress, and a late row it keeps is held back until the watermark next rises, as Flink's timer for
it fires only then.

Over a table of one partition the order is the log's. Over several, the records are taken run by
run (each run's offsets are recorded, interval_reads.py), a run's new records partition by
partition, as Flink's Kafka reader emits a fetch split by split: each partition's watermark is its
highest time so far minus the delay, the source's the lowest over the partitions with records in the
run (the others are idle, event_time.py, from the run's start), so a partition read later in a run
still holds the watermark at what it had before (`_floors`: per run and partition, the watermark a
record can not go below and the lowest of the other partitions; Spark gives each record its own
partition's part). A bounded OVER's replay takes the records in that order on the driver (`_arrivals`).
Flink's own interleaving of partitions is not deterministic; this is one it can take, and the one the
run's watermark ends at (event_time.source_watermark).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import OFFSET, PARTITION, TableDef
from shift_left_dagster.local.event_time import MAX_WATERMARK, MIN_WATERMARK, watermark_inputs, watermark_spec
from shift_left_dagster.local.interval_reads import with_runs
from shift_left_dagster.local.spark import integer_rows
from shift_left_dagster.local.storage import in_ranges
from shift_left_dagster.local.store import IntervalRead, RunState, SourceProgress
from shift_left_dagster.local.views import Ranges, TableViews
from shift_left_dagster.local.windows import ARRIVAL_WATERMARK
from shift_left_dagster.translation.interval_join import ARRIVAL_MARK, ARRIVAL_RUN
from shift_left_dagster.translation.spark import LateRule, Scan, SparkQuery

_LAST = "__sl_last"
_MET = "__sl_met"  # the watermark a record met
_START, _OTHERS = "__sl_run_start", "__sl_others"  # a record's _Floor
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
            reads = state.interval_reads.get(query_key, [])
            new = {p: (progress.next.get(p, 0), upper[table.uid][p]) for p in range(table.partitions)}
            if not any(end > start for start, end in new.values()):
                continue  # (nor can the watermark of a query reading only this table have moved)
            if alone and scan.late.kind == "key":
                replayed = _replay_bounded_over(views, table, scan, progress, upper[table.uid], reads,
                                                idle_partitions=idle_partitions)
                if replayed is not None:
                    key = _dropped_key(query_key, index)
                    progress.dropped[key], progress.dropped[_held_key(query_key, index)] = replayed.dropped, \
                        replayed.held
                    progress.clearings[key] = replayed.clearings
                    continue
            if alone and scan.late.kind != "key":
                after = fired.get(query_key, (MIN_WATERMARK, MIN_WATERMARK))[1]
                found, held = _judge_per_record(views, table, scan, progress, upper[table.uid], reads, before, after,
                                                idle_partitions=idle_partitions)
                if scan.late.kind == "before":
                    progress.dropped[_held_key(query_key, index)] = held
            elif before == MIN_WATERMARK:
                continue  # nothing is late before the query has a watermark
            else:
                found = _late_offsets(views, table, scan, progress, new, before)
            merged = progress.dropped.setdefault(_dropped_key(query_key, index), {})
            for partition, offsets in found.items():
                merged[partition] = sorted(set(merged.get(partition, [])) | set(offsets))


def _met_frame(views: TableViews, table: TableDef, read: Ranges | None, reads: list[IntervalRead], *,
               idle_partitions: bool) -> DataFrame:
    """The table's records of `read` (located) with _MET, the watermark each met: its partition's highest
    earlier time minus the delay; over several partitions, not below the run's floor (`_floors`: a run reads
    its partitions in turn; `reads`: the query's recorded runs, interval_reads.py). One Spark job (the runs'
    and partitions' highest times) for several partitions, none for one."""
    spec = watermark_spec(table)
    time = F.unix_millis(F.col(f"`{spec.column}`").cast("timestamp"))
    earlier = Window.partitionBy(F.col(f"`{PARTITION}`")).orderBy(F.col(f"`{OFFSET}`")).rowsBetween(
        Window.unboundedPreceding, -1)
    own = F.coalesce(F.max(time).over(earlier) - spec.delay_ms, F.lit(MIN_WATERMARK))
    rows = views.located(table, read)
    if table.partitions == 1:
        return rows.withColumn(_MET, own)
    rows = with_runs(rows, table.uid, table.partitions, reads)
    run, partition = F.col(f"`{ARRIVAL_RUN}`"), F.col(f"`{PARTITION}`")
    highest: dict[int, dict[int, int | None]] = {}
    for row in rows.groupBy(run, partition).agg(F.max(time).alias("t")).collect():
        highest.setdefault(int(row[0]), {})[int(row[1])] = row["t"]
    floors, _after = _floors(highest, table.partitions, spec.delay_ms, idle_partitions=idle_partitions)
    floor = integer_rows(rows.sparkSession, [(r, p, f.start, f.others) for (r, p), f in floors.items()],
                         [(ARRIVAL_RUN, "INT"), (PARTITION, "INT"), (_START, "BIGINT"), (_OTHERS, "BIGINT")])
    met = F.greatest(F.col(_START), F.least(F.col(_OTHERS), own))
    return rows.join(F.broadcast(floor), [ARRIVAL_RUN, PARTITION]).withColumn(_MET, met).drop(
        ARRIVAL_RUN, ARRIVAL_MARK, _START, _OTHERS)


def _judge_per_record(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress,
                      upper: Mapping[int, int], reads: list[IntervalRead], before: int, after: int, *,
                      idle_partitions: bool) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """The run's new records the scan's rule drops, each judged by the watermark it met (never below the
    query's before the run), and a keep-first deduplication's records held: kept at the watermark they met,
    which still is the watermark (Flink's timer for such a row fires only at the next watermark). One Spark
    job (and `_met_frame`'s)."""
    assert scan.late is not None and scan.event_time is not None
    new = {p: (progress.next.get(p, 0), end) for p, end in upper.items()}
    # the new records alone, unless rows of earlier runs can be held or the runs' floors need them
    read = {p: (progress.start.get(p, 0), end) for p, end in upper.items()} \
        if scan.late.kind == "before" or table.partitions > 1 else new
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    met = F.greatest(F.col(_MET), F.lit(before))
    fresh = in_ranges(new)
    late = fresh & (time < met if scan.late.kind == "before" else time <= met)
    held = F.lit(scan.late.kind == "before" and after != MIN_WATERMARK) & (time == F.lit(after)) & (
        F.col(_MET) == F.lit(after))
    rows = _met_frame(views, table, read, reads, idle_partitions=idle_partitions).where(late | held)
    dropped: list[Place] = []
    kept: list[Place] = []
    for row in rows.select(PARTITION, OFFSET, late.alias("late")).collect():
        (dropped if row["late"] else kept).append((int(row[PARTITION]), int(row[OFFSET])))
    return _by_partition(dropped), _by_partition(kept)


def _late_offsets(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress, new: Ranges,
                  watermark: int) -> dict[int, list[int]]:
    """Where the records of the new ranges are that the scan's rule drops, judged against the watermark
    before the run (one Spark job): where the query's watermark is not the table's alone."""
    assert scan.late is not None and scan.event_time is not None
    time = F.unix_millis(F.col(f"`{scan.event_time}`").cast("timestamp"))
    if scan.late.kind == "key":
        late = _after_key_last(views, table, scan.late, progress, new, time, watermark)
    else:
        late = views.located(table, new).where(time < watermark if scan.late.kind == "before" else time <= watermark)
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


def _progress(state: RunState, table_uid: str) -> SourceProgress | None:
    return next((p for p in state.sources.values() if p.table_uid == table_uid), None)


def arrival_watermarks(views: TableViews, table: TableDef, frame: DataFrame, ranges: Ranges | None, *,
                       exact: bool, reads: list[IntervalRead] | None = None,
                       idle_partitions: bool = True) -> DataFrame:
    """The table's rows (`frame`, as the scan reads them) with ARRIVAL_WATERMARK: the watermark each
    record met (`_met_frame`; `reads`: the query's recorded runs). `exact` when the query has one source,
    append-only; else the lowest watermark (only the run's watermark gates)."""
    if not exact or table.upsert or any(b.retractions for b in views.logs.store.batches(table.uid)):
        return frame.withColumn(ARRIVAL_WATERMARK, F.lit(MIN_WATERMARK))
    rows = _met_frame(views, table, ranges, reads or [], idle_partitions=idle_partitions)
    return rows.select(*[F.col(f"`{name}`") for name in frame.columns], F.col(_MET).alias(ARRIVAL_WATERMARK))


@dataclass
class Replayed:
    """A bounded OVER's replay: offsets dropped, kept but waiting for the next watermark, and kept after
    their key's state was cleared (how many times it was -> offsets), each by partition."""

    dropped: dict[int, list[int]]
    held: dict[int, list[int]]
    clearings: dict[int, dict[int, list[int]]]


def _replay_bounded_over(views: TableViews, table: TableDef, scan: Scan, progress: SourceProgress,
                         upper: Mapping[int, int], reads: list[IntervalRead], *,
                         idle_partitions: bool) -> Replayed | None:
    """A bounded OVER (ROWS n / RANGE interval PRECEDING), replayed record by record as Flink's
    RowTime*BoundedPrecedingFunction runs it, in the order and with the watermarks of `_arrivals` (`reads`:
    the query's recorded runs): a record not later than its key's last triggering
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
    runs = [r.starts.get(table.uid, {}) for r in reads]
    arrivals, final = _arrivals(records, runs, table.partitions, watermark_spec(table).delay_ms,
                                idle_partitions=idle_partitions)
    for record, met in arrivals:
        timers.advance(met)
        if record["t"] is not None and record["seen"]:  # (a row the OVER's WHERE filters out moves the watermark only)
            timers.arrive((int(record["p"]), int(record["o"])), tuple(record["k"]), record["t"], span)
    timers.advance(final)
    return timers.replayed()


def _arrivals(records: list[Row], runs: list[dict[int, int]], partitions: int, delay: int, *,
              idle_partitions: bool) -> tuple[list[tuple[Row, int]], int]:
    """The records (`p`, `o`, `t`) in the order the runs read them, each with the watermark it met, and the
    watermark after the last: run by run (`runs`: where each began, per partition; records before the
    first are of it), partition by partition, in offset order (`_floors` says which watermark)."""
    starts = {p: [r.get(p, 0) for r in runs] for p in range(partitions)}

    def run_of(record: Row) -> int:
        return max(0, bisect.bisect_right(starts[record["p"]], record["o"]) - 1)

    ordered = sorted(records, key=lambda r: (run_of(r), r["p"], r["o"]))
    highest: dict[int, dict[int, int | None]] = {}
    for record in ordered:
        read = highest.setdefault(run_of(record), {})
        moment, known = record["t"], read.get(record["p"])
        read[record["p"]] = known if moment is None else moment if known is None else max(known, moment)
    floors, final = _floors(highest, partitions, delay, idle_partitions=idle_partitions)
    own: dict[int, int] = {}  # per partition, its highest time so far
    arrivals: list[tuple[Row, int]] = []
    for record in ordered:
        floor, mine = floors[(run_of(record), record["p"])], own.get(record["p"])
        arrivals.append((record, max(floor.start, min(floor.others, MIN_WATERMARK if mine is None else mine - delay))))
        if record["t"] is not None:
            own[record["p"]] = record["t"] if mine is None else max(mine, record["t"])
    return arrivals, final


@dataclass(frozen=True)
class _Floor:
    """While a run reads one of its partitions: the watermark when the run began, and the lowest of the
    run's other partitions' watermarks (those read before it at their highest of the run, those after it
    at their highest before the run). A record of the partition met max(start, min(others, its own))."""

    start: int
    others: int


def _floors(highest: Mapping[int, Mapping[int, int | None]], partitions: int, delay: int, *,
            idle_partitions: bool) -> tuple[dict[tuple[int, int], _Floor], int]:
    """Per run and partition it read (`highest`: run -> partition -> its highest time in the run, None
    when all NULL), the partition's `_Floor`; and the watermark after the last run. A partition's
    watermark is its highest time so far minus `delay`, the source's the lowest over the run's partitions
    (every partition when idleness is off; one without any time yet holds it at the minimum), never
    decreasing; partitions idle in a run are left out from its start."""
    seen: dict[int, int] = {}  # per partition, its highest time before the run
    watermark = MIN_WATERMARK
    floors: dict[tuple[int, int], _Floor] = {}
    for run in sorted(highest):
        read = highest[run]
        active = sorted(read) if idle_partitions else list(range(partitions))
        watermark = _raised(watermark, [seen.get(p) for p in active], delay)
        after = dict(seen)
        for partition, moment in read.items():
            if moment is not None:
                after[partition] = max(after.get(partition, moment), moment)
        for partition in read:
            others = [(after if q < partition else seen).get(q) for q in active if q != partition]
            floors[(run, partition)] = _Floor(watermark, MAX_WATERMARK if not others else _raised(
                MIN_WATERMARK, others, delay))
        watermark = _raised(watermark, [after.get(p) for p in active], delay)
        seen = after
    return floors, watermark


def _raised(watermark: int, highest: list[int | None], delay: int) -> int:
    """The watermark once partitions of these highest times count: their lowest minus the delay, unless
    one has none yet (it holds the watermark), never lower than `watermark`."""
    if not highest or any(h is None for h in highest):
        return watermark
    return max(watermark, min(h for h in highest if h is not None) - delay)


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
