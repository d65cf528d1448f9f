"""Where a statement starts and stops reading a source: scan options from hints, table options and
statement properties, resolved to offsets per partition.

Offsets here are always "next offset to read": a start offset is the first
record read; a bound is the first record *not* read; `latest_offsets` of a
stopped statement are the next offsets it would read, so they feed
'scan.startup.specific-offsets' of a new statement without an off-by-one.
(The reference flags "last processed vs next to read" as unverified; this
service documents and uses "next to read".)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel

STARTUP_MODES = ("earliest-offset", "latest-offset", "timestamp", "specific-offsets")
BOUNDED_MODES = ("unbounded", "latest-offset", "timestamp")

# table option -> statement property that overrides it when the table keeps the default
_PROPERTY_OVERRIDES = {
    "scan.startup.mode": "sql.tables.scan.startup.mode",
    "scan.startup.timestamp-millis": "sql.tables.scan.startup.timestamp-millis",
    "scan.bounded.mode": "sql.tables.scan.bounded.mode",
    "scan.bounded.timestamp-millis": "sql.tables.scan.bounded.timestamp-millis",
}
_DEFAULTS = {"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "unbounded"}

FirstOffsetAt = Callable[[int], dict[int, int]]  # epoch millis -> first offset with $rowtime >= it, per partition


class ScanError(ValueError):
    """Scan options that can not be honoured, worded after Flink's validation messages."""


class ScanOptions(BaseModel):
    startup_mode: str = "earliest-offset"
    startup_timestamp: int | None = None
    specific_offsets: dict[int, int] = {}
    bounded_mode: str = "unbounded"
    bounded_timestamp: int | None = None


def scan_options(table_options: Mapping[str, str], hints: Mapping[str, str],
                 properties: Mapping[str, str]) -> ScanOptions:
    """Hints win over table options; statement properties replace options the table leaves at default."""
    def option(key: str) -> str | None:
        if key in hints:
            return hints[key]
        value = table_options.get(key)
        if (value is None or value == _DEFAULTS.get(key)) and _PROPERTY_OVERRIDES.get(key) in properties:
            return properties[_PROPERTY_OVERRIDES[key]]
        return value

    startup = option("scan.startup.mode") or "earliest-offset"
    bounded = option("scan.bounded.mode") or "unbounded"
    if startup not in STARTUP_MODES:
        raise ScanError(f"Invalid value for option 'scan.startup.mode': '{startup}'. "
                        f"Supported values are [{', '.join(STARTUP_MODES)}].")
    if bounded not in BOUNDED_MODES:
        raise ScanError(f"Invalid value for option 'scan.bounded.mode': '{bounded}'. "
                        f"Supported values are [{', '.join(BOUNDED_MODES)}].")
    options = ScanOptions(startup_mode=startup, bounded_mode=bounded)
    if startup == "timestamp":
        options.startup_timestamp = _millis(option("scan.startup.timestamp-millis"), "scan.startup.timestamp-millis")
    if startup == "specific-offsets":
        text = option("scan.startup.specific-offsets")
        if not text:
            raise ScanError("'scan.startup.specific-offsets' is required when "
                            "'scan.startup.mode' is 'specific-offsets'.")
        options.specific_offsets = parse_offsets(text)
    if bounded == "timestamp":
        options.bounded_timestamp = _millis(option("scan.bounded.timestamp-millis"), "scan.bounded.timestamp-millis")
    return options


def _millis(value: str | None, key: str) -> int:
    if value is None or not value.strip().lstrip("-").isdigit():
        raise ScanError(f"'{key}' must be set to epoch milliseconds, got {value!r}.")
    return int(value)


def start_offsets(options: ScanOptions, partitions: int, ends: Mapping[int, int],
                  first_offset_at: FirstOffsetAt) -> dict[int, int]:
    if options.startup_mode == "latest-offset":
        return {p: ends.get(p, 0) for p in range(partitions)}
    if options.startup_mode == "timestamp":
        found = first_offset_at(options.startup_timestamp or 0)
        return {p: found.get(p, ends.get(p, 0)) for p in range(partitions)}
    if options.startup_mode == "specific-offsets":
        return {p: options.specific_offsets.get(p, 0) for p in range(partitions)}
    return {p: 0 for p in range(partitions)}


def bound_offsets(options: ScanOptions, partitions: int, ends: Mapping[int, int],
                  first_offset_at: FirstOffsetAt) -> dict[int, int] | None:
    """First offset not to read per partition, fixed when the statement starts; None: unbounded.

    A timestamp bound stops at the first record at or after it (Kafka's
    offsetsForTimes), or at the end offset when there is none yet.
    """
    if options.bounded_mode == "latest-offset":
        return {p: ends.get(p, 0) for p in range(partitions)}
    if options.bounded_mode == "timestamp":
        found = first_offset_at(options.bounded_timestamp or 0)
        return {p: found.get(p, ends.get(p, 0)) for p in range(partitions)}
    return None


def format_offsets(offsets: Mapping[int, int]) -> str:
    """`partition:0,offset:42;partition:1,offset:300` (Confluent's latest_offsets format)."""
    return ";".join(f"partition:{p},offset:{o}" for p, o in sorted(offsets.items()))


def parse_offsets(text: str) -> dict[int, int]:
    offsets: dict[int, int] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        fields = dict(f.split(":", 1) for f in part.split(",") if ":" in f)
        try:
            offsets[int(fields["partition"])] = int(fields["offset"])
        except (KeyError, ValueError):
            raise ScanError(f"Invalid properties for 'scan.startup.specific-offsets' = '{text}': expected "
                            f"'partition:0,offset:42;partition:1,offset:300'.") from None
    return offsets
