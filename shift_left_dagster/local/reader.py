"""A local service's data, read-only, for checks: its catalog, table logs and statement progress.

Checks run beside the service (another thread or another process), never
through it: sqlite is opened read-only and every read of one check run can
happen inside one `snapshot()`, so a statement's progress and the batches
it wrote are seen together even while the engine keeps writing (a run's
batches and progress commit in one transaction, store.py).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from shift_left_dagster.deploy.stretches import split
from shift_left_dagster.local.catalog import (
    DELETE,
    INSERT,
    OFFSET,
    OP,
    PARTITION,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    TableDef,
    TableId,
)
from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.jobs import LOG_ORDER, Job, Jobs, Sink
from shift_left_dagster.local.settings import IDENTITY
from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.store import RunState, SourceProgress, Store
from shift_left_dagster.project.parsing import parse_one_statement


class LocalDataError(ValueError):
    """What a check can not read from the local service, in words a person can act on."""


class ReadOnlyStore(Store):
    """The service's sqlite store opened read-only (mode=ro): only Store's read methods work."""

    def __init__(self, path: Path) -> None:  # no super(): it would create the schema, a write
        if not path.is_file():
            raise LocalDataError(f"{path}: no local service data here (start it, or set its data dir)")
        self._db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                                   isolation_level=None)
        self._lock = threading.RLock()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees the same committed state of the store."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                self._db.execute("COMMIT")


STRETCH = "__sl_stretch"  # which code version's stretch an expected record comes from (0: the oldest)


def _stored(sink: Sink) -> list[Column]:
    return [F.col(f"`{c.name}`") for c in sink.table.stored_columns]


class LocalData:
    """Tables, current rows, expected rows and progress of one local service's data dir."""

    def __init__(self, data_dir: Path, spark: SparkSession) -> None:
        self.store = ReadOnlyStore(data_dir / "service.db")
        self.logs = TableLogs(data_dir / "tables", spark, self.store)
        self.jobs = Jobs(spark, self.store, self.logs)

    def close(self) -> None:
        self.store.close()

    def snapshot(self) -> AbstractContextManager[None]:
        return self.store.snapshot()

    def table(self, name: str) -> TableDef:
        found = self.store.table(TableId(catalog=IDENTITY.environment_id, database=IDENTITY.cluster_id, name=name))
        if found is None:
            raise LocalDataError(f"table {name} does not exist on the local service")
        return found

    def current_rows(self, table: TableDef) -> DataFrame:
        """The table as it stands (TableViews.state), stored columns only."""
        return self.jobs.views.state(table).select(*[F.col(f"`{c.name}`") for c in table.stored_columns])

    def live_records(self, table: TableDef) -> DataFrame:
        """Records whose keys must be unique: for an upsert table, the latest non-delete record of each
        key *in each partition* (a key live in two partitions is a duplicate however it is read);
        for any other table, its current rows."""
        if not table.upsert:
            return self.current_rows(table)
        keys = [F.col(f"`{k}`") for k in table.primary_key]
        latest = Window.partitionBy(*keys, F.col(f"`{PARTITION}`")).orderBy(F.col(f"`{OFFSET}`").desc())
        op = F.col(f"`{OP}`")
        return (self.logs.read(table).where(op != UPDATE_BEFORE).withColumn("__sl_n", F.row_number().over(latest))
                .where((F.col("__sl_n") == 1) & (op != DELETE))
                .select(*[F.col(f"`{c.name}`") for c in table.stored_columns]))

    def progress(self, statement: str) -> RunState | None:
        return self.store.run_state(statement)

    def lag(self, statement: str) -> dict[str, int] | None:
        """Per source table, records written and not yet read by the statement (None: it never ran)."""
        state = self.progress(statement)
        if state is None:
            return None
        lag: dict[str, int] = {}
        for name, source in state.sources.items():
            ends = self.store.end_offsets(source.table_uid)
            if source.bound is not None:
                ends = {p: min(end, source.bound.get(p, 0)) for p, end in ends.items()}
            lag[name] = sum(max(end - source.next.get(p, 0), 0) for p, end in ends.items())
        return lag

    def expected_rows(self, statement: str, sql: str, properties: Mapping[str, str], table: str) -> DataFrame:
        """What `table` should hold: the statement's query (the engine's own translation and views) over
        its sources as of the offsets the statement has processed, cast to the table's stored columns.

        A statement that replaced earlier ones in place (from their offsets) records the stretches they
        wrote (deploy/stretches.py): each is recomputed with the SQL that wrote it, up to where it
        stopped, and the statement's own query from there. A source read from carried offsets with no
        recorded stretch (the same code swapped) is read from its beginning with the statement's query.
        """
        earlier, body = split(sql)
        state = self.progress(statement)
        if state is None:
            raise LocalDataError(f"statement {statement} has processed nothing yet (no saved progress)")
        job, index, sink = self._sink_job(statement, body, properties, table)
        # A window aggregation holds the windows its watermark fired so far (windows.py).
        fired = (MIN_WATERMARK, state.watermarks.get(str(index), MIN_WATERMARK))
        if not sink.incremental:  # a recomputed (stateful) query: never replaced in place
            result = self.jobs.bind(job, sink.query, self._window(job, state),
                                    self._upper(job, state), fired=fired)
            return self.jobs.shape(result, sink, incremental=False).select(*_stored(sink))
        frames: list[DataFrame] = []
        floor: dict[str, dict[int, int]] = {}
        for number, stretch in enumerate(earlier):
            old_job, _, old_sink = self._sink_job(f"{statement}-stretch-{number}", stretch.sql, properties, table)
            upper = {t.uid: {p: stretch.until.get(t.name, {}).get(p, 0) for p in range(t.partitions)}
                     for t in old_job.sources.values()}
            frames.append(self._produced(old_job, old_sink, self._floored(old_job, state, floor), upper, fired,
                                         number))
            floor = stretch.until
        window = self._floored(job, state, floor) if earlier else self._window(job, state)
        frames.append(self._produced(job, sink, window, self._upper(job, state), fired, len(earlier)))
        shaped = frames[0]
        for frame in frames[1:]:
            shaped = shaped.unionByName(frame)
        op = F.col(f"`{OP}`")
        if not sink.table.upsert:
            return shaped.where(op.isin(INSERT, UPDATE_AFTER)).select(*_stored(sink))
        # An incremental (stateless) query carries each input record's op and offset: the sink keeps,
        # like TableViews.state, the latest record per key (upsert), the later stretch winning.
        keys = [F.col(f"`{k}`") for k in sink.table.primary_key]
        latest = Window.partitionBy(*keys).orderBy(F.col(STRETCH).desc(), F.col(LOG_ORDER).desc())
        return (shaped.where(op != UPDATE_BEFORE).withColumn("__sl_n", F.row_number().over(latest))
                .where((F.col("__sl_n") == 1) & (op != DELETE)).select(*_stored(sink)))

    def _sink_job(self, name: str, sql: str, properties: Mapping[str, str], table: str) -> tuple[Job, int, Sink]:
        job = self.jobs.compile(name, parse_one_statement(sql, name), properties)
        found = next(((i, s) for i, s in enumerate(job.sinks) if s.table.name == table), None)
        if found is None:
            raise LocalDataError(f"statement {name} does not write table {table}")
        return job, found[0], found[1]

    def _produced(self, job: Job, sink: Sink, window: RunState, upper: dict[str, dict[int, int]],
                  fired: tuple[int, int], stretch: int) -> DataFrame:
        """One stretch's output records, in the engine's mapping onto the sink, numbered by stretch."""
        result = self.jobs.bind(job, sink.query, window, upper, incremental=True, fired=fired)
        return self.jobs.shape(result, sink, incremental=True).withColumn(STRETCH, F.lit(stretch))

    @staticmethod
    def _upper(job: Job, state: RunState) -> dict[str, dict[int, int]]:
        processed = {s.table_uid: s.next for s in state.sources.values()}
        return {t.uid: {p: processed.get(t.uid, {}).get(p, 0) for p in range(t.partitions)}
                for t in job.sources.values()}

    @staticmethod
    def _window(job: Job, state: RunState) -> RunState:
        """The statement's read range: from its start offsets, or from 0 where it started from carried
        offsets with no stretch recorded (the sink holds what the swapped statement, same code, wrote)."""
        window = RunState(runs=state.runs)
        for name, source in state.sources.items():
            table = next((t for t in job.sources.values() if t.uid == source.table_uid), None)
            if table is None:
                continue
            carried = job.options[source.table_uid].startup_mode == "specific-offsets"
            low = {p: 0 for p in range(table.partitions)} if carried else source.start
            # bind() reads [start, upper) for a recomputed query and [next, upper) for an incremental one
            window.sources[name] = SourceProgress(table_uid=source.table_uid, start=low, next=low)
        return window

    @staticmethod
    def _floored(job: Job, state: RunState, floor: dict[str, dict[int, int]]) -> RunState:
        """A read range starting where the previous stretch stopped (`floor`, by topic; absent: 0)."""
        window = RunState(runs=state.runs)
        for table in job.sources.values():
            low = {p: floor.get(table.name, {}).get(p, 0) for p in range(table.partitions)}
            window.sources[table.name] = SourceProgress(table_uid=table.uid, start=low, next=low)
        return window
