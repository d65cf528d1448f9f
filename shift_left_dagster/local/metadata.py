"""The Kafka record metadata a column may read (`METADATA [FROM 'key'] [VIRTUAL]`), as Confluent
Cloud documents it, and what each key holds for a record of the local service.

The local service stores records, not serialized Kafka messages: `raw-key` and
`raw-value` are the key and value columns as UTF-8 JSON (the `json` format's
bytes, without a Schema Registry header); `headers` is empty unless the
column is written (it is then stored with the record); `leader-epoch` is 0 and
`timestamp-type` is 'CreateTime', as for records produced to a single broker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetadataKey:
    type: str  # Flink type of the value
    writable: bool = False  # R/W keys may be declared without VIRTUAL


METADATA_KEYS: dict[str, MetadataKey] = {
    "headers": MetadataKey("MAP<STRING, BYTES>", writable=True),
    "leader-epoch": MetadataKey("INT"),
    "offset": MetadataKey("BIGINT"),
    "partition": MetadataKey("INT"),
    "raw-key": MetadataKey("BYTES"),
    "raw-value": MetadataKey("BYTES"),
    "timestamp": MetadataKey("TIMESTAMP_LTZ(3)", writable=True),
    "timestamp-type": MetadataKey("STRING"),
    "topic": MetadataKey("STRING"),
}

WRITABLE = tuple(key for key, spec in METADATA_KEYS.items() if spec.writable)
