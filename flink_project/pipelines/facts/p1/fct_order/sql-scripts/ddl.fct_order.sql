-- fct_order: one row per order with its customer and payment position.
CREATE TABLE IF NOT EXISTS fct_order (
  order_id STRING,
  order_date DATE,
  customer_id STRING,
  customer_name STRING,
  customer_segment STRING,
  country_code STRING,
  order_status STRING,
  order_amount DECIMAL(12, 2),
  paid_amount DECIMAL(12, 2),
  outstanding_amount DECIMAL(12, 2),
  payment_count BIGINT,
  payment_state STRING,
  order_ts TIMESTAMP_LTZ(3),
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
