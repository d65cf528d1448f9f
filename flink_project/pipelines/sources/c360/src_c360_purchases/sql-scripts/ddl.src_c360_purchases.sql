-- src_c360_purchases: valid purchases (append-only). items holds the purchased SKUs.
-- purchase_ts is written to the record timestamp, the time the temporal join uses.
CREATE TABLE IF NOT EXISTS src_c360_purchases (
  purchase_id STRING,
  user_id STRING,
  channel STRING,
  items ARRAY<STRING>,
  amount DECIMAL(10, 2),
  purchase_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED BY HASH(user_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
