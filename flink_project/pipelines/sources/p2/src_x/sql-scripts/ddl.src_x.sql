-- src_x: cleaned login events. Append-only, no primary key.
-- login_ts is written to the Kafka record timestamp, so $rowtime carries the login time.
CREATE TABLE IF NOT EXISTS src_x (
  login_id STRING,
  account_id STRING,
  device STRING,
  login_success BOOLEAN,
  login_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED BY HASH(account_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
