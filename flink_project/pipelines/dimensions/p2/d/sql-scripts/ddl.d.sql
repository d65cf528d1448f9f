-- d: account dimension with derived activity attributes.
CREATE TABLE IF NOT EXISTS d (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  activity_tier STRING,
  is_login_risk BOOLEAN,
  lifetime_net_amount DECIMAL(14, 2),
  last_activity_ts TIMESTAMP_LTZ(3),
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
