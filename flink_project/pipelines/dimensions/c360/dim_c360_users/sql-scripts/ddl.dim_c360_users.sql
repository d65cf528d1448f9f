-- dim_c360_users: current user profile with its group.
CREATE TABLE IF NOT EXISTS dim_c360_users (
  user_id STRING,
  user_name STRING,
  email STRING,
  tier STRING,
  country STRING,
  preferred_language STRING,
  group_id STRING,
  group_name STRING,
  group_type STRING,
  group_is_active BOOLEAN,
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(user_id) NOT ENFORCED
) DISTRIBUTED BY HASH(user_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
