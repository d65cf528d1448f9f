-- int_table_1: orders enriched with the customer profile (orders without a known
-- customer are kept, with placeholder customer attributes).
CREATE TABLE IF NOT EXISTS int_table_1 (
  order_id STRING,
  customer_id STRING,
  customer_name STRING,
  customer_segment STRING,
  country_code STRING,
  product_id STRING,
  quantity INT,
  order_amount DECIMAL(12, 2),
  order_status STRING,
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
