"""The Metrics API's interval syntax (ISO-8601 intervals, `now` with offsets and truncation) and buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shift_left_dagster.local.metric_intervals import IntervalError, bucket_start, parse_interval

NOW = datetime(2020, 1, 1, 2, 13, 27, tzinfo=UTC)  # the reference's example instant


@pytest.mark.parametrize(("text", "start", "end"), [
    ("2019-12-31T00:00:00Z/2020-01-01T00:00:00Z", datetime(2019, 12, 31, tzinfo=UTC), datetime(2020, 1, 1, tzinfo=UTC)),
    ("now-2m|m/now|m", datetime(2020, 1, 1, 2, 11, tzinfo=UTC), datetime(2020, 1, 1, 2, 13, tzinfo=UTC)),
    ("now-1d|d/now|h", datetime(2019, 12, 31, tzinfo=UTC), datetime(2020, 1, 1, 2, tzinfo=UTC)),
    ("2020-01-01T00:00:00Z/PT1H", datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 1, 1, 1, tzinfo=UTC)),
    ("PT10M/now", NOW - timedelta(minutes=10), NOW),
    ("P1DT1H/now", NOW - timedelta(days=1, hours=1), NOW),
])
def test_intervals_as_the_reference_resolves_them(text: str, start: datetime, end: datetime) -> None:
    assert parse_interval(text, NOW) == (start, end)


@pytest.mark.parametrize("text", ["now", "yesterday/now", "now/P", "now/now-1h", "PTxM/now"])
def test_bad_intervals_are_refused_naming_them(text: str) -> None:
    with pytest.raises(IntervalError, match="interval"):
        parse_interval(text, NOW)


def test_buckets_align_to_utc_boundaries_and_all_is_one() -> None:
    assert bucket_start(NOW, timedelta(minutes=5), NOW) == datetime(2020, 1, 1, 2, 10, tzinfo=UTC)
    assert bucket_start(NOW, timedelta(days=1), NOW) == datetime(2020, 1, 1, tzinfo=UTC)
    origin = datetime(2019, 1, 1, tzinfo=UTC)
    assert bucket_start(NOW, None, origin) == origin
