-- src_c360_groups: user groups (latest record per group_id wins in the upsert topic).
CREATE TABLE IF NOT EXISTS src_c360_groups (
  group_id STRING,
  group_name STRING,
  group_type STRING,
  is_active BOOLEAN,
  updated_at TIMESTAMP_LTZ(3),
  PRIMARY KEY(group_id) NOT ENFORCED
) DISTRIBUTED BY HASH(group_id) INTO 1 BUCKETS WITH (
  'changelog.mode' = 'upsert',
  'key.format' = 'avro-registry',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'kafka.producer.compression.type' = 'snappy',
  'scan.startup.mode' = 'earliest-offset',
  'value.fields-include' = 'all'
);
