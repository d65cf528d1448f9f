-- v_p: reporting view, each account next to the totals of its segment and region.
CREATE TABLE IF NOT EXISTS v_p (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  activity_tier STRING,
  lifetime_net_amount DECIMAL(14, 2),
  segment_account_count BIGINT,
  segment_net_amount DECIMAL(16, 2),
  share_of_segment_pct DOUBLE,
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
