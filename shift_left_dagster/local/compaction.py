"""Compaction of table logs: a table's small consecutive batches merged into one.

Every run writes a batch per sink, so a continuous statement fed one record
at a time leaves a file per record, and reads slow down as files pile up.
When a table holds more than `max_small_batches` small batches, each run
of consecutive small batches of one producer (a statement reads back its
own batches, jobs.py) is rewritten as one batch with the same records and
offsets, registered in place of the run in one transaction (store.py): any
reader's offsets stay valid. The engine compacts between runs (engine.py), so
its own reads never see a file vanish; the old files stay
`retention_seconds` more for readers beside the service (checks, reader.py)
that listed them before the swap.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from shift_left_dagster.local.storage import TableLogs
from shift_left_dagster.local.store import Batch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionPolicy:
    """Small batches are merged up to `small_rows` records: rewriting one costs little, and a batch that
    size is read as fast as any; a table is left alone below `max_small_batches` of them, so a merge
    happens once per that many runs at most."""

    small_rows: int = 50_000
    max_small_batches: int = 16
    retention_seconds: float = 300.0


def compact(logs: TableLogs, policy: CompactionPolicy) -> int:
    """Merge the small batches of every crowded table; the number of batches merged away."""
    merged = 0
    for uid in logs.store.crowded_tables(policy.small_rows, policy.max_small_batches):
        table = logs.store.table_by_uid(uid)
        if table is None:
            continue
        for run in mergeable_runs(logs.store.batches(uid), policy.small_rows):
            batch = logs.merge(table, run)
            if logs.store.replace_batches(run, batch):
                merged += len(run) - 1
            else:  # the table was dropped meanwhile
                logs.remove(batch.files)
    return merged


def remove_retired(logs: TableLogs, policy: CompactionPolicy) -> None:
    """Delete the files of merged batches once no reader can still be using them."""
    paths = logs.store.retired_before(time.time() - policy.retention_seconds)
    if paths:
        logs.remove(paths)
        logs.store.forget_retired(paths)


def mergeable_runs(batches: list[Batch], small_rows: int) -> list[list[Batch]]:
    """Runs of two or more consecutive small batches of one producer, each partition's offsets contiguous
    across the run, of fewer than `small_rows` records together."""
    runs: list[list[Batch]] = []
    run: list[Batch] = []
    for batch in batches:
        if run and not _extends(run, batch, small_rows):
            runs.append(run)
            run = []
        if batch.rows < small_rows:
            run.append(batch)
    runs.append(run)
    return [r for r in runs if len(r) > 1]


def _extends(run: list[Batch], batch: Batch, small_rows: int) -> bool:
    if batch.producer != run[0].producer or sum(b.rows for b in run) + batch.rows >= small_rows:
        return False
    ends = {p: end for b in run for p, (_first, end) in b.ranges.items()}
    return all(ends.get(p, first) == first for p, (first, _end) in batch.ranges.items())
