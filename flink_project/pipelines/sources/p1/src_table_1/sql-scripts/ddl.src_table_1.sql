-- src_table_1: latest version of each order, deduplicated from the raw_orders topic.
-- One row per order_id (upsert): a newer record of an order replaces the older one.
CREATE TABLE IF NOT EXISTS src_table_1 (
  order_id STRING,
  customer_id STRING,
  product_id STRING,
  quantity INT,
  unit_price DECIMAL(10, 2),
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
