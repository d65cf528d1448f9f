"""statement_lag and statement_stalled over a series of observations, and what the cursor keeps of it."""

from shift_left_dagster.checks.lag import Observation, remember, statement_lag, statement_stalled
from shift_left_dagster.project.config import HealthThresholds

LIMITS = HealthThresholds(max_pending_records=100, growing_observations=3, stalled_minutes=2)


def series(*counts: tuple[float, int, int, int]) -> list[Observation]:
    """(minute, records in, records out, pending) each."""
    return [Observation(at=m * 60, records_in=i, records_out=o, pending_records=p) for m, i, o, p in counts]


def test_lag_is_red_above_the_limit_or_when_pending_grew_at_each_of_the_last_m_observations() -> None:
    assert statement_lag(series((0, 0, 0, 101)), LIMITS)[0] is False
    passed, message, metadata = statement_lag(series((0, 0, 0, 5), (1, 0, 0, 6), (2, 0, 0, 9)), LIMITS)
    assert not passed and "5 -> 6 -> 9" in message
    assert metadata["pending_records"] == 9 and [v for _, v in metadata["pending_series"]] == [5, 6, 9]
    assert statement_lag(series((0, 0, 0, 5), (1, 0, 0, 6), (2, 0, 0, 6)), LIMITS)[0] is True
    assert statement_lag(series((1, 0, 0, 6), (2, 0, 0, 9)), LIMITS)[0] is True  # fewer than M: not judged growing


def test_stalled_is_red_when_nothing_came_out_for_k_minutes_while_records_came_in() -> None:
    stuck = series((0, 10, 4, 0), (1, 10, 4, 3), (2, 12, 4, 5))
    passed, message, metadata = statement_stalled(stuck, LIMITS)
    assert not passed and "no record out for 2.0 minutes while 7 records came in" in message
    assert metadata["records_arrived"] == 7 and metadata["records_written"] == 0
    assert statement_stalled(series((0, 10, 4, 0), (2, 10, 4, 0)), LIMITS)[0] is True  # idle: nothing came in
    assert statement_stalled(series((0, 10, 4, 0), (2, 17, 5, 0)), LIMITS)[0] is True  # some came out
    assert statement_stalled(series((0, 10, 4, 0), (1, 12, 4, 0)), LIMITS)[0] is True  # observed < K minutes


def test_the_cursor_keeps_the_last_m_observations_and_the_stall_baseline_only() -> None:
    kept: list[Observation] = []
    for minute in range(10):
        kept = remember(kept, Observation(at=minute * 60, records_in=0, records_out=0, pending_records=0), LIMITS)
    assert [o.at / 60 for o in kept] == [7, 8, 9]
