-- x: login activity per account, with the account attributes from src_b.
CREATE TABLE IF NOT EXISTS x (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  login_count BIGINT,
  failed_login_count INT,
  device_count BIGINT,
  last_login_ts TIMESTAMP_LTZ(3),
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
