-- src_c360_users: user profiles as a versioned table (primary key + event-time watermark),
-- used as the build side of the temporal join in fct_c360_purchase.
-- Every profile change is a new version of the user keyed by user_id.
CREATE TABLE IF NOT EXISTS src_c360_users (
  user_id STRING,
  user_name STRING,
  email STRING,
  group_id STRING,
  tier STRING,
  country STRING,
  preferences MAP<STRING, STRING>,
  preferred_language STRING,
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(user_id) NOT ENFORCED,
  WATERMARK FOR updated_at AS updated_at - INTERVAL '5' SECOND
) DISTRIBUTED BY HASH(user_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
