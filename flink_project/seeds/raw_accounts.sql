-- Raw account master records (full record on every change, some re-sent unchanged).
-- Read by src_b (ROW_NUMBER dedup on account_id).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 21 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_accounts (
  account_id STRING,
  account_name STRING,
  segment STRING,
  region STRING,
  account_status STRING,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_accounts VALUES
  ('acc-01', 'Acme Corp', 'enterprise', 'emea', 'active', TIMESTAMP '2026-01-01 00:05:00'),
  ('acc-02', 'Globex', 'smb', 'amer', 'active', TIMESTAMP '2026-01-01 00:10:00'),
  ('acc-03', 'Initech', 'smb', 'amer', 'active', TIMESTAMP '2026-01-01 00:15:00'),
  ('acc-04', 'Umbrella', 'Enterprise', 'apac', 'active', TIMESTAMP '2026-01-01 00:20:00'),
  ('acc-05', 'Hooli', 'startup', 'amer', 'active', TIMESTAMP '2026-01-01 00:25:00'),
  ('acc-06', 'Stark Industries', 'enterprise', 'amer', 'active', TIMESTAMP '2026-01-01 00:30:00');

-- 2026-01-02
INSERT INTO raw_accounts VALUES
  ('acc-07', 'Wayne Enterprises', 'enterprise', 'amer', 'active', TIMESTAMP '2026-01-02 08:00:00'),
  ('acc-03', 'Initech', 'smb', 'emea', 'active', TIMESTAMP '2026-01-02 10:30:00'),
  ('acc-08', 'Tyrell', 'startup', 'apac', 'active', TIMESTAMP '2026-01-02 13:00:00'),
  (NULL, 'Ghost Co', 'smb', 'amer', 'active', TIMESTAMP '2026-01-02 14:00:00'),
  ('acc-09', 'Cyberdyne', 'startup', NULL, 'active', TIMESTAMP '2026-01-02 18:20:00');

-- 2026-01-03
INSERT INTO raw_accounts VALUES
  ('acc-05', 'Hooli', 'startup', 'amer', 'closed', TIMESTAMP '2026-01-03 09:45:00'),
  ('acc-10', 'Soylent', 'smb', 'emea', 'active', TIMESTAMP '2026-01-03 11:10:00'),
  ('acc-02', 'Globex Corporation', 'smb', 'amer', 'active', TIMESTAMP '2026-01-03 15:35:00'),
  ('acc-09', 'Cyberdyne', 'startup', 'apac', 'active', TIMESTAMP '2026-01-03 20:00:00');

-- 2026-01-04
INSERT INTO raw_accounts VALUES
  ('acc-01', 'Acme Corp', 'enterprise', 'emea', 'active', TIMESTAMP '2026-01-04 07:15:00'),
  ('acc-08', 'Tyrell Corp', 'startup', 'apac', 'active', TIMESTAMP '2026-01-04 12:05:00'),
  ('acc-04', 'Umbrella', 'enterprise', 'apac', 'active', TIMESTAMP '2026-01-04 16:50:00');

-- 2026-01-05
INSERT INTO raw_accounts VALUES
  ('acc-06', 'Stark Industries', 'enterprise', 'amer', 'active', TIMESTAMP '2026-01-05 09:00:00'),
  ('acc-10', 'Soylent ', 'smb', 'emea', 'active', TIMESTAMP '2026-01-05 13:30:00'),
  ('acc-11', 'Oceanic Airlines', 'smb', 'apac', 'active', TIMESTAMP '2026-01-05 17:45:00');
