"""Statement lifecycle and the tick loop: the one thread that runs Spark.

HTTP handlers only record what was asked (PENDING, STOPPING, DELETING) and
wake the engine; the engine thread does every transition and every run, one
statement at a time, so runs never race each other. A background tick
advances RUNNING statements; `quiesce` runs them until none finds new input.
Between two rounds the engine compacts table logs (compaction.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sqlglot import exp

from shift_left_dagster.local.catalog import TableError
from shift_left_dagster.local.compaction import CompactionPolicy, compact, remove_retired
from shift_left_dagster.local.ddl import SQL_KINDS, Ddl
from shift_left_dagster.local.errors import flink_detail
from shift_left_dagster.local.event_time import WatermarkError
from shift_left_dagster.local.group_aggregation import forget as forget_aggregates
from shift_left_dagster.local.introspection import Introspection
from shift_left_dagster.local.jobs import FirstRun, Job, JobError, Jobs, is_snapshot
from shift_left_dagster.local.limits import shorten
from shift_left_dagster.local.offsets import ScanError, format_offsets
from shift_left_dagster.local.spark import get_spark
from shift_left_dagster.local.storage import NotNullViolation, TableLogs, drop_table
from shift_left_dagster.local.store import Store, now
from shift_left_dagster.local.types import UnsupportedType, result_type
from shift_left_dagster.local.views import TemporalJoinError
from shift_left_dagster.project.dialect import StatementSet
from shift_left_dagster.project.parsing import FlinkSqlError, Statement, parse_statements
from shift_left_dagster.translation.intervals import refuse_wide_intervals
from shift_left_dagster.translation.reserved import refuse_reserved_names
from shift_left_dagster.translation.spark import Unsupported

logger = logging.getLogger(__name__)

PENDING, RUNNING, COMPLETED, FAILED = "PENDING", "RUNNING", "COMPLETED", "FAILED"
STOPPING, STOPPED, DELETING = "STOPPING", "STOPPED", "DELETING"
MAX_QUIESCE_ROUNDS = 200
# A GET of a statement on its way (PENDING, STOPPING, or RUNNING and bounded) answers when its phase moves,
# or after this long: a poller learns of a completed DDL or INSERT ... VALUES when it completes, not at its
# next poll, while the engine would otherwise sit idle waiting for the next statement.
MOVING_HOLD_SECONDS = 0.5
T = TypeVar("T")

VALIDATION = "org.apache.flink.table.api.ValidationException"
PARSER = "org.apache.flink.table.api.SqlParserException"
RUNTIME = "org.apache.flink.runtime.JobException"
_EXPECTED = (Unsupported, UnsupportedType, JobError, TableError, ScanError, TemporalJoinError,
             NotNullViolation, WatermarkError)


class Engine:
    def __init__(self, data_dir: Path, *, spark_factory: Callable[[], SparkSession] = get_spark,
                 tick_seconds: float = 1.0, compaction: CompactionPolicy = CompactionPolicy()) -> None:
        self.data_dir = data_dir
        self.store = Store(data_dir / "service.db")
        self.tick_seconds = tick_seconds
        self.compaction = compaction
        self._spark_factory = spark_factory
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._quiet_waiters: list[tuple[threading.Event, dict[str, Any]]] = []
        self._waiters_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._calls: list[tuple[Callable[[], Any], Future[Any]]] = []  # run on the engine thread
        self._jobs: dict[str, Job] = {}  # compiled jobs of RUNNING statements
        self._at_once: dict[str, bool] = {}  # statement -> completes when it starts (see _control)
        self._idle: dict[str, tuple[Job, Marks]] = {}  # statement -> its job and tables' marks when it found nothing
        self._phase_moved = threading.Condition()  # notified on every phase change (see moved)
        self.startup_error: str | None = None

    # --- control (any thread) -------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="shift-left-local-engine", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.store.close()

    def wake(self) -> None:
        self._wake.set()

    def drop_table(self, uid: str) -> None:
        """A topic deleted through Kafka REST: its statements fail on their next read, as on Kafka."""
        drop_table(self.store, self.data_dir / "tables", uid)

    def on_engine_thread(self, action: Callable[[], T], timeout: float = 60.0) -> T:
        """Run `action` on the engine thread before its next run and give its result: the thread that
        writes table logs, so records produced over Kafka REST take their offsets there, never beside a
        run's write; the runs after it read them."""
        future: Future[T] = Future()
        with self._waiters_lock:
            self._calls.append((action, future))
        self._wake.set()
        return future.result(timeout)

    def moved(self, name: str, timeout: float = MOVING_HOLD_SECONDS) -> dict[str, Any] | None:
        """The statement once it is not on its way any more (see MOVING_HOLD_SECONDS), or as it is after
        `timeout`; None when it does not exist."""
        deadline = time.monotonic() + timeout
        with self._phase_moved:
            body = self.store.statement(name)
            while body is not None and on_its_way(body) and (left := deadline - time.monotonic()) > 0:
                self._phase_moved.wait(left)
                body = self.store.statement(name)
        return body

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def quiesce(self, timeout: float = 300.0) -> dict[str, Any]:
        """Block until the engine has run every statement until none finds new input."""
        done = threading.Event()
        report: dict[str, Any] = {}
        with self._waiters_lock:
            self._quiet_waiters.append((done, report))
        self._wake.set()
        if not done.wait(timeout):
            raise TimeoutError(f"the engine did not quiesce within {timeout:.0f} s")
        return report

    # --- the engine thread ---------------------------------------------------------------

    def _main(self) -> None:
        try:
            spark = self._spark_factory()
            self.logs = TableLogs(self.data_dir / "tables", spark, self.store)
            removed = self.logs.remove_unregistered()
            if removed:
                logger.info("removed %d batch file(s) left by an interrupted run", removed)
            self.jobs = Jobs(spark, self.store, self.logs)
            self.ddl = Ddl(self.store, self.logs)
            self.introspection = Introspection(self.jobs)
        except Exception as error:  # no Spark, no engine: say so on every statement
            self.startup_error = f"the local service could not start Spark: {error}"
            logger.exception("engine start failed")
        self._ready.set()
        while not self._stopping.is_set():
            self._wake.wait(self.tick_seconds)
            self._wake.clear()
            if self._stopping.is_set():
                break
            with self._waiters_lock:
                waiters, self._quiet_waiters = self._quiet_waiters, []
            try:
                report: dict[str, Any] = {}
                if waiters:
                    report = self._until_quiet()
                elif self._step():
                    self._wake.set()  # records moved: their readers run in the next round, not a tick later
                self._compact()  # between runs: no run of this thread is reading a file it retires
                for done, out in waiters:
                    out.update(report)
                    done.set()
            except Exception:  # a bug must not kill the loop: log it, keep serving
                logger.exception("engine step failed")
                for done, out in waiters:
                    out.update(error="engine step failed; see the service log")
                    done.set()

    def _compact(self) -> None:
        """Merge crowded tables' small batches, delete merged files no reader can still be using."""
        if self.startup_error is not None:
            return
        try:
            compact(self.logs, self.compaction)
            remove_retired(self.logs, self.compaction)
        except Exception:  # each swap is all or nothing: the table keeps its batches as they were
            logger.exception("compaction failed")

    def _until_quiet(self) -> dict[str, Any]:
        rounds = 0
        while rounds < MAX_QUIESCE_ROUNDS:
            rounds += 1
            if not self._step():
                return {"rounds": rounds, "quiet": True}
        return {"rounds": rounds, "quiet": False}

    def _step(self) -> bool:
        """One round, fair to interactive work: control work first (deletes, stops, and statements that
        finish at once: DDL, snapshot SELECT, SHOW/DESCRIBE/EXPLAIN), then each continuous statement's
        start or tick in turn, the control work re-checked between two of them. So a DDL or a snapshot
        SELECT waits for one tick at most, never for a round over every running statement."""
        changed = self._control()
        marks: dict[str, Any] | None = None  # the tables' marks, taken again once anything changed
        for name in self.store.names_in_phase(PENDING, RUNNING):
            if self._control():
                changed, marks = True, None
            body = self.store.statement(name)
            phase = (body or {}).get("status", {}).get("phase")
            if phase == PENDING:
                self._start(name)
                changed, marks = True, None
            elif phase == RUNNING:
                marks = self.store.catalog_marks() if marks is None else marks
                if self._nothing_new(name, marks):
                    continue
                if self._guarded(name, self._advance):
                    changed, marks = True, None
                elif (job := self._jobs.get(name)) is not None:
                    self._idle[name] = (job, _marks_of(job, marks))
        return changed

    def _nothing_new(self, name: str, marks: dict[str, Any]) -> bool:
        """A running statement whose last run found nothing new, its job unchanged since and its tables
        showing the same definitions and end offsets: its run would find nothing again (a run depends on
        nothing else), so the round skips its store reads and checks."""
        idle = self._idle.get(name)
        return idle is not None and idle[0] is self._jobs.get(name) and idle[1] == _marks_of(idle[0], marks)

    def _control(self) -> bool:
        with self._waiters_lock:
            calls, self._calls = self._calls, []
        for action, future in calls:
            try:
                future.set_result(action())
            except Exception as error:  # the caller's to report
                future.set_exception(error)
        changed = bool(calls)
        moving = self.store.phases_of(DELETING, STOPPING, PENDING)  # (one query: this runs between statements)
        for name in [n for n, phase in moving if phase == DELETING]:
            self._jobs.pop(name, None)
            self._idle.pop(name, None)
            self._at_once.pop(name, None)
            forget_aggregates(self.data_dir, name)  # (before the statement goes: a crash between leaves none)
            self.store.delete_statement(name)
            with self._phase_moved:
                self._phase_moved.notify_all()
            changed = True
        for name in [n for n, phase in moving if phase == STOPPING]:
            self._finish_stop(name)
            changed = True
        for name in [n for n, phase in moving if phase == PENDING]:
            if self._finishes_at_once(name):
                self._start(name)
                changed = True
        return changed

    def _finishes_at_once(self, name: str) -> bool:
        """A statement that completes when it starts (no continuous job): decided once per statement."""
        if name not in self._at_once:
            body = self.store.statement(name) or {}
            spec = body.get("spec") or {}
            self._at_once[name] = finishes_at_once(spec.get("statement") or "", spec.get("properties") or {})
        return self._at_once[name]

    def _guarded(self, name: str, action: Callable[[str], bool]) -> bool:
        try:
            return action(name)
        except FlinkSqlError as error:
            self._fail(name, f"SQL parse failed. {error}", PARSER)
        except _EXPECTED as error:
            self._fail(name, str(error), VALIDATION)
        except PySparkException as error:
            self._fail(name, spark_detail(error, self._sql(name)), RUNTIME)
        except Exception as error:
            logger.exception("statement %s failed", name)
            self._fail(name, f"internal error of the local service: {type(error).__name__}: {error}", RUNTIME)
        return True

    # --- transitions ---------------------------------------------------------------------------

    def _start(self, name: str) -> None:
        body = self.store.statement(name)
        if body is None:
            return
        if body["spec"].get("stopped"):
            self._set(name, STOPPED)
            return
        if self.startup_error:
            self._fail(name, self.startup_error, RUNTIME)
            return
        self._guarded(name, self._start_statement)

    def _start_statement(self, name: str) -> bool:
        body = self.store.statement(name)
        assert body is not None
        properties = body["spec"].get("properties") or {}
        answer = self.introspection.answer(name, body["spec"]["statement"], properties)
        if answer is not None:  # SHOW, DESCRIBE, EXPLAIN, INFORMATION_SCHEMA: complete with their result
            self.store.put_results(name, [(0, row) for row in answer.rows])
            self._set(name, COMPLETED, traits=_traits(answer.sql_kind, schema=answer.schema), end_time=now())
            return True
        statement = self._parse(name, body["spec"]["statement"])
        refuse_reserved_names(statement, name)
        refuse_wide_intervals(statement, name)
        tree = statement.tree
        if isinstance(tree, (exp.Create, exp.Drop, exp.Alter)) and not (
            isinstance(tree, exp.Create) and tree.expression is not None
        ):
            self.ddl.run(statement, properties)
            self._set(name, COMPLETED, traits=_traits(SQL_KINDS[type(tree)]), end_time=now())
            return True
        if not isinstance(tree, (exp.Create, exp.Insert, StatementSet, exp.Query)):
            raise Unsupported(f"{tree.key.upper()} statements", statement.line,
                              "the local service runs CREATE/DROP/ALTER TABLE, INSERT, STATEMENT SET and SELECT; "
                              "set options in the statement's spec.properties")
        # (CREATE TABLE AS: its query validated whole before its table is created)
        job = self.jobs.compile(name, statement, properties, starting=not isinstance(tree, exp.Create))
        state = self.store.run_state(name)
        if job.create is not None and state is None:
            self.ddl.create(statement, properties, job.sinks[0].table)
            job = self.jobs.compile(name, statement, properties, starting=True)
        state = self.jobs.start(job, state)
        first = self.jobs.first_run(job, statement, state)  # (the validation compile left to the first run)
        self.store.commit_run(name, state, [])
        self._jobs[name] = job
        bounded = all(p.bound is not None for p in state.sources.values())
        if job.select is not None:  # a continuous query unless bounded: its results grow while it runs
            columns = [{"name": f.name, "type": result_type(f.dataType, f.nullable)}
                       for f in self.jobs.select_schema(job).fields]
            traits = _traits("SELECT", bounded=bounded, append_only=job.append_only, schema={"columns": columns},
                             upsert_columns=job.result_key)
        else:
            append_only = all(not s.table.upsert for s in job.sinks)
            traits = _traits(job.sql_kind, bounded=bounded, append_only=append_only)
        self._set(name, RUNNING, " ".join(job.notes), traits=traits, latest_offsets=None,
                  latest_offsets_timestamp=None)
        return self._advance(name, first)

    def _advance(self, name: str, first: FirstRun | None = None) -> bool:
        job = self._job(name)
        state = self.store.run_state(name)
        if job is None or state is None:
            return False
        run = self.jobs.advance(job, state, first)
        if run.advanced:
            self.store.commit_run(name, run.state, run.batches, run.results)
        if self.jobs.complete(run.state):
            self._set(name, COMPLETED, end_time=now())
            self._jobs.pop(name, None)
            self._idle.pop(name, None)
            return True
        return run.advanced

    def _job(self, name: str) -> Job | None:
        cached = self._jobs.get(name)
        if cached is not None and all(self.store.table_by_uid(t.uid) == t for t in cached.tables):
            return cached  # no table it uses was dropped, recreated or altered since it was compiled
        body = self.store.statement(name)
        if body is None:
            return None
        statement = self._parse(name, body["spec"]["statement"])
        job = self.jobs.compile(name, statement, body["spec"].get("properties") or {})
        state = self.jobs.start(job, self.store.run_state(name))  # a source recreated since: read it from its start
        self.store.commit_run(name, state, [])
        self._jobs[name] = job
        return job

    def _finish_stop(self, name: str) -> None:
        """STOPPING -> STOPPED with latest_offsets: per source topic, the next offset to read."""
        self._jobs.pop(name, None)
        self._idle.pop(name, None)
        state = self.store.run_state(name)
        offsets = {topic: format_offsets(p.next) for topic, p in (state.sources.items() if state else [])}
        self._set(name, STOPPED, latest_offsets=offsets, latest_offsets_timestamp=now(), end_time=now())

    def _fail(self, name: str, detail: str, exception: str) -> None:
        self._jobs.pop(name, None)
        self._idle.pop(name, None)
        detail = shorten(detail)  # never a huge SQL text repeated in full
        self.store.add_exception(name, exception, detail)
        self._set(name, FAILED, detail=detail, end_time=now())

    def _set(self, name: str, phase: str, detail: str = "", **status: Any) -> None:
        def change(body: dict[str, Any]) -> None:
            if body["status"]["phase"] == DELETING:
                return  # a delete asked meanwhile wins
            body["status"].update(phase=phase, detail=detail, **status)

        self.store.update_statement(name, change)
        with self._phase_moved:
            self._phase_moved.notify_all()

    def _parse(self, name: str, sql: str) -> Statement:
        statements = parse_statements(sql, source=name)
        if len(statements) != 1:
            raise FlinkSqlError(name, 1, f"a statement must hold exactly one SQL statement, found {len(statements)}")
        return statements[0]

    def _sql(self, name: str) -> str:
        body = self.store.statement(name)
        return body["spec"]["statement"] if body else ""


Marks = tuple[tuple[str, Any], ...]


def _marks_of(job: Job, marks: dict[str, Any]) -> Marks:
    """The marks (definition, end offsets) of the tables a job reads or writes."""
    return tuple((t.uid, marks.get(t.uid)) for t in job.tables)


def on_its_way(body: dict[str, Any]) -> bool:
    """A statement whose phase is about to move on its own: PENDING, STOPPING, or RUNNING and bounded."""
    status = body.get("status") or {}
    phase = status.get("phase")
    return phase in (PENDING, STOPPING) or (phase == RUNNING and bool((status.get("traits") or {}).get("is_bounded")))


def _traits(sql_kind: str, *, bounded: bool = True, append_only: bool = True,
            schema: dict[str, Any] | None = None, upsert_columns: list[int] | None = None) -> dict[str, Any]:
    return {"sql_kind": sql_kind, "is_bounded": bounded, "is_append_only": append_only,
            "upsert_columns": upsert_columns, "schema": schema or {}}


_AT_ONCE_KEYWORDS = ("SHOW", "DESCRIBE", "DESC", "EXPLAIN", "DROP", "ALTER", "USE", "SET", "RESET")


def finishes_at_once(sql: str, properties: dict[str, str]) -> bool:
    """DDL (not CREATE ... AS), introspection, and snapshot queries complete when they start; INSERT, CTAS
    and continuous SELECT run as jobs. Unparsable text counts as at once: it fails when it starts."""
    words = sql.lstrip().split(None, 1)
    first = words[0].upper() if words else ""
    if first in _AT_ONCE_KEYWORDS:
        return True
    if first == "CREATE":
        try:
            statements = parse_statements(sql, "<statement>")
        except (FlinkSqlError, ValueError):
            return True
        return not any(isinstance(s.tree, exp.Create) and s.tree.expression is not None for s in statements)
    if first in ("SELECT", "WITH", "VALUES", "(", "TABLE"):
        return is_snapshot(properties) or "INFORMATION_SCHEMA" in sql.upper()
    return False


def spark_detail(error: PySparkException, sql: str) -> str:
    """Spark's complaint in Flink's terms (no Spark error class, SQLSTATE nor internal name)."""
    return flink_detail(error, sql)
