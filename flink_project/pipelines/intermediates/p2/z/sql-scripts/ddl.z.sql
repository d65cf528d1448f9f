-- z: account activity, login side (x) joined with transaction side (y).
-- x and y both descend from src_b: z closes a diamond over two parent trees.
CREATE TABLE IF NOT EXISTS z (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  login_count BIGINT,
  failed_login_count INT,
  txn_count BIGINT,
  net_amount DECIMAL(14, 2),
  max_amount DECIMAL(10, 2),
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
