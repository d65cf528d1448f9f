"""Where a check reads sink data: the local service's storage, or the files teams land topics in.

Both give the same four things as DataFrames on the run's SparkSession (a
table's current rows, the records whose keys must be unique, the rows its
DML should have produced) and how far a statement is behind its sources.
Which one is configuration (SinkConfig), not a code path of the checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from shift_left_dagster.confluent.models import Statement
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME, UPDATE_AFTER
from shift_left_dagster.local.reader import LocalData, LocalDataError
from shift_left_dagster.local.settings import resolve_data_dir
from shift_left_dagster.local.spark import without_codegen
from shift_left_dagster.local.storage import DRIVER_ROWS
from shift_left_dagster.local.types import spark_type_of
from shift_left_dagster.local.windows import fired_args, gate_windows
from shift_left_dagster.project.dialect import StatementSet
from shift_left_dagster.project.inventory import FlinkTable
from shift_left_dagster.project.parsing import parse_one_statement
from shift_left_dagster.translation.spark import HIDDEN_ROWTIME, translate_query
from shift_left_dagster.values import same_value


class SinkConfig(BaseModel):
    """local: the embedded service's data dir. files: `path_template` read with spark.read.format(format)."""

    kind: Literal["local", "files"] = "local"
    data_dir: str | None = Field(default=None, description="local: the service's data dir (default as the service)")
    path_template: str | None = Field(default=None, description="files: e.g. s3://bucket/topics/{table}")
    format: str = Field(default="parquet", description="files: parquet, delta, iceberg, ...")
    options: dict[str, str] = Field(default_factory=dict, description="files: reader options")
    ignore_columns: list[str] = Field(default_factory=list, description="files: landing metadata columns")


class SinkReader(Protocol):
    ignore_columns: list[str]
    separates_stretches: bool  # can tell the rows each code version wrote apart (by offset)
    has_record_times: bool  # can tell the records from a time on (a reprocessed version's sources from T)

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one consistent state (a statement's progress with the data it wrote)."""

    def sized(self, sink: str, statement: Statement | None) -> AbstractContextManager[None]:
        """Queries inside are planned for the records `sink` and its statement's sources hold: without
        code generation when they are few, as the engine runs them (same results; compiling costs more
        than it saves on a few rows)."""

    def rows(self, table: str) -> DataFrame:
        """The table's current rows."""

    def live_records(self, table: str) -> DataFrame:
        """The records whose primary keys must be unique."""

    def expected(self, table: FlinkTable, sink: str, statement: Statement) -> DataFrame:
        """The rows `statement` should have written into `sink` (the table's deployed name), typed as
        the table's stored columns."""

    def written_keys(self, table: str, key: list[str], since: datetime | None = None) -> DataFrame | None:
        """The distinct `key` values of every record ever written into `table` (deleted since or not), only
        those whose record time is at or after `since` when given; None when the reader can not tell (landed
        files hold current rows, no record times)."""

    def lag(self, statement: Statement) -> dict[str, int] | None:
        """Records per source the statement has not read yet (None: unknown)."""

    def source_records(self, statement: Statement) -> dict[str, int] | None:
        """Records (or rows) per source the statement reads, within its bounds (None: unknown): whether
        comparing no row means anything."""

    def close(self) -> None: ...


class LocalSinkReader:
    """The local service's table logs and statement progress (read-only)."""

    ignore_columns: list[str] = []
    separates_stretches = True
    has_record_times = True

    def __init__(self, data: LocalData) -> None:
        self.data = data

    def snapshot(self) -> AbstractContextManager[None]:
        return self.data.snapshot()

    def sized(self, sink: str, statement: Statement | None) -> AbstractContextManager[None]:
        try:
            held = sum(self.data.store.end_offsets(self.data.table(sink).uid).values())
        except LocalDataError:  # no such table: the checks say so
            return nullcontext()
        held += sum((self.source_records(statement) or {}).values()) if statement is not None else 0
        return without_codegen(self.data.logs.spark) if held <= DRIVER_ROWS else nullcontext()

    def rows(self, table: str) -> DataFrame:
        return self.data.current_rows(self.data.table(table))

    def live_records(self, table: str) -> DataFrame:
        return self.data.live_records(self.data.table(table))

    def expected(self, table: FlinkTable, sink: str, statement: Statement) -> DataFrame:
        return self.data.expected_rows(statement.name, statement.spec.statement or "", statement.spec.properties,
                                       sink)

    def written_keys(self, table: str, key: list[str], since: datetime | None = None) -> DataFrame | None:
        records = self.data.logs.read(self.data.table(table)).where(F.col(f"`{OP}`").isin(INSERT, UPDATE_AFTER))
        if since is not None:
            records = records.where(F.col(f"`{ROWTIME}`") >= F.lit(since))
        return records.select(*[F.col(f"`{k}`") for k in key]).distinct()

    def lag(self, statement: Statement) -> dict[str, int] | None:
        return self.data.lag(statement.name)

    def source_records(self, statement: Statement) -> dict[str, int] | None:
        """Records between each source's start offsets and its end (or bound)."""
        state = self.data.progress(statement.name)
        if state is None:
            return None
        held: dict[str, int] = {}
        for name, source in state.sources.items():
            ends = self.data.store.end_offsets(source.table_uid)
            if source.bound is not None:
                ends = {p: min(end, source.bound.get(p, 0)) for p, end in ends.items()}
            held[name] = sum(max(end - source.start.get(p, 0), 0) for p, end in ends.items())
        return held

    def close(self) -> None:
        self.data.close()


class FilesSinkReader:
    """Tables landed as files (parquet/Delta/Iceberg...), one location per table, holding its current rows.

    Reconciliation runs the deployed DML over the parents' landed rows: exact
    once the statement has caught up with them (files carry no offsets).
    """

    separates_stretches = False  # landed files carry no offsets
    has_record_times = False  # nor record times

    def __init__(self, spark: SparkSession, config: SinkConfig) -> None:
        if not config.path_template or "{table}" not in config.path_template:
            raise ValueError("a files sink needs path_template with {table}, e.g. s3://bucket/topics/{table}")
        self.spark, self.config = spark, config
        self.ignore_columns = config.ignore_columns

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        yield

    def sized(self, sink: str, statement: Statement | None) -> AbstractContextManager[None]:
        return nullcontext()  # landed files: their size is not known before reading them

    def rows(self, table: str) -> DataFrame:
        location = self.config.path_template.format(table=table)  # type: ignore[union-attr]
        frame = self.spark.read.format(self.config.format).options(**self.config.options).load(location)
        ignored = {c.lower() for c in self.ignore_columns}
        return frame.select(*[F.col(f"`{c}`") for c in frame.columns if c.lower() not in ignored])

    def live_records(self, table: str) -> DataFrame:
        return self.rows(table)

    def expected(self, table: FlinkTable, sink: str, statement: Statement) -> DataFrame:
        """The DML's INSERT into `table`, translated by the local translator, over the parents' rows."""
        tree = parse_one_statement(statement.spec.statement or "", statement.name).tree
        inserts = tree.expressions if isinstance(tree, StatementSet) else [tree]
        insert = next((i for i in inserts if isinstance(i, exp.Insert) and _target(i).name == sink), None)
        if insert is None or table.ddl is None:
            raise ValueError(f"statement {statement.name} does not insert into {sink}")
        query = insert.expression.copy()
        if insert.args.get("with"):
            query.set("with", insert.args["with"].copy())
        # landed files keep no arrival order, so a record late against the ones before it can not be told
        translated = gate_windows(translate_query(query, lambda t: self.rows(t.name).columns), by_arrival=False)
        for scan in translated.scans:
            self.rows(scan.table.name).createOrReplaceTempView(scan.view)
        result = self.spark.sql(translated.sql, args=fired_args(None))
        windowed = HIDDEN_ROWTIME in result.columns  # a window aggregation's rows carry their window's time
        stored = [c for c in table.ddl.columns if not c.computed]
        listed = [i.name.lower() for i in insert.this.expressions] if isinstance(insert.this, exp.Schema) else None
        targets = [c for c in stored if listed is None or c.name.lower() in listed]
        if listed is not None:
            targets.sort(key=lambda c: listed.index(c.name.lower()))
        produced = len(result.columns) - windowed
        if produced != len(targets):
            raise ValueError(f"the DML of {table.name} produces {produced} columns for {len(targets)} target columns")
        positional = result.toDF(*[c if c == HIDDEN_ROWTIME else f"__sl_c{i}" for i, c in enumerate(result.columns)])
        typed = [F.col(f"__sl_c{i}").cast(spark_type_of(c.type)).alias(c.name) for i, c in enumerate(targets)]
        if not windowed:
            return positional.select(*typed)
        return self._fired(positional.select(*typed, HIDDEN_ROWTIME), sink, {c.name: c.type for c in targets})

    def _fired(self, expected: DataFrame, sink: str, flink_types: dict[str, str]) -> DataFrame:
        """The window results up to the newest window the sink holds a row of (its time carried in the
        hidden time column): windows fire in watermark order, so Flink has fired those; a newer one may
        still be open, and landed files carry no watermark to tell. A wrong row is never hidden: the
        sink's rows are all compared, so a newer window's rows show as unexpected."""
        actual = self.rows(sink)
        landed = {c.lower(): c for c in actual.columns}
        ours, theirs = ({f.name: f.dataType for f in side.schema.fields} for side in (expected, actual))
        same = [same_value(F.col(f"e.`{c}`"), F.col(f"a.`{landed[c.lower()]}`"), ours[c], theirs[landed[c.lower()]],
                           flink_types[c]) for c in flink_types if c.lower() in landed]
        matched = expected.alias("e").join(actual.alias("a"), on=same, how="left_semi")
        newest = matched.agg(F.max(HIDDEN_ROWTIME).alias("newest")).collect()[0]["newest"]
        return expected.where(F.col(HIDDEN_ROWTIME) <= F.lit(newest)).drop(HIDDEN_ROWTIME) if newest is not None \
            else expected.limit(0).drop(HIDDEN_ROWTIME)

    def written_keys(self, table: str, key: list[str], since: datetime | None = None) -> DataFrame | None:
        return None

    def lag(self, statement: Statement) -> dict[str, int] | None:
        return None

    def source_records(self, statement: Statement) -> dict[str, int] | None:
        """Landed rows of every table the statement reads (not the ones it writes)."""
        tree = parse_one_statement(statement.spec.statement or "", statement.name).tree
        inserts = tree.expressions if isinstance(tree, StatementSet) else [tree]
        written = {_target(i).name for i in inserts if isinstance(i, exp.Insert)}
        read = {t.name for t in tree.find_all(exp.Table) if t.name and t.name not in written}
        ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
        return {name: self.rows(name).count() for name in sorted(read - ctes)}

    def close(self) -> None:
        return None


def open_reader(config: SinkConfig, spark: SparkSession) -> SinkReader:
    if config.kind == "files":
        return FilesSinkReader(spark, config)
    return LocalSinkReader(LocalData(resolve_data_dir(config.data_dir), spark))


def _target(insert: exp.Insert) -> exp.Table:
    target = insert.this
    return target.this if isinstance(target, exp.Schema) else target

