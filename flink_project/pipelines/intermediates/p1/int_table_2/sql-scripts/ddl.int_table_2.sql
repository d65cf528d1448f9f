-- int_table_2: payment totals per order.
CREATE TABLE IF NOT EXISTS int_table_2 (
  order_id STRING,
  paid_amount DECIMAL(12, 2),
  payment_count BIGINT,
  refund_count INT,
  last_payment_ts TIMESTAMP_LTZ(3),
  PRIMARY KEY(order_id) NOT ENFORCED
) DISTRIBUTED BY HASH(order_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
