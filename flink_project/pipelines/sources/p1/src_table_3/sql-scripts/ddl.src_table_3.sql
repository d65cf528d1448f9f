-- src_table_3: settled payment events (captures and refunds), one record per raw event.
-- Stateless pass-through of raw_payments: append-only, no primary key.
CREATE TABLE IF NOT EXISTS src_table_3 (
  payment_id STRING,
  order_id STRING,
  payment_method STRING,
  payment_status STRING,
  card_brand STRING,
  signed_amount DECIMAL(10, 2),
  payment_ts TIMESTAMP_LTZ(3)
) DISTRIBUTED BY HASH(order_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
