-- Raw login events from the identity provider, append-only.
-- Read by src_x (stateless filter: events without account or outcome are dropped).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 34 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_logins (
  login_id STRING,
  account_id STRING,
  device STRING,
  login_success BOOLEAN,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_logins VALUES
  ('lg-001', 'acc-01', 'web', TRUE, TIMESTAMP '2026-01-01 08:01:00'),
  ('lg-002', 'acc-02', 'ios', TRUE, TIMESTAMP '2026-01-01 08:30:00'),
  ('lg-003', 'acc-03', 'web', FALSE, TIMESTAMP '2026-01-01 09:12:00'),
  ('lg-004', 'acc-04', 'android', TRUE, TIMESTAMP '2026-01-01 10:45:00'),
  ('lg-005', 'acc-05', 'web', TRUE, TIMESTAMP '2026-01-01 13:20:00'),
  ('lg-006', 'acc-01', 'ios', FALSE, TIMESTAMP '2026-01-01 17:05:00'),
  ('lg-007', 'acc-99', 'web', TRUE, TIMESTAMP '2026-01-01 21:40:00');

-- 2026-01-02
INSERT INTO raw_logins VALUES
  ('lg-008', 'acc-01', 'web', TRUE, TIMESTAMP '2026-01-02 07:55:00'),
  ('lg-009', 'acc-06', 'web', TRUE, TIMESTAMP '2026-01-02 09:10:00'),
  ('lg-010', 'acc-07', 'android', TRUE, TIMESTAMP '2026-01-02 11:25:00'),
  ('lg-011', NULL, 'web', TRUE, TIMESTAMP '2026-01-02 12:00:00'),
  ('lg-012', 'acc-04', ' Web ', TRUE, TIMESTAMP '2026-01-02 14:35:00'),
  ('lg-013', 'acc-08', 'ios', TRUE, TIMESTAMP '2026-01-02 16:50:00'),
  ('lg-014', 'acc-09', 'android', FALSE, TIMESTAMP '2026-01-02 19:15:00');

-- 2026-01-03
INSERT INTO raw_logins VALUES
  ('lg-015', 'acc-01', 'android', TRUE, TIMESTAMP '2026-01-03 08:20:00'),
  ('lg-016', 'acc-02', 'web', NULL, TIMESTAMP '2026-01-03 09:05:00'),
  ('lg-017', 'acc-03', 'web', TRUE, TIMESTAMP '2026-01-03 10:40:00'),
  ('lg-018', 'acc-06', 'ios', TRUE, TIMESTAMP '2026-01-03 12:15:00'),
  ('lg-019', 'acc-05', 'web', TRUE, TIMESTAMP '2026-01-03 15:30:00'),
  ('lg-020', 'acc-09', 'android', FALSE, TIMESTAMP '2026-01-03 18:55:00'),
  ('lg-021', 'acc-99', 'ios', FALSE, TIMESTAMP '2026-01-03 22:10:00');

-- 2026-01-04
INSERT INTO raw_logins VALUES
  ('lg-022', 'acc-01', 'web', TRUE, TIMESTAMP '2026-01-04 07:40:00'),
  ('lg-023', 'acc-02', 'web', TRUE, TIMESTAMP '2026-01-04 09:25:00'),
  ('lg-024', 'acc-04', NULL, TRUE, TIMESTAMP '2026-01-04 11:00:00'),
  ('lg-025', 'acc-07', 'android', TRUE, TIMESTAMP '2026-01-04 13:45:00'),
  ('lg-026', 'acc-08', 'web', TRUE, TIMESTAMP '2026-01-04 16:20:00'),
  ('lg-027', 'acc-10', 'ios', TRUE, TIMESTAMP '2026-01-04 20:05:00');

-- 2026-01-05
INSERT INTO raw_logins VALUES
  ('lg-028', 'acc-01', 'ios', TRUE, TIMESTAMP '2026-01-05 08:15:00'),
  ('lg-029', 'acc-06', 'web', TRUE, TIMESTAMP '2026-01-05 09:50:00'),
  ('lg-030', 'acc-04', 'android', TRUE, TIMESTAMP '2026-01-05 11:35:00'),
  ('lg-031', 'acc-08', 'web', NULL, TIMESTAMP '2026-01-05 14:10:00'),
  ('lg-032', 'acc-02', 'ios', TRUE, TIMESTAMP '2026-01-05 15:25:00'),
  ('lg-033', 'acc-01', 'web', TRUE, TIMESTAMP '2026-01-05 18:00:00'),
  ('lg-034', 'acc-08', 'android', TRUE, TIMESTAMP '2026-01-05 21:30:00');
