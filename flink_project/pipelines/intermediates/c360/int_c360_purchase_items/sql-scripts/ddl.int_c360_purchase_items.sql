-- int_c360_purchase_items: one row per purchased item (purchases exploded on items).
CREATE TABLE IF NOT EXISTS int_c360_purchase_items (
  purchase_id STRING,
  user_id STRING,
  sku STRING,
  channel STRING,
  purchase_ts TIMESTAMP_LTZ(3)
) DISTRIBUTED BY HASH(sku) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
