"""The engine's watermarks over a table of several partitions (local/late_rows.py: `_floors`, folded per run
and partition) meet those the oracle feeds Apache Flink (tests/oracle/partitions.py: row by row), on any
runs: the two models are written apart, and the oracle cases compare the second with Flink."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from shift_left_dagster.local.event_time import MIN_WATERMARK
from shift_left_dagster.local.late_rows import _arrivals
from tests.oracle.partitions import arrival_watermarks, epoch_ms, read_order

_BASE = datetime(2026, 3, 1, 10, 0)

runs_of_rows = st.lists(st.lists(st.tuples(st.integers(0, 2), st.none() | st.integers(0, 30)), min_size=1,
                                 max_size=6), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(runs=runs_of_rows, delay=st.sampled_from([0, 1000, 60_000]))
def test_the_engine_meets_the_watermarks_the_oracle_gives_flink(runs: list[list[tuple[int, int | None]]],
                                                                delay: int) -> None:
    def moment(minute: int | None) -> datetime | None:
        return None if minute is None else _BASE + timedelta(minutes=minute)

    # the engine: records by partition and offset, each run beginning where the one before ended
    offsets: dict[int, int] = {}
    starts: list[dict[int, int]] = []
    records = []
    for rows in runs:
        starts.append({p: offsets.get(p, 0) for p in range(3)})
        for partition, minute in rows:
            at = moment(minute)
            records.append({"p": partition, "o": offsets.get(partition, 0),
                            "t": None if at is None else epoch_ms(at.replace(tzinfo=UTC))})
            offsets[partition] = offsets.get(partition, 0) + 1
    arrivals, final = _arrivals(records, starts, 3, delay, idle_partitions=True)  # type: ignore[arg-type]

    # the oracle: each run's rows in read order, the watermark after each
    ordered = [[rows[i] for i in read_order([[p for p, _ in rows]])] for rows in runs]
    after, last = arrival_watermarks([[(p, moment(m)) for p, m in rows] for rows in ordered], delay)
    flat = [w for run in after for w in run]
    met = [MIN_WATERMARK] + [MIN_WATERMARK if w is None else epoch_ms(w.replace(tzinfo=UTC)) for w in flat[:-1]]

    assert [(r["p"], r["t"]) for r, _ in arrivals] == [
        (p, None if m is None else epoch_ms(moment(m).replace(tzinfo=UTC))) for rows in ordered for p, m in rows]
    assert [w for _, w in arrivals] == met
    assert final == (MIN_WATERMARK if last is None else epoch_ms(last.replace(tzinfo=UTC)))
