"""A table of several partitions as the oracle feeds it to Flink: which partition each row lies in, the
order a run reads them and the watermark after each, in plain Python (never the engine's code).

The local service places a row of a bucketed table by Spark's `pmod(hash(key columns), buckets)`
(Murmur3 x86_32, seed 42, Spark's variant for byte strings), and documents how a run reads several
partitions (local/late_rows.py): run by run, partition by partition, each in the order its rows were
written; a partition's watermark is its highest event time so far minus the delay, the source's the
lowest over the partitions with rows in the run (the others are idle), never decreasing. Flink takes
one interleaving of its own per run; this is one it can take. The Flink side reads the table's rows
as one file in that order, each with the watermark after it (oss.py), so Flink's operators meet the
same watermarks record by record.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

_MASK = 0xFFFFFFFF
_SEED = 42
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "INTEGER")
_STRINGS = ("STRING", "VARCHAR")


class UnplacedError(ValueError):
    """A row whose partition the oracle can not compute (a key type it does not hash)."""


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _MASK
    return (_rotl(k1, 15) * 0x1B873593) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def _final_mix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    return h1 ^ (h1 >> 16)


def _hash_int(value: int, seed: int) -> int:
    return _final_mix(_mix_h1(seed, _mix_k1(value & _MASK)), 4)


def _hash_long(value: int, seed: int) -> int:
    h1 = _mix_h1(seed, _mix_k1(value & _MASK))
    return _final_mix(_mix_h1(h1, _mix_k1((value >> 32) & _MASK)), 8)


def _hash_bytes(data: bytes, seed: int) -> int:
    """Spark's Murmur3_x86_32.hashUnsafeBytes: whole 4-byte words, then each remaining byte (signed) alone."""
    aligned = len(data) - len(data) % 4
    h1 = seed
    for at in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[at:at + 4], "little")))
    for byte in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _MASK))
    return _final_mix(h1, len(data))


def spark_hash(values: Sequence[Any], types: Sequence[str]) -> int:
    """Spark's `hash(c1, c2, ...)` of typed values (a NULL leaves the running hash as it is), signed."""
    running = _SEED
    for value, kind in zip(values, types, strict=True):
        base = kind.upper().split("(")[0].strip()
        if value is None:
            continue
        if base in _STRINGS:
            running = _hash_bytes(str(value).encode(), running)
        elif base in _INTEGERS:
            running = _hash_int(int(value), running)
        elif base == "BIGINT":
            running = _hash_long(int(value), running)
        elif base == "BOOLEAN":
            running = _hash_int(1 if value else 0, running)
        else:
            raise UnplacedError(f"a key column of type {kind}: the oracle places rows by STRING, integer or "
                                f"BOOLEAN keys only")
    return running - (1 << 32) if running > 0x7FFFFFFF else running


def partition_of(key: Sequence[Any], types: Sequence[str], partitions: int) -> int:
    return spark_hash(key, types) % partitions


def read_order(runs: Sequence[Sequence[int]]) -> list[int]:
    """Row indexes in the order the runs read them: run by run, partition by partition, in written order
    (`runs`: each run's rows' partitions, in written order; indexes count across runs)."""
    order: list[int] = []
    start = 0
    for partitions in runs:
        order += sorted(range(start, start + len(partitions)), key=lambda i: (partitions[i - start], i))
        start += len(partitions)
    return order


def arrival_watermarks(runs: Sequence[Sequence[tuple[int, datetime | None]]], delay_ms: int
                       ) -> tuple[list[list[datetime | None]], datetime | None]:
    """Per run, per row in read order (`runs`: each run's rows as (partition, event time) in read order),
    the source's watermark after it (None: none yet); and the watermark after the last run. A partition
    without rows in a run is idle for the whole run: the watermark it held back rises as the run begins,
    which Flink meets after the previous run's last row."""
    highest: dict[int, datetime] = {}
    watermark: datetime | None = None
    found: list[list[datetime | None]] = []

    def raised(current: datetime | None, partitions: list[int]) -> datetime | None:
        if not partitions or any(p not in highest for p in partitions):
            return current
        low = _minus(min(highest[p] for p in partitions), delay_ms)
        return low if current is None else max(current, low)

    for rows in runs:
        active = sorted({p for p, _ in rows})
        watermark = raised(watermark, active)
        previous = next((run for run in reversed(found) if run), None)
        if previous is not None and watermark is not None:
            previous[-1] = watermark if previous[-1] is None else max(previous[-1], watermark)
        after: list[datetime | None] = []
        for partition, moment in rows:
            if moment is not None:
                highest[partition] = max(highest.get(partition, moment), moment)
            watermark = raised(watermark, active)
            after.append(watermark)
        found.append(after)
    return found, watermark


def _minus(moment: datetime, delay_ms: int) -> datetime:
    return moment - timedelta(milliseconds=delay_ms)


def epoch_ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return round(aware.timestamp() * 1000)
