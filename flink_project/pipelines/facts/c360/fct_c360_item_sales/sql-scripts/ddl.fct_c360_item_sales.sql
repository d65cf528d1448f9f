-- fct_c360_item_sales: running sales counters per SKU.
CREATE TABLE IF NOT EXISTS fct_c360_item_sales (
  sku STRING,
  units_sold BIGINT,
  purchase_count BIGINT,
  buyer_count BIGINT,
  first_sold_ts TIMESTAMP_LTZ(3),
  last_sold_ts TIMESTAMP_LTZ(3),
  PRIMARY KEY(sku) NOT ENFORCED
) DISTRIBUTED BY HASH(sku) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
