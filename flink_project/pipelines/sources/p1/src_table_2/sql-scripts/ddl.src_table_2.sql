-- src_table_2: customer reference data, latest profile per customer_id.
CREATE TABLE IF NOT EXISTS src_table_2 (
  customer_id STRING,
  full_name STRING,
  email STRING,
  country_code STRING,
  customer_segment STRING,
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(customer_id) NOT ENFORCED
) DISTRIBUTED BY HASH(customer_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
