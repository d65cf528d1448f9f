"""The table options (`WITH (...)`) Confluent Cloud documents, checked when a table is created or
altered: an unknown key or a value outside its choices fails the DDL. Source options ('scan.*')
are the exception: as in Flink, the statement that reads the table checks them (jobs.py), so a
table whose scan options only a reader overrides (shift_left's unit-test harness appends
'scan.bounded.mode' = 'lastest-offset') can be created and written."""

from __future__ import annotations

from collections.abc import Mapping

from shift_left_dagster.local.catalog import TableError

_FORMATS = ("avro-registry", "json-registry", "proto-registry", "raw")

# key -> its allowed values (None: any value of the right form)
OPTIONS: dict[str, tuple[str, ...] | None] = {
    "changelog.mode": ("append", "upsert", "retract"),
    "connector": ("confluent",),
    "error-handling.mode": ("fail", "ignore", "log"),
    "error-handling.log.target": None,
    "kafka.cleanup-policy": ("delete", "compact", "delete-compact"),
    "kafka.compaction.time": None,
    "kafka.consumer.isolation-level": ("read-committed", "read-uncommitted"),
    "kafka.max-message-size": None,
    "kafka.producer.compression.type": ("none", "gzip", "snappy", "lz4", "zstd"),
    "kafka.retention.size": None,
    "kafka.retention.time": None,
    "key.fields-prefix": None,
    "key.format": _FORMATS,
    "scan.bounded.mode": None,  # scan.*: checked by the statement that reads the table (offsets.py)
    "scan.bounded.specific-offsets": None,
    "scan.bounded.timestamp-millis": None,
    "scan.startup.mode": None,
    "scan.startup.specific-offsets": None,
    "scan.startup.timestamp-millis": None,
    "value.fields-include": ("all", "except-key"),
    "value.format": _FORMATS,
}
# Format options: key.<format>.* and value.<format>.* (schema context, subject names, ids ...).
PREFIXES = tuple(f"{side}.{fmt}." for side in ("key", "value") for fmt in _FORMATS)


def check_options(options: Mapping[str, str]) -> None:
    """Raise TableError, in Flink's words, for an unknown option or a value it does not accept."""
    if "kafka.partitions" in options:
        return  # catalog.py says what replaces it
    unknown = sorted(k for k in options if k not in OPTIONS and not k.startswith(PREFIXES))
    if unknown:
        supported = "\n".join(sorted(OPTIONS))
        raise TableError(f"Unsupported options found for 'confluent'.\n\nUnsupported options:\n\n"
                         f"{chr(10).join(unknown)}\n\nSupported options:\n\n{supported}")
    for key, value in options.items():
        choices = OPTIONS.get(key)
        if choices is not None and value not in choices:
            raise TableError(f"Invalid value for option '{key}': '{value}'. "
                             f"Supported values are [{', '.join(choices)}].")
    for key in ("kafka.retention.time", "kafka.compaction.time"):
        if key in options and not _is_duration(options[key]):
            raise TableError(f"Could not parse value '{options[key]}' for key '{key}'.")


def _is_duration(text: str) -> bool:
    """Flink durations: a number with an optional unit ('0', '7 d', '1 h', '30 min', '100 ms')."""
    number = text.strip().rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    return number.isdigit()
