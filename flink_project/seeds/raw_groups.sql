-- Raw user group records (full record on every change). The internal_test group type
-- is QA data. Read by src_c360_groups (stateless filter into an upsert table).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 20 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_groups (
  group_id STRING,
  group_name STRING,
  group_type STRING,
  is_active BOOLEAN,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_groups VALUES
  ('g-01', 'Early Adopters', 'community', TRUE, TIMESTAMP '2026-01-01 00:01:00'),
  ('g-02', 'Premium Members', 'loyalty', TRUE, TIMESTAMP '2026-01-01 00:02:00'),
  ('g-03', 'QA Sandbox', 'internal_test', TRUE, TIMESTAMP '2026-01-01 00:03:00'),
  ('g-04', 'Partners', 'b2b', TRUE, TIMESTAMP '2026-01-01 00:04:00');

-- 2026-01-02
INSERT INTO raw_groups VALUES
  ('g-05', 'Students', 'Community', TRUE, TIMESTAMP '2026-01-02 06:00:00'),
  ('g-02', 'Premium Members', 'loyalty', NULL, TIMESTAMP '2026-01-02 09:30:00'),
  (NULL, 'Orphan Group', 'community', TRUE, TIMESTAMP '2026-01-02 12:00:00'),
  ('g-03', 'QA Sandbox v2', 'internal_test', FALSE, TIMESTAMP '2026-01-02 15:00:00');

-- 2026-01-03
INSERT INTO raw_groups VALUES
  ('g-01', 'Early Adopters Club', 'community', TRUE, TIMESTAMP '2026-01-03 08:00:00'),
  ('g-06', 'Beta Testers', 'community', TRUE, TIMESTAMP '2026-01-03 10:00:00'),
  ('g-04', 'Partners', 'b2b', TRUE, TIMESTAMP '2026-01-03 14:00:00'),
  ('g-05', ' Students ', 'community', TRUE, TIMESTAMP '2026-01-03 17:00:00');

-- 2026-01-04
INSERT INTO raw_groups VALUES
  ('g-02', 'Premium Members', 'loyalty', TRUE, TIMESTAMP '2026-01-04 07:00:00'),
  ('g-05', 'Students', 'community', TRUE, TIMESTAMP '2026-01-04 11:00:00'),
  ('g-06', 'Beta Testers', 'community', FALSE, TIMESTAMP '2026-01-04 13:00:00'),
  ('g-01', 'Early Adopters Club', 'community', TRUE, TIMESTAMP '2026-01-04 18:00:00');

-- 2026-01-05
INSERT INTO raw_groups VALUES
  ('g-04', 'Partners', 'b2b', FALSE, TIMESTAMP '2026-01-05 09:00:00'),
  ('g-06', 'Beta Testers', 'community', TRUE, TIMESTAMP '2026-01-05 12:00:00'),
  ('g-07', 'Retirees', 'community', TRUE, TIMESTAMP '2026-01-05 15:00:00'),
  ('g-02', 'Premium Members', 'loyalty', TRUE, TIMESTAMP '2026-01-05 20:00:00');
