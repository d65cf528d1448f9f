"""A table's records as the DataFrames queries read: its changes, its current state, its versions.

Every view has the table's visible columns (stored, computed and METADATA
columns, in declaration order) plus `$rowtime`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from shift_left_dagster.local.catalog import (
    DELETE, INSERT, OFFSET, OP, PARTITION, ROWTIME, UPDATE_AFTER, UPDATE_BEFORE, METADATA_KEYS, TableDef,
)
from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.translate import HIDDEN, VALID_FROM, VALID_TO, translate_expression

Ranges = dict[int, tuple[int, int]]


class TemporalJoinError(ValueError):
    """A temporal join whose right side is not a versioned table."""


class TableViews:
    def __init__(self, logs: TableLogs) -> None:
        self.logs = logs

    def changes(self, table: TableDef, ranges: Ranges | None = None) -> DataFrame:
        """Every record in the ranges, carrying its op, time and offset in the hidden columns."""
        records = self.logs.read(table, ranges)
        hidden = [F.col(f"`{system}`").alias(name) for name, system in HIDDEN.items()]
        return records.select(*self._visible(table), *hidden)

    def state(self, table: TableDef, ranges: Ranges | None = None, producer: str | None = None) -> DataFrame:
        """The table as it stands: the latest row per primary key for an upsert table (deletes
        removed), else the rows inserted and not retracted."""
        records = self.logs.read(table, ranges, producer)
        op = F.col(f"`{OP}`")
        if table.upsert:
            latest = Window.partitionBy(*[F.col(f"`{k}`") for k in table.primary_key]).orderBy(
                F.col(f"`{OFFSET}`").desc())
            records = (records.where(op != UPDATE_BEFORE).withColumn("__sl_n", F.row_number().over(latest))
                       .where((F.col("__sl_n") == 1) & (op != DELETE)))
        elif any(b.retractions for b in self.logs.store.batches(table.uid)):
            records = self._cancel_retractions(table, records)
        else:
            records = records.where(op.isin(INSERT, UPDATE_AFTER))
        return records.select(*self._visible(table))

    def versions(self, table: TableDef, ranges: Ranges | None = None) -> DataFrame:
        """Every version of a versioned table with its validity [valid_from, valid_to) in version time
        (the watermark column, else $rowtime); a delete ends a version and is no version itself."""
        if not table.primary_key:
            raise TemporalJoinError(
                f"Temporal Table Join requires primary key in versioned table, but no primary key can be found "
                f"for table '{table.name}'.")
        time = F.col(f"`{table.watermark_column or ROWTIME}`").cast("timestamp")
        records = self.logs.read(table, ranges).where(F.col(f"`{OP}`") != UPDATE_BEFORE)
        order = Window.partitionBy(*[F.col(f"`{k}`") for k in table.primary_key]).orderBy(
            time, F.col(f"`{PARTITION}`"), F.col(f"`{OFFSET}`"))
        records = (records.withColumn(VALID_FROM, time).withColumn(VALID_TO, F.lead(time).over(order))
                   .where(F.col(f"`{OP}`") != DELETE))
        return records.select(*self._visible(table), F.col(VALID_FROM), F.col(VALID_TO))

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
                system = METADATA_KEYS[column.metadata_key or ""]
                value = F.col(f"`{system}`") if system else F.lit(table.name)
                columns.append(value.alias(column.name))
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
