-- fct_c360_purchase: purchases with the user profile as it was at purchase time.
CREATE TABLE IF NOT EXISTS fct_c360_purchase (
  purchase_id STRING,
  user_id STRING,
  user_name STRING,
  tier_at_purchase STRING,
  group_id STRING,
  country STRING,
  channel STRING,
  amount DECIMAL(10, 2),
  purchase_day STRING,
  purchase_ts TIMESTAMP_LTZ(3),
  PRIMARY KEY(purchase_id) NOT ENFORCED
) DISTRIBUTED BY HASH(purchase_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
