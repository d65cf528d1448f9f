-- src_y: account transactions, deduplicated on txn_id (the payment gateway re-sends).
CREATE TABLE IF NOT EXISTS src_y (
  txn_id STRING,
  account_id STRING,
  txn_type STRING,
  currency STRING,
  amount DECIMAL(10, 2),
  txn_ts TIMESTAMP_LTZ(3),
  PRIMARY KEY(txn_id) NOT ENFORCED
) DISTRIBUTED BY HASH(txn_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
