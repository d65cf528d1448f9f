"""Table logs on disk: each write is one batch folder of parquet files Spark reads.

A batch is written to a hidden temporary folder and renamed into place, then
registered in sqlite (store.py); readers only see registered batches, so a
crash or a concurrent reader never sees half a batch. Offsets are dense per
partition: a record's offset is its partition's next offset plus its index
among the batch's records of that partition. A small batch is placed by the
driver, collected as Arrow and written with pyarrow: a fraction of the fixed
cost of a Spark write (a shuffle, a sort, a write job and its commit protocol);
a run over few records is also computed without code generation, which costs
more than it saves on a few rows. A batch is counted (rows, retractions,
offsets per partition, NULLs in NOT NULL columns) on its Arrow columns, read
back after a Spark write: counting inside the job (an observed metric) runs
outside generated code and cost more. Compaction (compaction.py)
rewrites consecutive small batches as one, records and offsets unchanged.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import DELETE, OFFSET, OP, PARTITION, ROWTIME, UPDATE_BEFORE, TableDef
from shift_left_dagster.local.spark import empty_frame, without_codegen
from shift_left_dagster.local.store import Batch, Store

_INDEX_BITS = 33  # monotonically_increasing_id() = spark partition id << 33 | index in the partition
DRIVER_ROWS = 100_000  # at most this many records: a batch the driver writes, a run without code generation


class NotNullViolation(ValueError):
    """A NULL written into a NOT NULL column (primary keys are NOT NULL), as Flink refuses it."""


class TableLogs:
    def __init__(self, root: Path, spark: SparkSession, store: Store) -> None:
        self.root = root
        self.spark = spark
        self.store = store
        root.mkdir(parents=True, exist_ok=True)

    def remove_unregistered(self) -> int:
        """Delete batch folders no committed run names (a crash between rename and commit) and temp folders."""
        registered = self.store.batch_paths()
        removed = 0
        for table_dir in self.root.iterdir():
            for batch_dir in table_dir.iterdir() if table_dir.is_dir() else []:
                if self._relative(batch_dir) not in registered:
                    shutil.rmtree(batch_dir, ignore_errors=True)
                    removed += 1
        return removed

    def write(self, table: TableDef, records: DataFrame, producer: str | None, order_by: Sequence[str] = (), *,
              small_input: bool = False, collect: bool = False) -> Batch | None:
        """Append records (stored columns + $rowtime + $op) as one batch; None when there were none.

        Records go to partitions by a hash of the table's key, in the input
        order the `order_by` columns give (an upsert table's latest row wins, a
        stateless query keeps each source partition's order). A table without
        key (or with one partition) takes the records where they are, without
        shuffle: Spark partitions merged down to the table's, each written to
        one. With `small_input` (the run read at most DRIVER_ROWS records) the
        batch is computed without code generation; with `collect` (a batch
        likely small: a stateless run over few records, a changelog of
        differences) one of at most DRIVER_ROWS records is placed and written
        by the driver, a larger one is computed again and written by Spark.
        """
        bases = self.store.end_offsets(table.uid)
        final = self.root / table.uid / f"b-{uuid.uuid4().hex}"
        temporary = final.with_name(f".tmp-{final.name}")
        written = None
        if collect:
            with without_codegen(self.spark) if small_input else nullcontext():
                written = self._collected(table, records, bases, order_by)
        if written is not None:
            if written.num_rows:
                temporary.mkdir(parents=True)
                pq.write_table(written, str(temporary / "part-00000.parquet"))
        else:  # Spark writes the batch, then its counted columns are read back
            self._placed(table, records, bases, order_by).write.parquet(str(temporary))
            files = sorted(str(f) for f in temporary.glob("*.parquet"))
            counted = [PARTITION, OFFSET, OP, *[c.name for c in table.stored_columns if not c.nullable]]
            written = pq.read_table(files, columns=counted) if files else None
        if written is None or not written.num_rows:
            shutil.rmtree(temporary, ignore_errors=True)
            return None
        violations = [c.name for c in table.stored_columns if not c.nullable and written[c.name].null_count]
        if violations:
            shutil.rmtree(temporary, ignore_errors=True)
            raise NotNullViolation(
                f"Column '{violations[0]}' is NOT NULL, however, a null value is being written into it. "
                f"You can set job configuration 'table.exec.sink.not-null-enforcer'='DROP' to suppress this "
                f"exception and drop such records silently."
            )
        temporary.rename(final)
        return Batch(table_uid=table.uid, path=self._relative(final), producer=producer, rows=written.num_rows,
                     retractions=_retractions(written), ranges=_ranges(written))

    @staticmethod
    def _placed(table: TableDef, records: DataFrame, bases: dict[int, int], order_by: Sequence[str]) -> DataFrame:
        """The batch in storage columns for Spark to write: Spark partition p holds table partition p's
        records (in `order_by` order), offset = base + index in the Spark partition."""
        keys = [F.col(f"`{k}`") for k in table.key_columns]
        if keys and table.partitions > 1:
            spread = records.repartition(table.partitions, *keys)
        else:
            spread = records.coalesce(table.partitions)
        if order_by:
            spread = spread.sortWithinPartitions(*[F.col(f"`{c}`") for c in order_by])
        partition = F.spark_partition_id()
        base = F.element_at(F.array(*[F.lit(bases.get(p, 0)) for p in range(table.partitions)]), partition + 1)
        index = F.monotonically_increasing_id() - F.shiftleft(partition.cast("long"), _INDEX_BITS)
        return spread.select(*_storage_columns(table, partition), (base + index).alias(OFFSET))

    @staticmethod
    def _collected(table: TableDef, records: DataFrame, bases: dict[int, int],
                   order_by: Sequence[str]) -> pa.Table | None:
        """The batch in storage columns, placed by the driver without shuffle or Spark sort: a keyed
        record's partition is the hash `repartition` computes (pmod of Murmur3), a keyless one's its
        Spark partition merged down to the table's; records by partition, in `order_by` order,
        offset = base + index in the partition. None when it holds more than DRIVER_ROWS records."""
        keys = [F.col(f"`{k}`") for k in table.key_columns]
        if keys and table.partitions > 1:
            spread, partition = records, F.pmod(F.hash(*keys), F.lit(table.partitions))
        else:
            spread, partition = records.coalesce(table.partitions), F.spark_partition_id()
        stored = [*[c.name for c in table.stored_columns], ROWTIME, PARTITION, OP]
        extra = [c for c in order_by if c not in stored]
        rows = spread.select(*_storage_columns(table, partition), *[F.col(f"`{c}`") for c in extra]).limit(
            DRIVER_ROWS + 1).toArrow()
        if rows.num_rows > DRIVER_ROWS:
            return None
        # a stable sort: among equal rows, the order Spark gave
        rows = rows.sort_by([(PARTITION, "ascending"), *[(c, "ascending") for c in order_by]]).drop_columns(extra)
        offsets: list[int] = []
        for count in pc.value_counts(rows[PARTITION]).to_pylist():  # partitions in ascending order
            base = bases.get(count["values"], 0)
            offsets.extend(range(base, base + count["counts"]))
        placed = rows.append_column(OFFSET, pa.array(offsets, pa.int64()))
        return placed.select([*stored[:-1], OFFSET, OP])

    def read(self, table: TableDef, ranges: dict[int, tuple[int, int]] | None = None,
             producer: str | None = None) -> DataFrame:
        """Records of a table (storage schema), optionally only offsets [start, end) per partition
        and only the batches one statement wrote."""
        schema = table.storage_schema()
        selected: list[Batch] = []
        exact = True  # every selected batch lies wholly inside the ranges: no row filter needed
        for batch in self.store.batches(table.uid):
            if producer is not None and batch.producer != producer:
                continue
            if ranges is None:
                selected.append(batch)
                continue
            overlap = [p for p, (first, end) in batch.ranges.items()
                       if p in ranges and first < ranges[p][1] and end > ranges[p][0]]
            if overlap:
                selected.append(batch)
                exact = exact and set(overlap) == set(batch.ranges) and all(
                    ranges[p][0] <= batch.ranges[p][0] and batch.ranges[p][1] <= ranges[p][1] for p in overlap)
        if not selected:
            return empty_frame(self.spark, schema)
        frame = self.spark.read.schema(schema).parquet(*[str(self.root.parent / b.path) for b in selected])
        if ranges is not None and not exact:
            frame = frame.where(in_ranges(ranges))
        return frame

    def merge(self, table: TableDef, batches: list[Batch]) -> Batch:
        """One new batch folder holding exactly the records of consecutive `batches` of one producer
        (same values, partitions, offsets, times and ops), in log order; not registered yet."""
        final = self.root / table.uid / f"b-{uuid.uuid4().hex}"
        temporary = final.with_name(f".tmp-{final.name}")
        records = self.spark.read.schema(table.storage_schema()).parquet(
            *[str(self.root.parent / b.path) for b in batches])
        records.coalesce(1).sortWithinPartitions(PARTITION, OFFSET).write.parquet(str(temporary))
        temporary.rename(final)
        ranges: dict[int, tuple[int, int]] = {}
        for batch in batches:
            for p, (first, end) in batch.ranges.items():
                ranges[p] = (ranges[p][0], end) if p in ranges else (first, end)
        return Batch(table_uid=table.uid, path=self._relative(final), producer=batches[0].producer,
                     rows=sum(b.rows for b in batches), retractions=sum(b.retractions for b in batches),
                     ranges=ranges)

    def remove(self, paths: list[str]) -> None:
        """Delete batch folders (their batches no longer registered)."""
        for path in paths:
            shutil.rmtree(self.root.parent / path, ignore_errors=True)

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.root.parent))


def drop_table(store: Store, root: Path, uid: str) -> None:
    """Forget a table (topic, subjects, batches), then delete its folder."""
    store.drop_table(uid)
    shutil.rmtree(root / uid, ignore_errors=True)


def _storage_columns(table: TableDef, partition: Column) -> list[Column]:
    """A batch's columns but its offsets: stored columns, $rowtime, $partition (as given), $op."""
    return [*[F.col(f"`{c.name}`") for c in table.stored_columns], F.col(f"`{ROWTIME}`"), partition.alias(PARTITION),
            F.col(f"`{OP}`").cast("tinyint").alias(OP)]


def _retractions(written: pa.Table) -> int:
    """How many records of a batch retract a row (-U, -D)."""
    return int(pc.sum(pc.is_in(written[OP], value_set=pa.array([UPDATE_BEFORE, DELETE], pa.int8()))).as_py() or 0)


def _ranges(written: pa.Table) -> dict[int, tuple[int, int]]:
    """Per partition, the offsets [first, last + 1) a batch holds."""
    spans = written.group_by(PARTITION).aggregate([(OFFSET, "min"), (OFFSET, "max")]).to_pylist()
    return {int(s[PARTITION]): (int(s[f"{OFFSET}_min"]), int(s[f"{OFFSET}_max"]) + 1) for s in spans}


def in_ranges(ranges: dict[int, tuple[int, int]]) -> Column:
    """Whether a record is in one of the ranges (partition -> [start, end) offsets)."""
    partition, offset = F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`")
    conditions = [(partition == p) & (offset >= start) & (offset < end) for p, (start, end) in ranges.items()]
    return reduce(lambda a, b: a | b, conditions, F.lit(False))
