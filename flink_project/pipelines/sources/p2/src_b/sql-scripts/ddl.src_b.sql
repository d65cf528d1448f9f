-- src_b: account master data, latest version per account_id.
-- Shared by the x and y branches of the p2 pipeline.
CREATE TABLE IF NOT EXISTS src_b (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  account_status STRING,
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(account_id) NOT ENFORCED
) DISTRIBUTED BY HASH(account_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
