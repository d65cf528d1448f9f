-- src_c360_app_events: user-facing application events, heartbeats removed.
-- Append-only, event_ts is written to the record timestamp ($rowtime) for windowing.
CREATE TABLE IF NOT EXISTS src_c360_app_events (
  event_id STRING,
  user_id STRING,
  event_type STRING,
  page STRING,
  device_os STRING,
  app_version STRING,
  duration_ms INT,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED BY HASH(user_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
