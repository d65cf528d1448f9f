-- Raw user profile records, each change of a profile is a new record (a new version).
-- u-001 moves BRONZE -> SILVER -> GOLD, so the temporal join in fct_c360_purchase
-- must pick the version valid at each purchase time. Read by src_c360_users (stateless).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 21 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_users (
  user_id STRING,
  user_name STRING,
  email STRING,
  group_id STRING,
  tier STRING,
  country STRING,
  preferences MAP<STRING, STRING>,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_users VALUES
  ('u-001', 'Maya Chen', 'maya@example.com', 'g-01', 'bronze', 'us', MAP['language', 'en', 'theme', 'dark'], TIMESTAMP '2026-01-01 08:00:00'),
  ('u-002', 'Liam Okafor', 'liam@example.com', 'g-02', 'silver', 'gb', MAP['language', 'en'], TIMESTAMP '2026-01-01 09:30:00'),
  ('u-003', 'Sofia Rossi', 'sofia@example.com', 'g-01', 'bronze', 'it', MAP['language', 'it', 'newsletter', 'yes'], TIMESTAMP '2026-01-01 10:00:00');

-- 2026-01-02
INSERT INTO raw_users VALUES
  ('u-004', 'Noah Schmidt', 'noah@example.com', 'g-03', 'bronze', 'de', MAP['language', 'de'], TIMESTAMP '2026-01-02 08:45:00'),
  ('u-005', 'Aiko Tanaka', 'aiko@example.com', 'g-02', 'gold', 'jp', MAP['language', 'ja'], TIMESTAMP '2026-01-02 10:05:00'),
  (NULL, 'Load Test', 'loadtest@example.com', 'g-03', 'bronze', 'us', MAP['language', 'en'], TIMESTAMP '2026-01-02 13:00:00'),
  ('u-006', 'Sinead O''Connor', 'sinead@example.com', 'g-99', 'silver', 'ie', NULL, TIMESTAMP '2026-01-02 15:00:00');

-- 2026-01-03
INSERT INTO raw_users VALUES
  ('u-007', 'Carlos Diaz', 'carlos@example.com', NULL, 'bronze', 'es', MAP['language', 'es'], TIMESTAMP '2026-01-03 07:30:00'),
  ('u-001', 'Maya Chen', 'maya.chen@example.com', 'g-01', 'silver', 'us', MAP['language', 'en', 'theme', 'dark'], TIMESTAMP '2026-01-03 09:00:00'),
  ('u-008', 'Emma Dubois', 'emma@example.com', 'g-04', 'silver', 'fr', MAP['language', 'fr'], TIMESTAMP '2026-01-03 10:10:00'),
  ('u-008', 'Emma Dubois', 'emma@example.com', 'g-04', 'silver', 'fr', MAP['language', 'fr'], TIMESTAMP '2026-01-03 10:11:00'),
  ('u-009', 'Olu Adeyemi', 'olu@example.com', 'g-05', 'bronze', 'ng', MAP['theme', 'light'], TIMESTAMP '2026-01-03 18:00:00');

-- 2026-01-04
INSERT INTO raw_users VALUES
  ('u-010', 'Priya Nair', 'priya@example.com', 'g-01', NULL, 'in', MAP['language', 'en'], TIMESTAMP '2026-01-04 08:00:00'),
  ('u-005', 'Aiko Tanaka', 'aiko@example.com', 'g-04', 'gold', 'jp', MAP['language', 'ja'], TIMESTAMP '2026-01-04 09:10:00'),
  ('u-002', 'Liam Okafor', 'liam@example.com', 'g-02', 'gold', 'gb', MAP['language', 'en'], TIMESTAMP '2026-01-04 12:00:00'),
  ('u-011', 'Jonas Berg', 'jonas@example.com', 'g-02', 'silver', 'se', MAP['language', 'sv'], TIMESTAMP '2026-01-04 14:00:00'),
  ('u-003', 'Sofia Rossi', 'sofia@example.com', 'g-01', 'silver', 'it', MAP['language', 'it', 'newsletter', 'no'], TIMESTAMP '2026-01-04 16:30:00');

-- 2026-01-05
INSERT INTO raw_users VALUES
  ('u-001', 'Maya Chen', 'maya.chen@example.com', 'g-01', 'gold', 'us', MAP['language', 'en', 'theme', 'light'], TIMESTAMP '2026-01-05 07:00:00'),
  ('u-012', 'Zara Ahmed', 'zara@example.com', 'g-05', 'bronze', 'ae', MAP['language', 'ar'], TIMESTAMP '2026-01-05 10:00:00'),
  ('u-009', 'Olu Adeyemi', 'olu@example.com', 'g-05', 'silver', 'ng', MAP['theme', 'light'], TIMESTAMP '2026-01-05 12:00:00'),
  ('u-012', 'Zara Ahmed', 'zara.ahmed@example.com', 'g-05', 'bronze', 'ae', MAP['language', 'ar'], TIMESTAMP '2026-01-05 23:30:00');
