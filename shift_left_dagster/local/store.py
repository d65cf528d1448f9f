"""SQLite persistence of everything but table data: statements, catalog, batches, progress.

A statement's run (the batches it wrote and the offsets it read) commits in
one transaction, so a crash leaves either all of a run or none of it; batch
files on disk that no row names are leftovers of a crash (storage.py
deletes them at start).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from shift_left_dagster.local.catalog import PARTITION, TableDef, TableId

BASE = "$base"  # a batch file's folder names its partition and its first offset (storage.py)
FORMAT = 2  # table logs as one file per batch and partition, offsets implied (storage.py); 1 stored them

SCHEMA = """
CREATE TABLE IF NOT EXISTS statements (
    name TEXT PRIMARY KEY, seq INTEGER NOT NULL, compute_pool_id TEXT, phase TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS exceptions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, statement TEXT NOT NULL, name TEXT NOT NULL, message TEXT NOT NULL,
    timestamp TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    statement TEXT NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL, row TEXT NOT NULL,
    PRIMARY KEY (statement, seq));
CREATE TABLE IF NOT EXISTS tables (
    uid TEXT PRIMARY KEY, catalog TEXT NOT NULL, database TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL,
    UNIQUE (catalog, database, name));
CREATE TABLE IF NOT EXISTS partitions (
    table_uid TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
    PRIMARY KEY (table_uid, partition));
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT, table_uid TEXT NOT NULL, path TEXT NOT NULL, producer TEXT,
    rows INTEGER NOT NULL, retractions INTEGER NOT NULL, ranges TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS batches_by_table ON batches (table_uid, id);
CREATE TABLE IF NOT EXISTS retired (path TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (statement TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subjects (name TEXT PRIMARY KEY, table_uid TEXT, soft_deleted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS pools (id TEXT PRIMARY KEY, body TEXT NOT NULL);
"""


def now() -> str:
    """RFC 3339 UTC with microseconds, the form Confluent Cloud sends."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Duplicate(Exception):
    """A statement with this name exists."""


class Batch(BaseModel):
    """One atomically written set of records of a table; ranges are partition -> [first, end) offsets."""

    id: int = 0
    table_uid: str
    path: str
    producer: str | None = None
    rows: int
    retractions: int
    ranges: dict[int, tuple[int, int]]

    @property
    def files(self) -> list[str]:
        return batch_files(self.path, self.ranges)

    @property
    def time(self) -> int | None:
        return batch_time(self.path)


def batch_files(path: str, ranges: dict[int, tuple[int, int]]) -> list[str]:
    """A batch's files, one per partition in `ranges` (in that order), beside its path: a file's folder
    names the partition and its first offset (storage.py)."""
    folder, name = path.rsplit("/", 1)
    return [f"{folder}/{PARTITION}={p}/{BASE}={first}/{name}.parquet" for p, (first, _end) in ranges.items()]


def batch_time(path: str) -> int | None:
    """The `$rowtime` (epoch microseconds) every record of a batch has when its files hold no such column,
    from the batch's name (`b-<id>-t<micros>`; as a Kafka batch written with LogAppendTime keeps one time in
    its header); None: each record has its own in its file. `path`: the batch's or one of its files."""
    name = path.rsplit("/", 1)[-1].removesuffix(".parquet")
    return int(name.split("-t", 1)[1]) if "-t" in name else None


def _ranges(stored: str) -> dict[int, tuple[int, int]]:
    return {int(k): (v[0], v[1]) for k, v in json.loads(stored).items()}


class SourceProgress(BaseModel):
    """Where a statement reads one source table: start, bound (None: unbounded) and next offsets,
    per partition the highest event time read (epoch ms; event_time.py), and the late rows dropped."""

    table_uid: str
    start: dict[int, int] = Field(default_factory=dict)
    bound: dict[int, int] | None = None
    next: dict[int, int] = Field(default_factory=dict)
    max_time: dict[int, int] = Field(default_factory=dict)
    watermark: int | None = None  # the source's watermark after the last run that read it (event_time.py)
    # per scan of an event-time operator (late_rows.py), the offsets of the late rows it dropped, by partition
    dropped: dict[str, dict[int, list[int]]] = Field(default_factory=dict)
    # per scan of a RANGE-bounded OVER (late_rows.py), the rows kept after their key's state was cleared:
    # how many times it was -> partition -> offsets
    clearings: dict[str, dict[int, dict[int, list[int]]]] = Field(default_factory=dict)


class AggregateState(BaseModel):
    """Where a GROUP BY sink's accumulators are (a folder in the data dir, group_aggregation.py) and
    the fingerprint of the tables they were computed for."""

    path: str
    fingerprint: str


class IntervalRead(BaseModel):
    """One run of an outer interval join's or event-time temporal join's query (interval_reads.py): the
    query's watermark before it and where it began reading each source (table uid -> partition -> offset)."""

    watermark: int
    starts: dict[str, dict[int, int]] = Field(default_factory=dict)


class RunState(BaseModel):
    """A statement's persisted progress, keyed by source table name; `watermarks` holds, per query
    with event-time operators (windows.py, event_time.py), the watermark it has emitted up to (epoch ms);
    `aggregates`, per incremental GROUP BY sink (by position), its accumulators; `interval_reads`, per
    query with an outer interval join or an event-time temporal join, its runs in order."""

    sources: dict[str, SourceProgress] = Field(default_factory=dict)
    runs: int = 0
    watermarks: dict[str, int] = Field(default_factory=dict)
    aggregates: dict[str, AggregateState] = Field(default_factory=dict)
    interval_reads: dict[str, list[IntervalRead]] = Field(default_factory=dict)


class Store:
    """One sqlite connection shared by the HTTP threads and the engine thread, behind a lock."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.RLock()
        self._check_format(path)

    def _check_format(self, path: Path) -> None:
        """Refuse a data directory whose table logs an older version of the service wrote."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version < FORMAT and self._db.execute("SELECT COUNT(*) FROM batches").fetchone()[0]:
            self._db.close()
            raise RuntimeError(f"the local service's data directory {path.parent} holds table data in an older "
                               f"format (version {version}, this service reads version {FORMAT}): start it with "
                               f"another data directory, or delete this one")
        self._db.execute(f"PRAGMA user_version = {FORMAT}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _all(self, sql: str, *args: Any) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _one(self, sql: str, *args: Any) -> tuple | None:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    # --- statements ----------------------------------------------------------------

    def create_statement(self, body: dict[str, Any]) -> None:
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM statements WHERE name = ?", (body["name"],)).fetchone():
                raise Duplicate(body["name"])
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM statements").fetchone()[0]
            db.execute(
                "INSERT INTO statements VALUES (?, ?, ?, ?, ?)",
                (body["name"], seq, body["spec"].get("compute_pool_id"), body["status"]["phase"], json.dumps(body)),
            )

    def statement(self, name: str) -> dict[str, Any] | None:
        row = self._one("SELECT body FROM statements WHERE name = ?", name)
        return json.loads(row[0]) if row else None

    def statements(self, *, compute_pool_id: str | None = None, after: int = 0, limit: int | None = None,
                   labels: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], int | None]:
        """A page of statements in creation order, and the seq to continue after (None: last page)."""
        rows = self._all(
            "SELECT seq, body FROM statements WHERE seq > ? AND (? IS NULL OR compute_pool_id = ?) ORDER BY seq",
            after, compute_pool_id, compute_pool_id,
        )
        page: list[dict[str, Any]] = []
        last = after
        for seq, text in rows:
            body = json.loads(text)
            found = body["metadata"].get("labels") or {}
            if labels and any(found.get(k) != v for k, v in labels.items()):
                continue
            if limit is not None and len(page) == limit:
                return page, last
            page.append(body)
            last = seq
        return page, None

    def names_in_phase(self, *phases: str) -> list[str]:
        return [name for name, _phase in self.phases_of(*phases)]

    def phases_of(self, *phases: str) -> list[tuple[str, str]]:
        """(name, phase) of the statements in these phases, oldest first."""
        marks = ",".join("?" * len(phases))
        return [(r[0], r[1]) for r in self._all(
            f"SELECT name, phase FROM statements WHERE phase IN ({marks}) ORDER BY seq", *phases)]

    def update_statement(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        """Apply `change` to the stored resource; bump resource_version and updated_at."""
        with self.transaction() as db:
            row = db.execute("SELECT body FROM statements WHERE name = ?", (name,)).fetchone()
            if row is None:
                return None
            body = json.loads(row[0])
            change(body)
            body["metadata"]["resource_version"] = str(int(body["metadata"]["resource_version"]) + 1)
            body["metadata"]["updated_at"] = now()
            db.execute(
                "UPDATE statements SET body = ?, phase = ?, compute_pool_id = ? WHERE name = ?",
                (json.dumps(body), body["status"]["phase"], body["spec"].get("compute_pool_id"), name),
            )
            return body

    def delete_statement(self, name: str) -> None:
        with self.transaction() as db:
            for table in ("statements", "exceptions", "results"):
                column = "name" if table == "statements" else "statement"
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))
            db.execute("DELETE FROM runs WHERE statement = ?", (name,))

    # --- exceptions and results -------------------------------------------------------

    def add_exception(self, statement: str, name: str, message: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO exceptions (statement, name, message, timestamp) VALUES (?, ?, ?, ?)",
                       (statement, name, message, now()))

    def exceptions(self, statement: str, limit: int = 10) -> list[dict[str, str]]:
        rows = self._all("SELECT name, message, timestamp FROM exceptions WHERE statement = ? ORDER BY id DESC LIMIT ?",
                         statement, limit)
        return [{"kind": "StatementException", "name": n, "message": m, "timestamp": t} for n, m, t in rows]

    def put_results(self, statement: str, rows: list[tuple[int, list[Any]]]) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM results WHERE statement = ?", (statement,))
            db.executemany("INSERT INTO results VALUES (?, ?, ?, ?)",
                           [(statement, i, op, json.dumps(row)) for i, (op, row) in enumerate(rows)])

    @staticmethod
    def _append_results(db: sqlite3.Connection, statement: str, rows: list[tuple[int, list[Any]]]) -> None:
        first = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM results WHERE statement = ?",
                           (statement,)).fetchone()[0]
        db.executemany("INSERT INTO results VALUES (?, ?, ?, ?)",
                       [(statement, first + i, op, json.dumps(row)) for i, (op, row) in enumerate(rows)])

    def results(self, statement: str, start: int, limit: int) -> list[tuple[int, list[Any]]]:
        rows = self._all("SELECT op, row FROM results WHERE statement = ? AND seq >= ? ORDER BY seq LIMIT ?",
                         statement, start, limit)
        return [(op, json.loads(row)) for op, row in rows]

    # --- catalog --------------------------------------------------------------------

    def table(self, table_id: TableId) -> TableDef | None:
        row = self._one("SELECT definition FROM tables WHERE catalog = ? AND database = ? AND name = ?",
                        table_id.catalog, table_id.database, table_id.name)
        return TableDef.model_validate_json(row[0]) if row else None

    def table_by_uid(self, uid: str) -> TableDef | None:
        row = self._one("SELECT definition FROM tables WHERE uid = ?", uid)
        return TableDef.model_validate_json(row[0]) if row else None

    def tables(self, database: str | None = None) -> list[TableDef]:
        rows = self._all("SELECT definition FROM tables WHERE ? IS NULL OR database = ? ORDER BY name",
                         database, database)
        return [TableDef.model_validate_json(r[0]) for r in rows]

    def create_table(self, table: TableDef) -> None:
        """Register a table (its topic) and its value/key subjects (TopicNameStrategy)."""
        with self.transaction() as db:
            db.execute("INSERT INTO tables VALUES (?, ?, ?, ?, ?)", (table.uid, table.id.catalog, table.id.database,
                                                                      table.name, table.model_dump_json()))
            subjects = [f"{table.name}-value"] + ([f"{table.name}-key"] if table.key_columns else [])
            for subject in subjects:
                db.execute("INSERT OR REPLACE INTO subjects VALUES (?, ?, 0)", (subject, table.uid))

    def replace_table(self, table: TableDef) -> None:
        with self.transaction() as db:
            db.execute("UPDATE tables SET definition = ? WHERE uid = ?", (table.model_dump_json(), table.uid))

    def drop_table(self, uid: str) -> None:
        """Forget a table, its offsets, its batches and its subjects."""
        with self.transaction() as db:
            for table, column in (("tables", "uid"), ("partitions", "table_uid"), ("batches", "table_uid"),
                                  ("subjects", "table_uid")):
                db.execute(f"DELETE FROM {table} WHERE {column} = ?", (uid,))

    def catalog_marks(self) -> dict[str, tuple[str, tuple[tuple[int, int], ...]]]:
        """Per table, its definition as stored and its end offsets, in two queries: what a continuous
        statement's next run depends on besides its own progress (engine.py skips one whose tables show
        the same marks as when it last found nothing new)."""
        ends: dict[str, list[tuple[int, int]]] = {}
        for uid, partition, offset in self._all("SELECT table_uid, partition, next_offset FROM partitions"):
            ends.setdefault(uid, []).append((partition, offset))
        return {uid: (definition, tuple(sorted(ends.get(uid, []))))
                for uid, definition in self._all("SELECT uid, definition FROM tables")}

    def end_offsets(self, uid: str) -> dict[int, int]:
        """Next offset to be written, per partition (absent: 0)."""
        return {p: o for p, o in self._all("SELECT partition, next_offset FROM partitions WHERE table_uid = ?", uid)}

    def batches(self, uid: str) -> list[Batch]:
        rows = self._all("SELECT id, table_uid, path, producer, rows, retractions, ranges FROM batches "
                         "WHERE table_uid = ? ORDER BY id", uid)
        return [Batch(id=i, table_uid=t, path=p, producer=pr, rows=n, retractions=r,
                      ranges=_ranges(g))
                for i, t, p, pr, n, r, g in rows]

    def kept_files(self) -> set[str]:
        """Files that must stay: registered batches', and merged ones' readers may still be using."""
        registered = {f for p, g in self._all("SELECT path, ranges FROM batches") for f in batch_files(p, _ranges(g))}
        return registered | {r[0] for r in self._all("SELECT path FROM retired")}

    # --- compaction (compaction.py) ----------------------------------------------------

    def crowded_tables(self, small_rows: int, more_than: int) -> list[str]:
        """Tables holding more than `more_than` batches of fewer than `small_rows` records."""
        return [r[0] for r in self._all("SELECT table_uid FROM batches WHERE rows < ? GROUP BY table_uid "
                                        "HAVING COUNT(*) > ?", small_rows, more_than)]

    def replace_batches(self, merged: list[Batch], into: Batch) -> bool:
        """Register `into` in place of `merged` (it takes the first one's id, so the table's batch order
        holds) and retire their files, all or nothing; False when one of them is gone (table dropped)."""
        ids = [b.id for b in merged]
        marks = ",".join("?" * len(ids))
        with self.transaction() as db:
            if db.execute(f"SELECT COUNT(*) FROM batches WHERE id IN ({marks})", ids).fetchone()[0] != len(ids):
                return False
            db.execute("UPDATE batches SET path = ?, rows = ?, retractions = ?, ranges = ? WHERE id = ?",
                       (into.path, into.rows, into.retractions, json.dumps(into.ranges), ids[0]))
            db.executemany("DELETE FROM batches WHERE id = ?", [(i,) for i in ids[1:]])
            db.executemany("INSERT OR REPLACE INTO retired VALUES (?, ?)",
                           [(f, time.time()) for b in merged for f in b.files])
        return True

    def retired_before(self, at: float) -> list[str]:
        """Files of merged batches retired before `at` (epoch seconds)."""
        return [r[0] for r in self._all("SELECT path FROM retired WHERE at < ?", at)]

    def forget_retired(self, paths: list[str]) -> None:
        with self.transaction() as db:
            db.executemany("DELETE FROM retired WHERE path = ?", [(p,) for p in paths])

    # --- runs -----------------------------------------------------------------------

    def run_state(self, statement: str) -> RunState | None:
        row = self._one("SELECT state FROM runs WHERE statement = ?", statement)
        return RunState.model_validate_json(row[0]) if row else None

    def commit_run(self, statement: str, state: RunState, batches: list[Batch],
                   results: list[tuple[int, list[Any]]] | None = None) -> None:
        """Register the batches a run wrote (or the result rows a SELECT appended) and the progress
        it made, all or nothing."""
        with self.transaction() as db:
            self._register(db, batches)
            if results:
                self._append_results(db, statement, results)
            db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?)", (statement, state.model_dump_json()))

    def append_batches(self, batches: list[Batch]) -> None:
        """Register batches written outside any statement (bulk test or benchmark data)."""
        with self.transaction() as db:
            self._register(db, batches)

    @staticmethod
    def _register(db: sqlite3.Connection, batches: list[Batch]) -> None:
        for batch in batches:
            db.execute(
                "INSERT INTO batches (table_uid, path, producer, rows, retractions, ranges, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (batch.table_uid, batch.path, batch.producer, batch.rows, batch.retractions,
                 json.dumps(batch.ranges), now()),
            )
            for partition, (_first, end) in batch.ranges.items():
                db.execute(
                    "INSERT INTO partitions VALUES (?, ?, ?) ON CONFLICT (table_uid, partition) "
                    "DO UPDATE SET next_offset = MAX(next_offset, excluded.next_offset)",
                    (batch.table_uid, partition, end),
                )

    # --- schema registry subjects and compute pools --------------------------------------

    def subjects(self, include_deleted: bool = False) -> list[tuple[str, bool]]:
        rows = self._all("SELECT name, soft_deleted FROM subjects ORDER BY name")
        return [(n, bool(d)) for n, d in rows if include_deleted or not d]

    def set_subject_deleted(self, name: str, permanent: bool) -> None:
        with self.transaction() as db:
            if permanent:
                db.execute("DELETE FROM subjects WHERE name = ?", (name,))
            else:
                db.execute("UPDATE subjects SET soft_deleted = 1 WHERE name = ?", (name,))

    def pools(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self._all("SELECT body FROM pools ORDER BY id")]

    def put_pool(self, body: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO pools VALUES (?, ?)", (body["id"], json.dumps(body)))
