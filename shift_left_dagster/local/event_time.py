"""Event time: the watermark of each source table and of the operators reading them.

What Flink does, and the local choices where Confluent Cloud's behaviour depends on wall-clock
time or on more data than a local run has:

- The time attribute is the column of the table's WATERMARK FOR clause; without one it is
  `$rowtime`, the Kafka record timestamp.
- A declared `WATERMARK FOR c AS c - INTERVAL ...` (or `AS c`) gives the watermark as the highest
  `c` read minus that delay (Flink's bounded out-of-orderness, evaluated per record).
- The default watermark. Confluent Cloud puts `SOURCE_WATERMARK()` on `$rowtime`: a bound it
  learns from a histogram of the observed out-of-orderness, at least 250 records per partition,
  at most 7 days ("Move SQL Statements to Production", docs.confluent.io: "Validate your
  watermark strategy"). That bound can not be reproduced on a few test records, so locally the
  default is `$rowtime - INTERVAL '0.001' SECOND`, Flink's strategy for ascending timestamps: a
  window closes at the first record at or after its end, and a record older than one already read
  in an earlier run is late for a window emitted since. Deterministic, and the tightest bound.
- Per partition the watermark is its highest event time minus the delay; a source's watermark is
  the minimum over its partitions (Flink's per-split watermarks, merged as on a shuffle), and an
  operator's the minimum over its inputs. None ever decreases.
- Once a run caught up, every input of an operator is idle (below), and Flink's watermark valve
  then emits the highest watermark of its inputs: so with idleness on, an operator ends each run at
  the highest of its inputs' watermarks (a temporal join whose versioned table lags its probe
  side still emits the probe rows the probe's watermark passed, as a caught-up Confluent statement
  does once the idle timeout elapsed).
- Idle partitions. Confluent Cloud detects idleness by default (15 s growing to 5 min): a
  partition without records for that long stops holding the watermark back. Locally a partition
  without new records in a run is idle for that run (the timeout taken as elapsed between runs,
  so results never depend on the wall clock); a source without new records is idle for its
  readers. 'sql.tables.scan.idle-timeout' = '0' disables this, as on Confluent Cloud: then every
  partition counts, and one that never had a record holds the watermark back for good.
- Flink emits watermarks periodically (pipeline.auto-watermark-interval, 200 ms, or after every
  record at 0 ms); locally an operator's watermark moves once per run, after the run's records, and
  within a run a record meets the watermark the records before it made (late_rows.py): over one
  source, a window TVF counts a record only in the windows not fired at its arrival, and an OVER or
  keep-first deduplication drops it as late as Flink does. A run reads a source's partitions one
  after another (as Flink's Kafka reader emits a fetch split by split), so a partition read later in
  the run still holds the watermark at what it had before the run: one interleaving Flink can take
  (its own is not deterministic), and the one the run's watermark ends at. With several sources Flink's
  watermark at a record depends on how their reads interleave; there only the run's watermark judges.
- End of input: a bounded source read to its bound emits the maximum watermark, as Flink's sources
  do when they finish, so every window still open fires. A snapshot query ('sql.snapshot.mode' =
  'now') is bounded, hence sees every window, as Flink's batch mode; it also takes any TIMESTAMP
  column as a window's time, where a streaming statement needs the time attribute.
- Record times written: a window result gets window_end - 1 ms (Flink's window_time, windows.py), a
  stateless row its input record's time, any other stateful row the time it is written (jobs.py).
- Event-time operators besides window aggregations hold a row until the watermark passes its time:
  an OVER aggregate ordered by the time attribute (Flink's RowTime*PrecedingFunction), a keep-first
  deduplication, ROW_NUMBER() ... ORDER BY time ASC = 1 (RowTimeDeduplicateKeepFirstRowFunction),
  and an event-time temporal join's probe side (TemporalRowTimeJoinOperator). Locally the tables
  feeding them (Scan.event_time, tagged by the translator) are read without the rows whose time
  is above the query's watermark, so the recompute (jobs.py) emits a row in the run whose
  watermark passes it. A keep-last deduplication (ORDER BY time DESC) emits at once and updates,
  as Flink's RowTimeDeduplicateFunction does: nothing is held. A LEFT interval join over two time
  attributes holds an unmatched left row until the query's watermark passes its interval's end
  (translation/interval_join.py, bound by `interval_args`); once emitted padded the row is final: a
  row read in a later run joins nothing that expired before that run (interval_reads.py).
- Late rows (read once the operator's watermark passed their time) are dropped by the rule of
  Flink's operator (late_rows.py; the watermark is the one before the run that reads them):
  an unbounded OVER (AbstractRowTimeUnboundedPrecedingOver) drops a row whose time is not after
  the watermark; a bounded one, ROWS n or RANGE interval PRECEDING (RowTime*BoundedPrecedingFunction),
  a row not later than its key's last triggering time, the latest time of the key's rows the
  watermark already emitted (so a row below the watermark is kept when its key is quiet); keep-first
  deduplication (RowTimeDeduplicateKeepFirstRowFunction) a row before the watermark (one at it is
  kept). Local limits: a bounded OVER's key is its PARTITION BY columns as the table has them (keys
  that are expressions or columns of a derived table make all rows one key), and its last time
  counts the table's rows before any filter of the query (over one source the rows are replayed in
  the order of the runs, late_rows.py, up to REPLAYED_ROWS records, else judged per run); Flink's RANGE
  OVER also forgets a key once
  the watermark passes its last row by 1.5 times the range, then takes a late row again, aggregated
  over the rows since: locally that row stays dropped. An event-time temporal join drops no probe
  row: a late one is joined at the next watermark, with the versions its state still holds (it
  keeps the latest version at or below the watermark and those after), where locally it gets the
  version valid at its time among those read before the watermark passed that time, even if Flink
  had dropped that version. A probe row emitted is final: it sees only the versions read by the run
  that emitted it (interval_reads.py, versions_as_read), so a version read later, even one late for
  its time, changes no row emitted. Window TVFs drop what comes
  after its window fired (windows.py); SESSION windows are gated as the others: a fired session is
  never emitted again, but a late record can still merge into a session not fired yet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from shift_left_dagster.local.catalog import ROWTIME, TableDef
from shift_left_dagster.local.store import SourceProgress
from shift_left_dagster.project.dialect import TableArgument
from shift_left_dagster.project.parsing import FLINK
from shift_left_dagster.translation.interval_join import INTERVAL_UNTIL
from shift_left_dagster.translation.intervals import interval_ms
from shift_left_dagster.translation.spark import WINDOW_TVFS, Scan, SparkQuery

MIN_WATERMARK, MAX_WATERMARK = -(2**62), 2**62  # epoch milliseconds: before and after any event
DEFAULT_DELAY_MS = 1
IDLE_TIMEOUT = "sql.tables.scan.idle-timeout"


class WatermarkError(ValueError):
    """A watermark or time attribute the local service can not use, in Flink's words."""


@dataclass(frozen=True)
class WatermarkSpec:
    column: str  # the time attribute
    delay_ms: int


def watermark_spec(table: TableDef) -> WatermarkSpec:
    """The table's time attribute and watermark delay (declared, else the local default on $rowtime)."""
    if table.watermark_column is None:
        return WatermarkSpec(ROWTIME, DEFAULT_DELAY_MS)
    return WatermarkSpec(table.watermark_column, _delay_ms(table.watermark_expression, table.watermark_column))


def _delay_ms(expression: str | None, column: str) -> int:
    if expression is None:
        return 0
    try:
        tree = sqlglot.parse_one(expression, dialect=FLINK)
    except ParseError:
        tree = None
    if isinstance(tree, exp.Anonymous) and tree.name.upper() == "SOURCE_WATERMARK":
        return DEFAULT_DELAY_MS
    if isinstance(tree, exp.Column) and tree.name.lower() == column.lower():
        return 0
    if isinstance(tree, exp.Sub) and isinstance(tree.this, exp.Column) and tree.this.name.lower() == column.lower():
        delay = interval_ms(tree.expression)
        if delay is not None:
            return delay
    raise WatermarkError(f"WATERMARK FOR {column} AS {expression} is not supported by the local service; "
                         f"write `{column}` or `{column} - INTERVAL 'n' SECOND|MINUTE|HOUR|DAY`")


def arrival_sign(scan: Scan, table: TableDef) -> int:
    """How a scan's view carries the arrival position (Scan.arrival): 0 not at all, 1 the offset,
    -1 the offset negated, for a keep-last deduplication (ROW_NUMBER ... ORDER BY the time attribute
    DESC kept at 1: Flink's RowTimeDeduplicateFunction lets an equal later row replace the kept one)."""
    if not scan.arrival:
        return 0
    last = scan.arrival_last_by
    return -1 if last is not None and last.lower() == watermark_spec(table).column.lower() else 1


def interval_join_times(scans: list[Scan], table_of: Callable[[exp.Table], TableDef | None], *,
                        snapshot: bool) -> None:
    """Keep the scans' interval-join tags (translation/interval_join.py) only when every tagged column is
    its table's time attribute in a streaming statement: else Flink plans a regular join."""
    tagged = [s for s in scans if s.interval_time]
    for scan in tagged:
        table = table_of(scan.table)
        if snapshot or table is None or (scan.interval_time or "").lower() != watermark_spec(table).column.lower():
            for other in tagged:
                other.interval_time = None
            return


def interval_args(query: SparkQuery, fired: tuple[int, int] | None) -> dict[str, int]:
    """The watermark a LEFT interval join's expired rows are emitted up to: the query's after the run,
    the highest when it is a regular join (no interval-join tags) or every row is emitted (no range)."""
    interval = any(s.interval_time for s in query.scans) and fired is not None
    return {INTERVAL_UNTIL: fired[1] if interval and fired is not None else MAX_WATERMARK}


def idleness(properties: Mapping[str, str]) -> bool:
    """Whether idle partitions are left out ('sql.tables.scan.idle-timeout' = 0 disables it)."""
    value = (properties.get(IDLE_TIMEOUT) or "").strip().lower()
    return re.fullmatch(r"0+(\.0*)?\s*[a-z]*", value) is None


def source_watermark(progress: SourceProgress, fresh: Mapping[int, int | None], spec: WatermarkSpec,
                     partitions: int, *, idle_partitions: bool, ended: bool) -> int | None:
    """A source's watermark after a run that read `fresh` (per partition with new records, its highest
    event time, None when all were NULL); None when the source is idle. Updates the progress's maxima."""
    for partition, highest in fresh.items():
        if highest is not None:
            progress.max_time[partition] = max(progress.max_time.get(partition, highest), highest)
    if ended:
        return MAX_WATERMARK
    active = sorted(fresh) if idle_partitions else list(range(partitions))
    if not active:
        return None
    seen = [progress.max_time.get(p) for p in active]
    if any(t is None for t in seen):
        return MIN_WATERMARK  # a partition without any event time yet holds it back
    return min(t for t in seen if t is not None) - spec.delay_ms


def combine(previous: int | None, inputs: Iterable[int | None], settled: Iterable[int | None] = ()) -> int | None:
    """An operator's watermark after a run: the minimum over its inputs that are not idle, or, once
    every input is idle (`settled`: each input's last watermark; empty when idleness is off), the
    highest of those; never decreasing."""
    candidates = [w for w in [previous, max((w for w in settled if w is not None), default=None)] if w is not None]
    active = [w for w in inputs if w is not None]
    if active:
        candidates.append(min(active))
    return max(candidates) if candidates else None


def watermark_inputs(query: SparkQuery) -> list[Scan]:
    """The scans whose sources make a query's watermark: a window aggregation's every input, else
    those of its event-time operators (their tagged tables and temporal joins' versioned tables)."""
    held = [s for s in query.scans if s.event_time]
    return held + [s for s in query.scans if s.versioned] if held else query.scans


def check_time_attributes(query: exp.Expression, table_of: Callable[[exp.Table], TableDef | None]) -> None:
    """In a streaming statement a window TVF's DESCRIPTOR must name the table's time attribute."""
    ctes = {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    for call in query.find_all(exp.Anonymous):
        args = call.expressions
        if call.name.upper() not in WINDOW_TVFS or len(args) < 2 or not isinstance(args[0], TableArgument):
            continue
        source, descriptor = args[0].this, args[1]
        if not isinstance(source, exp.Table) or (not source.db and source.name in ctes):
            continue  # a derived relation: its time attribute comes from its own sources
        table = table_of(source)
        if table is None or not isinstance(descriptor, exp.Anonymous) or not descriptor.expressions:
            continue
        column = descriptor.expressions[0].name
        if column.lower() == watermark_spec(table).column.lower():
            continue
        declared = table.column(column)
        kind = declared.type if declared is not None else "TIMESTAMP_LTZ(3)" if column == ROWTIME else "?"
        raise WatermarkError(f"The window function requires the timecol is a time attribute type, but is {kind}. "
                             f"The time attribute of '{table.name}' is "
                             f"'{watermark_spec(table).column}' (its WATERMARK FOR column, else $rowtime).")
