"""The Metrics API's time syntax: ISO-8601 intervals (`<start>/<end>`, `<start>/<duration>`,
`<duration>/<end>`) whose ends may be `now` with an offset and a truncation (`now-2m|m`), and the
granularities that cut them into buckets aligned to UTC boundaries (`ALL`: one bucket)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

GRANULARITIES: dict[str, timedelta | None] = {
    "PT1M": timedelta(minutes=1), "PT5M": timedelta(minutes=5), "PT15M": timedelta(minutes=15),
    "PT30M": timedelta(minutes=30), "PT1H": timedelta(hours=1), "PT4H": timedelta(hours=4),
    "PT6H": timedelta(hours=6), "PT12H": timedelta(hours=12), "P1D": timedelta(days=1), "ALL": None,
}
_NOW = re.compile(r"^now(?:(?P<sign>[+-])(?P<amount>\d+)(?P<unit>[mhd]))?(?:\|(?P<truncate>[mhd]))?$")
_DURATION = re.compile(r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?$")
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}


class IntervalError(ValueError):
    """An interval the Metrics API refuses (400), naming it."""


def parse_interval(text: str, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of one interval."""
    start_text, _, end_text = text.partition("/")
    if not end_text:
        raise IntervalError(f"interval '{text}' is not <start>/<end>, <start>/<duration> or <duration>/<end>")
    if start_text.startswith("P"):
        end = _instant(end_text, now, text)
        return end - _duration(start_text, text), end
    start = _instant(start_text, now, text)
    end = start + _duration(end_text, text) if end_text.startswith("P") else _instant(end_text, now, text)
    if end <= start:
        raise IntervalError(f"interval '{text}' ends before it starts")
    return start, end


def bucket_start(at: datetime, step: timedelta | None, origin: datetime) -> datetime:
    """The bucket of an instant: aligned to UTC boundaries, or the interval's start for ALL."""
    if step is None:
        return origin
    seconds = int(step.total_seconds())
    return datetime.fromtimestamp(int(at.timestamp()) // seconds * seconds, UTC)


def _instant(text: str, now: datetime, interval: str) -> datetime:
    found = _NOW.match(text)
    if found:
        moment = now
        if found["sign"]:
            moment += int(found["amount"]) * _UNITS[found["unit"]] * (1 if found["sign"] == "+" else -1)
        if found["truncate"]:
            moment = bucket_start(moment, _UNITS[found["truncate"]], moment)
        return moment
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise IntervalError(f"interval '{interval}': '{text}' is not an ISO-8601 instant or now") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _duration(text: str, interval: str) -> timedelta:
    found = _DURATION.match(text)
    if not found or text in ("P", "PT"):
        raise IntervalError(f"interval '{interval}': '{text}' is not an ISO-8601 duration")
    return timedelta(days=int(found["d"] or 0), hours=int(found["h"] or 0), minutes=int(found["m"] or 0),
                     seconds=int(found["s"] or 0))
