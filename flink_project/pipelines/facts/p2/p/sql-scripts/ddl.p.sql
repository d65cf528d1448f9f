-- p: account activity rolled up per segment and region.
CREATE TABLE IF NOT EXISTS p (
  segment STRING,
  region STRING,
  account_count BIGINT,
  total_logins BIGINT,
  total_failed_logins INT,
  total_txn_count BIGINT,
  total_net_amount DECIMAL(16, 2),
  avg_net_amount_per_account DECIMAL(16, 2),
  PRIMARY KEY(segment, region) NOT ENFORCED
) DISTRIBUTED BY HASH(segment, region) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
