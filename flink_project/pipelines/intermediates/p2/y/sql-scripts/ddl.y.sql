-- y: transaction totals per account (refunds count negative).
CREATE TABLE IF NOT EXISTS y (
  account_id STRING,
  txn_count BIGINT,
  refund_count INT,
  net_amount DECIMAL(14, 2),
  max_amount DECIMAL(10, 2),
  last_txn_ts TIMESTAMP_LTZ(3),
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
