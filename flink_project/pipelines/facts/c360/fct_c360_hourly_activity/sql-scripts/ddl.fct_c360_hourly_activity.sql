-- fct_c360_hourly_activity: application activity per hour and event type.
CREATE TABLE IF NOT EXISTS fct_c360_hourly_activity (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  event_type STRING,
  event_count BIGINT,
  unique_users BIGINT,
  total_duration_ms INT,
  max_duration_ms INT,
  PRIMARY KEY(window_start, window_end, event_type) NOT ENFORCED
) DISTRIBUTED BY HASH(window_start, window_end, event_type) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
