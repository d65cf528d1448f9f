"""Table logs on disk: each write is one batch, a parquet file per partition it holds.

As Kafka names a log segment by its first offset, a batch's file of partition
p whose first offset is n is `<table>/$partition=p/$base=n/<batch>.parquet`,
and holds that partition's records in offset order: a record's partition and
offset are where it lies, not columns of it. Spark reads them back as
partition columns (constant per file) and the row index in the file, so a run
writes and reads the records' values, time and op only. A batch is written to
a hidden temporary folder, its files moved into place, then registered in
sqlite (store.py); readers only read registered batches' files, so a crash or
a concurrent reader never sees half a batch. Offsets are dense per partition.
A small batch is placed by the driver, collected as Arrow and written with
pyarrow: a fraction of the fixed cost of a Spark write (a shuffle, a sort, a
write job and its commit protocol); a run over few records is also computed
without code generation, which costs more than it saves on a few rows. A
batch is counted (rows, retractions, NULLs in NOT NULL columns) on its Arrow
columns, read back after a Spark write: counting inside the job (an observed
metric) runs outside generated code and cost more. A batch whose records are
all +I (appended rows, a stateful query's first run) has no `$op` column: readers
take +I for a file without one, and a run over such files carries +I as a constant
that Spark's optimizer folds (reading and writing a column of one value cost a
stateless run over 1 M rows about a tenth of its time). Likewise a batch Spark
writes whose records share one `$rowtime` (a bulk load, a stateful run's time
of writing, a stateless run over such a batch) keeps it once, in its name
(`b-<id>-t<micros>`, as a Kafka batch with LogAppendTime keeps one time in its
header), and its files have no `$rowtime` column. Compaction (compaction.py)
rewrites consecutive small batches as one, records and offsets unchanged.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from functools import reduce
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from shift_left_dagster.local.catalog import DELETE, INSERT, OFFSET, OP, PARTITION, ROWTIME, UPDATE_BEFORE, TableDef
from shift_left_dagster.local.spark import empty_frame, is_local_relation, without_codegen
from shift_left_dagster.local.store import BASE, Batch, Store, batch_time

# Spark's parquet readers fill a LONG column of this name with each row's index in its file (what
# `_metadata.row_index` reads): a column of the read schema, pruned when a query reads no offsets, where
# `_metadata`, once referenced, is carried whole through the plan (it cost a join + aggregate 0.1 s per 1 M rows).
ROW_INDEX = "_tmp_metadata_row_index"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_KEY_CHECKS_KEPT = 1024  # one_row_per_key answers kept (a set of files each)
_FOOTERS_KEPT = 100_000  # files whose footer's facts are kept (a file never changes)
_READS_KEPT = 256  # DataFrames over a set of files kept for the next read of the same files
DRIVER_ROWS = 100_000  # at most this many records: a batch the driver writes, a run without code generation


class _Footer(NamedTuple):
    has_op: bool  # the file has an `$op` column (one without holds +I records only)
    row_groups: int


class NotNullViolation(ValueError):
    """A NULL written into a NOT NULL column (primary keys are NOT NULL), as Flink refuses it."""


class TableLogs:
    def __init__(self, root: Path, spark: SparkSession, store: Store) -> None:
        self.root = root
        self.spark = spark
        self.store = store
        self._unique_keys: dict[frozenset[str], bool] = {}  # files -> one_row_per_key's answer
        self._footers: dict[str, _Footer] = {}  # file -> what its footer says (a file never changes)
        self._reads: dict[tuple[str, ...], DataFrame] = {}  # read's key (files, schema, filter) -> its DataFrame
        root.mkdir(parents=True, exist_ok=True)

    def remove_unregistered(self) -> int:
        """Delete batch files no committed run names (a crash between writing and commit), temporary
        folders, and the folders left empty."""
        registered = self.store.kept_files()
        removed = 0
        for table_dir in [d for d in self.root.iterdir() if d.is_dir()]:
            for temporary in table_dir.glob(".tmp-*"):
                shutil.rmtree(temporary, ignore_errors=True)
                removed += 1
            for file in table_dir.glob(f"{PARTITION}=*/{BASE}=*/*.parquet"):
                if self._relative(file) not in registered:
                    file.unlink()
                    removed += 1
            _remove_empty_folders(table_dir)
        return removed

    def write(self, table: TableDef, records: DataFrame, producer: str | None, order_by: Sequence[str] = (), *,
              ordered: bool = False, small_input: bool = False, collect: bool = False,
              scanless: bool = True) -> Batch | None:
        """Append records (stored columns + $rowtime + $op) as one batch; None when there were none.

        Records go to partitions by a hash of the table's key, in the input
        order the `order_by` columns give (an upsert table's latest row wins, a
        stateless query keeps each source partition's order). A table without
        key (or with one partition) takes the records where they are, without
        shuffle: Spark partitions merged down to the table's, each written to
        one; with `ordered` (the records come in their sources' log order
        already, jobs.py) it keeps them in that order without a sort. With
        `small_input` (the run read at most DRIVER_ROWS records) the batch is
        computed without code generation; with `collect` (a batch
        likely small: a stateless run over few records, a changelog of
        differences) one of at most DRIVER_ROWS records is placed and written
        by the driver, a larger one is computed again and written by Spark.
        Records that read no table (`scanless`) may be held by the driver
        already: asked of Spark's plan then, never of a query over files.
        """
        name = f"b-{uuid.uuid4().hex}"
        temporary = self.root / table.uid / f".tmp-{name}"
        files: dict[int, Path] = {}  # partition -> its file in the temporary folder
        not_null = [c.name for c in table.stored_columns if not c.nullable]
        collected = None
        if collect:
            with without_codegen(self.spark) if small_input else nullcontext():
                collected = self._collected(table, records, order_by, scanless)
        if collected is not None:
            temporary.mkdir(parents=True)
            for partition, part in collected.items():
                files[partition] = temporary / f"{partition}.parquet"
                pq.write_table(part, str(files[partition]))
            written = {p: part.select([c for c in [OP, *not_null] if c in part.column_names])
                       for p, part in collected.items()}
        else:  # one Spark task per partition, each writing one file named after its task's partition
            with_op, time = not inserts_only(records), shared_time(records)
            if time is not None:  # kept once, in the batch's name
                name = f"{name}-t{time}"
                temporary = self.root / table.uid / f".tmp-{name}"
            self._placed(table, records, order_by, ordered, with_op=with_op, with_time=time is None).write.parquet(
                str(temporary))
            files = {int(f.name.split("-")[1]): f for f in temporary.glob("part-*.parquet")}
            written = {p: _read(f, [OP, *not_null] if with_op else not_null) for p, f in files.items()}
        return self._registered(table, name, files, written, producer)

    def write_rows(self, table: TableDef, rows: pa.Table, producer: str | None) -> Batch | None:
        """Append records the driver holds already (stored columns + $rowtime, + $op unless all +I), in
        order, as one batch of a table of one partition (literal_rows.py); None when there are none."""
        assert table.partitions == 1
        name = f"b-{uuid.uuid4().hex}"
        temporary = self.root / table.uid / f".tmp-{name}"
        temporary.mkdir(parents=True)
        files = {0: temporary / "0.parquet"}
        pq.write_table(rows, str(files[0]))
        return self._registered(table, name, files, {0: rows}, producer)

    def _registered(self, table: TableDef, name: str, files: dict[int, Path], written: dict[int, pa.Table],
                    producer: str | None) -> Batch | None:
        """A written batch (its files per partition in its temporary folder, `written` their records'
        `$op` and NOT NULL columns) checked for NULLs in NOT NULL columns, moved into place; None if empty."""
        temporary = self.root / table.uid / f".tmp-{name}"
        not_null = [c.name for c in table.stored_columns if not c.nullable]
        written = {p: w for p, w in sorted(written.items()) if w.num_rows}
        if not written:
            shutil.rmtree(temporary, ignore_errors=True)
            return None
        violations = [c for c in not_null if any(w[c].null_count for w in written.values())]
        if violations:
            shutil.rmtree(temporary, ignore_errors=True)
            raise NotNullViolation(
                f"Column '{violations[0]}' is NOT NULL, however, a null value is being written into it. "
                f"You can set job configuration 'table.exec.sink.not-null-enforcer'='DROP' to suppress this "
                f"exception and drop such records silently."
            )
        bases = self.store.end_offsets(table.uid)
        batch = Batch(table_uid=table.uid, path=self._relative(self.root / table.uid / name), producer=producer,
                      rows=sum(w.num_rows for w in written.values()),
                      retractions=sum(_retractions(w) for w in written.values()),
                      ranges={p: (bases.get(p, 0), bases.get(p, 0) + w.num_rows) for p, w in written.items()})
        for partition, file in zip(batch.ranges, batch.files, strict=True):
            final = self.root.parent / file
            final.parent.mkdir(parents=True, exist_ok=True)
            files[partition].rename(final)
        shutil.rmtree(temporary, ignore_errors=True)
        return batch

    @staticmethod
    def _placed(table: TableDef, records: DataFrame, order_by: Sequence[str], ordered: bool, *,
                with_op: bool = True, with_time: bool = True) -> DataFrame:
        """The batch in stored columns for Spark to write (`$op` only `with_op`, `$rowtime` only
        `with_time`): Spark partition p holds
        table partition p's records, in `order_by` order."""
        keys = [F.col(f"`{k}`") for k in table.key_columns]
        if keys and table.partitions > 1:
            spread, ordered = records.repartition(table.partitions, *keys), False  # a shuffle interleaves
        else:
            spread = records.coalesce(table.partitions)  # whole Spark partitions, one after another
        if order_by and not ordered:
            spread = spread.sortWithinPartitions(*[F.col(f"`{c}`") for c in order_by])
        return spread.select(*_stored(table, with_op=with_op, with_time=with_time))

    @staticmethod
    def _collected(table: TableDef, records: DataFrame, order_by: Sequence[str],
                   scanless: bool) -> dict[int, pa.Table] | None:
        """The batch in stored columns, placed by the driver without shuffle or Spark sort: a keyed
        record's partition is the hash `repartition` computes (pmod of Murmur3), a keyless one's its
        Spark partition merged down to the table's; each partition's records in `order_by` order.
        None when it holds more than DRIVER_ROWS records. Records Spark holds on the driver already
        (a local relation: INSERT ... VALUES) are taken from there, without a Spark job."""
        keys = [F.col(f"`{k}`") for k in table.key_columns]
        local = scanless and (table.partitions == 1 or bool(keys)) and is_local_relation(records)
        if keys and table.partitions > 1:
            spread, partition = records, F.pmod(F.hash(*keys), F.lit(table.partitions))
        elif local:  # one table partition: no Spark partitions to merge
            spread, partition = records, F.lit(0)
        else:
            spread, partition = records.coalesce(table.partitions), F.spark_partition_id()
        stored = [*[c.name for c in table.stored_columns], ROWTIME, OP]
        extra = [c for c in order_by if c not in stored]
        placed = spread.select(*_stored(table), partition.alias(PARTITION), *[F.col(f"`{c}`") for c in extra])
        rows = _local_arrow(placed, DRIVER_ROWS + 1) if local else None
        if rows is None:
            rows = placed.limit(DRIVER_ROWS + 1).toArrow()
        if rows.num_rows > DRIVER_ROWS:
            return None
        # a stable sort: among equal rows, the order Spark gave
        rows = rows.sort_by([(PARTITION, "ascending"), *[(c, "ascending") for c in order_by]])
        if rows.num_rows and pc.all(pc.equal(rows[OP], INSERT)).as_py():  # all +I: no `$op` column
            stored.remove(OP)
        parts: dict[int, pa.Table] = {}
        start = 0
        for count in pc.value_counts(rows[PARTITION]).to_pylist():  # partitions in ascending order
            parts[count["values"]] = rows.slice(start, count["counts"]).select(stored)
            start += count["counts"]
        return parts

    def read(self, table: TableDef, ranges: dict[int, tuple[int, int]] | None = None,
             producer: str | None = None) -> DataFrame:
        """Records of a table (storage schema), optionally only offsets [start, end) per partition
        and only the batches one statement wrote."""
        selected, exact = self._selected(table, ranges, producer)
        if not selected:
            return empty_frame(self.spark, table.storage_schema())
        with_op = [self._has_op(f) for f in selected.values()]
        times = {place: batch_time(f) for place, f in selected.items()}
        with_time = None in times.values()
        stored = [f for f in _stored_schema(table).fields
                  if (f.name != OP or any(with_op)) and (f.name != ROWTIME or with_time)]
        schema = T.StructType([*stored, T.StructField(ROW_INDEX, T.LongType()),
                               T.StructField(PARTITION, T.IntegerType()), T.StructField(BASE, T.LongType())])
        # Files never change: a read of the same files as the same columns is the DataFrame built before
        # (Spark lists the files and analyses the projection once, ~25 ms, where each run and statement
        # reading a table's log as it stands asked for them again).
        key = (*selected.values(), schema.json(), "" if ranges is None or exact else repr(sorted(ranges.items())))
        known = self._reads.get(key)
        if known is not None:
            return known
        files = self.spark.read.schema(schema).option("basePath", str(self.root / table.uid)).parquet(
            *[str(self.root.parent / f) for f in selected.values()])
        insert = F.lit(INSERT).cast("tinyint")
        # (a missing `$op` reads as NULL: never a bare column a pushed-down filter could drop a file by)
        op = F.col(f"`{OP}`") if all(with_op) else F.coalesce(F.col(f"`{OP}`"), insert) if any(with_op) else insert
        frame = files.select(*[F.col(f"`{c.name}`") for c in table.stored_columns], _rowtime(times).alias(ROWTIME),
                             F.col(f"`{PARTITION}`"),
                             (F.col(f"`{BASE}`") + F.col(ROW_INDEX)).alias(OFFSET), op.alias(OP))
        if ranges is not None and not exact:
            frame = frame.where(in_ranges(ranges))
        if len(self._reads) >= _READS_KEPT:
            self._reads.clear()
        self._reads[key] = frame
        return frame

    def _footer(self, file: str) -> _Footer:
        """What a batch file's footer says, read once."""
        if file not in self._footers:
            if len(self._footers) >= _FOOTERS_KEPT:
                self._footers.clear()
            metadata = pq.read_metadata(self.root.parent / file)
            self._footers[file] = _Footer(has_op=OP in metadata.schema.to_arrow_schema().names,
                                          row_groups=metadata.num_row_groups)
        return self._footers[file]

    def _has_op(self, file: str) -> bool:
        """Whether a batch file has an `$op` column (one without holds +I records only)."""
        return self._footer(file).has_op

    def read_whole(self, table: TableDef, ranges: dict[int, tuple[int, int]]) -> bool:
        """Whether `read` takes each partition's records in the ranges from one file of one row group:
        a file Spark never splits, so one task reads that partition's records, in offset order."""
        selected, _exact = self._selected(table, ranges)
        per_partition = [p for p, _file in selected]
        return len(per_partition) == len(set(per_partition)) and all(
            self._footer(f).row_groups == 1 for f in selected.values())

    def highest_times(self, table: TableDef, column: str,
                      ranges: dict[int, tuple[int, int]]) -> dict[int, int | None] | None:
        """Per partition with records in the ranges, the highest value of a stored time column (epoch ms,
        floored as Spark's unix_millis; None when NULL on every record), from the files' parquet
        statistics: no Spark job. None when a file lies partly outside the ranges or has no statistics."""
        selected, exact = self._selected(table, ranges)
        if not exact:
            return None
        highest: dict[int, int | None] = {}
        for (partition, _first), file in selected.items():
            metadata = pq.read_metadata(self.root.parent / file)
            index = metadata.schema.names.index(column) if column in metadata.schema.names else None
            kept = batch_time(file) if column == ROWTIME else None
            if index is None and kept is None:
                return None
            highest.setdefault(partition, None)
            if kept is not None:  # every record's time, kept by its batch
                known = highest[partition]
                highest[partition] = kept // 1000 if known is None else max(known, kept // 1000)
                continue
            for group in range(metadata.num_row_groups):
                statistics = metadata.row_group(group).column(index).statistics
                if statistics is None or (not statistics.has_min_max and statistics.num_values):
                    return None
                if statistics.has_min_max:
                    value = statistics.max
                    if not isinstance(value, datetime):
                        return None
                    at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
                    millis = (at - _EPOCH) // timedelta(milliseconds=1)
                    known = highest[partition]
                    highest[partition] = millis if known is None else max(known, millis)
        return highest

    def one_row_per_key(self, table: TableDef, ranges: dict[int, tuple[int, int]] | None = None,
                        producer: str | None = None) -> bool:
        """Whether the records in the ranges hold each primary key once and retract nothing (no -U, no -D):
        an upsert table's state is then its records as they are, with no latest-row-per-key to compute
        (a shuffle and a sort in Spark). Read by the driver from the files' key columns, once per set of
        files (a file never changes)."""
        selected, _exact = self._selected(table, ranges, producer)
        files = frozenset(selected.values())
        if not files or not table.primary_key:
            return False
        if files not in self._unique_keys:
            retracting = any(b.retractions and files.intersection(b.files) for b in self.store.batches(table.uid))
            keys = [_read(self.root.parent / f, table.primary_key) for f in sorted(files)]
            rows = sum(k.num_rows for k in keys)
            distinct = pa.concat_tables(keys, promote_options="permissive").group_by(table.primary_key).aggregate(
                []).num_rows
            if len(self._unique_keys) >= _KEY_CHECKS_KEPT:
                self._unique_keys.clear()
            self._unique_keys[files] = not retracting and distinct == rows
        return self._unique_keys[files]

    def _selected(self, table: TableDef, ranges: dict[int, tuple[int, int]] | None = None,
                  producer: str | None = None) -> tuple[dict[tuple[int, int], str], bool]:
        """The files holding records in the ranges, by (partition, first offset), and whether each lies
        wholly inside them (no row filter needed)."""
        selected: dict[tuple[int, int], str] = {}
        exact = True
        for batch in self.store.batches(table.uid):
            if producer is not None and batch.producer != producer:
                continue
            for (p, (first, end)), file in zip(batch.ranges.items(), batch.files, strict=True):
                if ranges is None:
                    selected[(p, first)] = file
                elif p in ranges and first < ranges[p][1] and end > ranges[p][0]:
                    selected[(p, first)] = file
                    exact = exact and ranges[p][0] <= first and end <= ranges[p][1]
        return selected, exact

    def merge(self, table: TableDef, batches: list[Batch]) -> Batch:
        """One new batch holding exactly the records of consecutive `batches` of one producer (same
        values, partitions, offsets, times and ops), in log order; not registered yet. Merged batches
        are small (compaction.py): the driver concatenates each partition's files."""
        parts: dict[int, list[pa.Table]] = {}
        for batch in batches:
            for partition, file in zip(batch.ranges, batch.files, strict=True):
                parts.setdefault(partition, []).append(_with_time(_read(self.root.parent / file), batch.time))
        for partition, tables in parts.items():  # a file without `$op` beside one with it: its +I spelled out
            if any(OP in t.column_names for t in tables):
                parts[partition] = [t if OP in t.column_names else t.append_column(
                    pa.field(OP, pa.int8()), pa.array([INSERT] * t.num_rows, pa.int8())) for t in tables]
        ranges: dict[int, tuple[int, int]] = {}
        for batch in batches:
            for p, (first, end) in batch.ranges.items():
                ranges[p] = (ranges[p][0], end) if p in ranges else (first, end)
        merged = Batch(table_uid=table.uid, path=self._relative(self.root / table.uid / f"b-{uuid.uuid4().hex}"),
                       producer=batches[0].producer, rows=sum(b.rows for b in batches),
                       retractions=sum(b.retractions for b in batches), ranges=dict(sorted(ranges.items())))
        for partition, file in zip(merged.ranges, merged.files, strict=True):
            final = self.root.parent / file
            final.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.concat_tables(parts[partition], promote_options="permissive"), str(final))
        return merged

    def remove(self, files: list[str]) -> None:
        """Delete batch files (their batches no longer registered) and the folders left empty."""
        for file in files:
            path = self.root.parent / file
            path.unlink(missing_ok=True)
            for folder in (path.parent, path.parent.parent):
                try:
                    folder.rmdir()
                except OSError:  # not empty (another batch's file), or gone
                    break

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.root.parent))


def drop_table(store: Store, root: Path, uid: str) -> None:
    """Forget a table (topic, subjects, batches), then delete its folder."""
    store.drop_table(uid)
    shutil.rmtree(root / uid, ignore_errors=True)


def _stored(table: TableDef, *, with_op: bool = True, with_time: bool = True) -> list[Column]:
    """A batch's columns in its files: stored columns, $rowtime unless every record has the one its batch
    keeps, $op unless every record is +I (partition and offset: where it lies)."""
    return [*[F.col(f"`{c.name}`") for c in table.stored_columns], *([F.col(f"`{ROWTIME}`")] if with_time else []),
            *([F.col(f"`{OP}`").cast("tinyint").alias(OP)] if with_op else [])]


def _with_time(part: pa.Table, time: int | None) -> pa.Table:
    """A file's records with their `$rowtime` column: the time their batch keeps spelled out (before `$op`)."""
    if time is None:
        return part
    at = part.column_names.index(OP) if OP in part.column_names else part.num_columns
    return part.add_column(at, pa.field(ROWTIME, pa.timestamp("us", tz="UTC")),
                           pa.array([time] * part.num_rows, pa.timestamp("us", tz="UTC")))


def _rowtime(times: dict[tuple[int, int], int | None]) -> Column:
    """Each record's `$rowtime`, the files read by (partition, first offset) -> the time their batch keeps
    (None: the file's column): one time kept by every file is a constant Spark folds (a run over them writes
    it as a constant too, shared_time); else each file's own, chosen by its partition and base (constant per
    file), never a bare column a pushed-down filter could drop a file without it by."""
    kept = {place: t for place, t in times.items() if t is not None}
    if not kept:
        return F.col(f"`{ROWTIME}`")
    if len(kept) == len(times) and len(set(kept.values())) == 1:
        return F.timestamp_micros(F.lit(next(iter(kept.values()))))
    cases = [((F.col(f"`{PARTITION}`") == partition) & (F.col(f"`{BASE}`") == base), F.timestamp_micros(F.lit(time)))
             for (partition, base), time in kept.items()]
    chosen = reduce(lambda chain, case: chain.when(*case), cases[1:], F.when(*cases[0]))
    return chosen if len(kept) == len(times) else F.coalesce(F.col(f"`{ROWTIME}`"), chosen)


def inserts_only(records: DataFrame) -> bool:
    """Whether Spark's optimizer makes the records' `$op` the constant +I (records read from files
    without `$op`, a stateful run's inserts): their batch is then written without the column."""
    return _folded(records, OP) == INSERT


def shared_time(records: DataFrame) -> int | None:
    """The `$rowtime` (epoch microseconds) Spark's optimizer makes every record's (records read from
    batches keeping one time, a stateful run's time of writing): their batch keeps it once, in its name."""
    if ROWTIME not in records.columns or records.schema[ROWTIME].dataType != T.TimestampType():
        return None
    value = _folded(records, ROWTIME)
    return value if isinstance(value, int) else None


def _folded(records: DataFrame, column: str) -> object:
    """The constant Spark's optimizer makes the records' `column` (its internal value), else None; None
    too when it can not tell (a Spark Connect session). Read from the records' analyzed plan when it is
    constant there already (records over an optimized plan: spark.in_row_order), else from their own
    optimized plan when it ends in a projection (Spark keeps it), else from the plan of that column alone."""
    if column not in records.columns:
        return None
    place = records.columns.index(column)  # (a projection's list is its output, in order: found by place)
    try:
        execution = records._jdf.queryExecution()
        value = _projected(execution.analyzed(), place, column)
        if value is not None and value.foldable():
            return value.eval(None)
        plan = execution.optimizedPlan()
        if plan.nodeName() != "Project":
            plan, place = records.select(F.col(f"`{column}`"))._jdf.queryExecution().optimizedPlan(), 0
    except AttributeError:
        return None
    value = _projected(plan, place, column)
    return value.eval(None) if value is not None and value.foldable() else None


def _projected(plan: Any, place: int, column: str) -> Any:
    """The expression a plan ending in a projection gives its output column at `place` (named `column`)."""
    if plan.nodeName() != "Project":
        return None
    found = plan.projectList().apply(place)
    if found.name() != column:
        return None
    return found.child() if found.nodeName() == "Alias" else found


def _read(file: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A batch file's records (only `columns`: none still counts its rows), read as one file: ~0.05 ms
    where pq.read_table's dataset discovery takes ~0.5-1 ms."""
    return pq.ParquetFile(file).read(columns=columns)


def _stored_schema(table: TableDef) -> T.StructType:
    return T.StructType([f for f in table.storage_schema().fields if f.name not in (PARTITION, OFFSET)])


def _remove_empty_folders(table_dir: Path) -> None:
    for folder in sorted(table_dir.glob(f"{PARTITION}=*/{BASE}=*"), reverse=True) + sorted(
            table_dir.glob(f"{PARTITION}=*")):
        try:
            folder.rmdir()
        except OSError:  # not empty
            pass


# Types whose values the driver turns into Arrow as Spark's toArrow does (a TIMESTAMP only at the top,
# where it travels as epoch microseconds; anything else is left to Spark).
_DRIVER_TYPES = (T.StringType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType,
                 T.DoubleType, T.DecimalType, T.DateType, T.TimestampNTZType, T.BinaryType)


def _driver_converts(kind: T.DataType) -> bool:
    if isinstance(kind, T.ArrayType):
        return _driver_converts(kind.elementType)
    if isinstance(kind, T.MapType):
        return _driver_converts(kind.keyType) and _driver_converts(kind.valueType)
    if isinstance(kind, T.StructType):
        return all(_driver_converts(f.dataType) for f in kind.fields)
    return isinstance(kind, _DRIVER_TYPES)


def _local_arrow(frame: DataFrame, limit: int) -> pa.Table | None:
    """A local relation's rows as the Arrow table `toArrow` gives (same schema), collected from the
    driver without a Spark job (toArrow runs one, about as long as the rest of an INSERT ... VALUES).
    Times travel as epoch microseconds: Python's rows would carry them in the process's time zone.
    None for a type left to Spark, or more than `limit` rows."""
    schema = frame.schema
    if not all(isinstance(f.dataType, T.TimestampType) or _driver_converts(f.dataType) for f in schema.fields):
        return None
    rows = frame.select(*[F.unix_micros(F.col(f"`{f.name}`")) if isinstance(f.dataType, T.TimestampType)
                          else F.col(f"`{f.name}`") for f in schema.fields]).limit(limit).collect()
    arrow = to_arrow_schema(schema, timezone="UTC")
    columns = [pa.array([row[i] for row in rows], pa.int64()).cast(field.type)
               if isinstance(schema.fields[i].dataType, T.TimestampType) else
               pa.array([row[i] for row in rows], field.type) for i, field in enumerate(arrow)]
    return pa.Table.from_arrays(columns, schema=arrow)


def _retractions(written: pa.Table) -> int:
    """How many records of a batch retract a row (-U, -D; none without `$op`)."""
    if OP not in written.column_names:
        return 0
    return int(pc.sum(pc.is_in(written[OP], value_set=pa.array([UPDATE_BEFORE, DELETE], pa.int8()))).as_py() or 0)


def in_ranges(ranges: dict[int, tuple[int, int]]) -> Column:
    """Whether a record is in one of the ranges (partition -> [start, end) offsets)."""
    partition, offset = F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`")
    conditions = [(partition == p) & (offset >= start) & (offset < end) for p, (start, end) in ranges.items()]
    return reduce(lambda a, b: a | b, conditions, F.lit(False))
