"""A table's records as the DataFrames queries read: its changes, its current state, its versions.

Every view has the table's visible columns (stored, computed and METADATA
columns, in declaration order) plus `$rowtime`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from shift_left_dagster.local.catalog import (
    DELETE,
    INSERT,
    OFFSET,
    OP,
    PARTITION,
    ROWTIME,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    TableDef,
)
from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.types import spark_type_of
from shift_left_dagster.translation.spark import ARRIVAL, CLEARINGS, HIDDEN, VALID_FROM, VALID_TO, translate_expression

Ranges = dict[int, tuple[int, int]]
_TIMES = (T.TimestampType, T.TimestampNTZType)
# (records, their version time, their key columns) -> the records with VALID_FROM and VALID_TO
Validity = Callable[[DataFrame, Column, list[Column]], DataFrame]
_LATEST = "__sl_latest"  # a key's latest version time among the records before one (versions)


class TemporalJoinError(ValueError):
    """A temporal join whose right side is not a versioned table."""


class TableViews:
    def __init__(self, logs: TableLogs) -> None:
        self.logs = logs
        self._changes: dict[str, tuple[DataFrame, TableDef, DataFrame]] = {}  # uid -> records, table, changes

    def changes(self, table: TableDef, ranges: Ranges | None = None) -> DataFrame:
        """Every record in the ranges, carrying its op, time and offset in the hidden columns (the
        DataFrame given before when the log read the same records, files never changing, as the same table)."""
        records = self.logs.read(table, ranges)
        known = self._changes.get(table.uid)
        if known is not None and known[0] is records and known[1] == table:
            return known[2]
        hidden = [F.col(f"`{system}`").alias(name) for name, system in HIDDEN.items()]
        frame = records.select(*self._visible(table), *hidden)
        self._changes[table.uid] = (records, table.model_copy(deep=True), frame)
        return frame

    def normalized(self, table: TableDef, history: Ranges | None, emit_from: dict[int, int] | None = None,
                   compared: list[str] | None = None) -> DataFrame:
        """An upsert table's changes as Flink's ChangelogNormalize emits them, with the hidden columns
        of `changes`. The statement's state starts empty at each history range's start; per key, in
        offset order: the first row is +I; a row equal to the kept one (on the `compared` columns,
        those the query reads) is dropped; another is -U of the kept row then +U; a DELETE of a kept
        row is -D of that row, of nothing is dropped. Rows of records before `emit_from` (already
        processed) are computed, not returned."""
        op, offset, partition = F.col(f"`{OP}`"), F.col(f"`{OFFSET}`"), F.col(f"`{PARTITION}`")
        records = self.logs.read(table, history).where(op != UPDATE_BEFORE)
        visible = self._visible(table)
        names = [c.name for c in table.columns] + [ROWTIME]
        rows = records.select(F.struct(*visible).alias("__sl_row"), op.alias("__sl_kind"), offset.alias("__sl_at"),
                              partition.alias("__sl_p"), *[F.col(f"`{k}`").alias(f"__sl_k{i}")
                                                          for i, k in enumerate(table.primary_key)])
        order = Window.partitionBy(*[F.col(f"__sl_k{i}") for i in range(len(table.primary_key))]).orderBy(
            F.col("__sl_p"), F.col("__sl_at"))
        rows = rows.select("*", F.lag("__sl_row").over(order).alias("__sl_prev"),
                           F.lag("__sl_kind").over(order).alias("__sl_prev_kind"))
        if emit_from is not None:
            rows = rows.where(reduce(lambda a, b: a | b, [
                (F.col("__sl_p") == p) & (F.col("__sl_at") >= start) for p, start in emit_from.items()], F.lit(False)))
        kept = F.col("__sl_prev_kind").isNotNull() & (F.col("__sl_prev_kind") != DELETE)
        fields = [n for n in (compared or names) if n in names]
        same = F.to_json(F.struct(*[F.col(f"__sl_prev.`{n}`") for n in fields])).eqNullSafe(
            F.to_json(F.struct(*[F.col(f"__sl_row.`{n}`") for n in fields])))
        upsert = F.col("__sl_kind") != DELETE

        def emitted(kind: int, row: str) -> Column:
            return F.struct(F.lit(kind).alias("kind"), F.col(row).alias("row"))

        update = upsert & kept & ~same
        changes = F.array(F.when(upsert & ~kept, emitted(INSERT, "__sl_row")),
                          F.when(update, emitted(UPDATE_BEFORE, "__sl_prev")),
                          F.when(update, emitted(UPDATE_AFTER, "__sl_row")),
                          F.when(~upsert & kept, emitted(DELETE, "__sl_prev")))
        out = rows.select(F.explode(F.filter(changes, lambda c: c.isNotNull())).alias("__sl_c"), F.col("__sl_at"))
        hidden = {OP: F.col("__sl_c.kind"), ROWTIME: F.col(f"__sl_c.row.`{ROWTIME}`"), OFFSET: F.col("__sl_at")}
        return out.select(*[F.col(f"__sl_c.row.`{n}`").alias(n) for n in names],
                          *[hidden[system].alias(name) for name, system in HIDDEN.items()])

    def state(self, table: TableDef, ranges: Ranges | None = None, producer: str | None = None,
              skip: Mapping[int, list[int]] | None = None, arrival: int = 0,
              clearings: Mapping[int, Mapping[int, list[int]]] | None = None) -> DataFrame:
        """The table as it stands: the latest row per primary key for an upsert table (deletes
        removed; its records as they are when they hold each key once and delete nothing), else the
        rows inserted and not retracted; without the records at `skip` (partition -> offsets: the late
        rows an event-time operator dropped, late_rows.py). `arrival` 1 (or -1) adds each row's offset
        (negated; over several partitions offset-major, partition-minor) as ARRIVAL, for a query that
        orders by arrival; `clearings` (how many times a key's state was cleared -> partition -> offsets
        kept after) adds that number as CLEARINGS (0 elsewhere)."""
        records = self.logs.read(table, ranges, producer)
        if skip:
            records = records.where(~at_offsets(skip))
        op = F.col(f"`{OP}`")
        if table.upsert:
            if not self.logs.one_row_per_key(table, ranges, producer):
                latest = Window.partitionBy(*[F.col(f"`{k}`") for k in table.primary_key]).orderBy(
                    F.col(f"`{OFFSET}`").desc())
                records = (records.where(op != UPDATE_BEFORE).withColumn("__sl_n", F.row_number().over(latest))
                           .where((F.col("__sl_n") == 1) & (op != DELETE)))
        elif any(b.retractions for b in self.logs.store.batches(table.uid)):
            records = self._cancel_retractions(table, records)
        # else every record is +I or +U: the table is its records, $op unread
        # over several partitions, offset then partition: one deterministic interleaving (ties never flip)
        position = F.col(f"`{OFFSET}`") if table.partitions == 1 else \
            F.col(f"`{OFFSET}`") * table.partitions + F.col(f"`{PARTITION}`")
        ordered = [(position * arrival).alias(ARRIVAL)] if arrival else []
        if clearings is not None:
            count = reduce(lambda chain, case: chain.when(at_offsets(case[1]), case[0]), clearings.items(), F)
            ordered.append((count.otherwise(0) if clearings else F.lit(0)).alias(CLEARINGS))
        return records.select(*self._visible(table), *ordered)

    def versions(self, table: TableDef, ranges: Ranges | None = None,
                 validity: Validity | None = None) -> DataFrame:
        """Every version of a versioned table with its validity [valid_from, valid_to) in version time
        (the watermark column, else $rowtime); a delete ends a version and is no version itself.
        `validity` sets the two columns instead when each probe row may see only the versions read before
        it was emitted (local/interval_reads.py, versions_as_read)."""
        if not table.primary_key:
            raise TemporalJoinError(
                f"Temporal Table Join requires primary key in versioned table, but no primary key can be found "
                f"for table '{table.name}'.")
        time = F.col(f"`{table.watermark_column or ROWTIME}`").cast("timestamp")
        keys = [F.col(f"`{k}`") for k in table.primary_key]
        records = self.logs.read(table, ranges).where(F.col(f"`{OP}`") != UPDATE_BEFORE)
        # Flink's versioned view keeps a key's latest-timed row (RowTimeDeduplicateFunction, keep-last): an
        # update older than a version that came before it is no version.
        before = Window.partitionBy(*keys).orderBy(F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`")).rowsBetween(
            Window.unboundedPreceding, -1)
        records = records.withColumn(_LATEST, F.max(F.when(F.col(f"`{OP}`") != DELETE, time)).over(before)).where(
            (F.col(f"`{OP}`") == DELETE) | F.col(_LATEST).isNull() | (time >= F.col(_LATEST)))
        order = Window.partitionBy(*keys).orderBy(time, F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`"))
        records = validity(records, time, keys) if validity is not None else \
            records.withColumn(VALID_FROM, time).withColumn(VALID_TO, F.lead(time).over(order))
        records = records.where(F.col(f"`{OP}`") != DELETE)
        return records.select(*self._visible(table), F.col(VALID_FROM), F.col(VALID_TO))

    def highest_times(self, table: TableDef, column: str, ranges: Ranges) -> dict[int, int | None]:
        """Per partition with records in the ranges, the highest value of a time column (epoch ms;
        None when it is NULL on every record): what a run moves each partition's watermark to."""
        if not any(end > start for start, end in ranges.values()):
            return {}
        declared = table.column(column)
        name = declared.name if declared is not None else ROWTIME
        if declared is not None and declared.virtual and declared.metadata_key == "timestamp":
            stored = ROWTIME  # (the record's time)
        elif declared is None or (declared.stored and isinstance(spark_type_of(declared.type), _TIMES)):
            stored = name
        else:  # computed, or not a time: Spark computes it
            stored = None
        known = self.logs.highest_times(table, stored, ranges) if stored is not None else None
        if known is not None:
            return known
        rows = (self.located(table, ranges)
                .select(F.col(f"`{PARTITION}`").alias("p"), F.col(f"`{name}`").cast("timestamp").alias("t"))
                .groupBy("p").agg(F.max(F.unix_millis(F.col("t"))).alias("t")).collect())
        return {int(row["p"]): (int(row["t"]) if row["t"] is not None else None) for row in rows}

    def located(self, table: TableDef, ranges: Ranges | None = None) -> DataFrame:
        """Every record in the ranges as its visible columns, with where it is: $partition and $offset."""
        return self.logs.read(table, ranges).select(F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`"),
                                                    *self._visible(table))

    def first_offset_at(self, table: TableDef, millis: int) -> dict[int, int]:
        """Per partition, the first offset whose $rowtime is at or after `millis` (Kafka's offsetsForTimes)."""
        rows = (self.logs.read(table).where(F.col(f"`{ROWTIME}`") >= F.timestamp_millis(F.lit(millis)))
                .groupBy(PARTITION).agg(F.min(F.col(f"`{OFFSET}`")).alias("first")).collect())
        return {row[PARTITION]: row["first"] for row in rows}

    @staticmethod
    def _visible(table: TableDef) -> list[Column]:
        columns: list[Column] = []
        for column in table.columns:
            if column.expression is not None:
                columns.append(F.expr(translate_expression(column.expression)).alias(column.name))
            elif column.virtual:
                value = _metadata(table, column.metadata_key or column.name)
                columns.append(value.cast(spark_type_of(column.type)).alias(column.name))
            else:
                columns.append(F.col(f"`{column.name}`"))
        return columns + [F.col(f"`{ROWTIME}`")]

    @staticmethod
    def _cancel_retractions(table: TableDef, records: DataFrame) -> DataFrame:
        """Multiset semantics: each -U/-D cancels one equal +I/+U."""
        stored = [F.col(f"`{c.name}`") for c in table.stored_columns]
        sign = F.when(F.col(f"`{OP}`").isin(INSERT, UPDATE_AFTER), 1).otherwise(-1)
        counted = records.groupBy(*stored).agg(F.sum(sign).alias("__sl_n"), F.max(F.col(f"`{ROWTIME}`")).alias(ROWTIME))
        return (counted.where(F.col("__sl_n") > 0)
                .withColumn("__sl_copy", F.explode(F.sequence(F.lit(1), F.col("__sl_n"))))
                .withColumn(PARTITION, F.lit(None).cast("int")).withColumn(OFFSET, F.lit(None).cast("long")))


def at_offsets(offsets: Mapping[int, list[int]]) -> Column:
    """Whether a record is at one of the offsets (partition -> offsets)."""
    partition, offset = F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`")
    return reduce(lambda a, b: a | b, [(partition == p) & offset.isin(found) for p, found in offsets.items()],
                  F.lit(False))


def _metadata(table: TableDef, key: str) -> Column:
    """What a read-only metadata key holds for a record of the local service (metadata.py)."""
    system = {"timestamp": ROWTIME, "partition": PARTITION, "offset": OFFSET}.get(key)
    if system is not None:
        return F.col(f"`{system}`")
    if key == "topic":
        return F.lit(table.name)
    if key == "leader-epoch":
        return F.lit(0)
    if key == "timestamp-type":
        return F.lit("CreateTime")
    if key == "headers":
        return F.create_map()
    keys = [k.lower() for k in table.key_columns]
    physical = [c.name for c in table.stored_columns if c.metadata_key is None]
    if key == "raw-key":
        if not keys:
            return F.lit(None).cast("binary")
        return F.encode(F.to_json(F.struct(*[F.col(f"`{c}`") for c in physical if c.lower() in keys])), "UTF-8")
    if table.options.get("value.fields-include") == "except-key":
        physical = [c for c in physical if c.lower() not in keys]
    return F.encode(F.to_json(F.struct(*[F.col(f"`{c}`") for c in physical])), "UTF-8")
