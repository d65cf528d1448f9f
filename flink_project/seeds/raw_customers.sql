-- Raw customer records from the CRM connector: the full record is re-sent on every change
-- (and sometimes re-sent unchanged). Read by src_table_2 (ROW_NUMBER dedup on customer_id).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 22 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_customers (
  customer_id STRING,
  first_name STRING,
  last_name STRING,
  email STRING,
  country_code STRING,
  segment STRING,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_customers VALUES
  ('c-001', 'Ada', 'Lovelace', 'ADA@Example.com', 'gb', 'retail', TIMESTAMP '2026-01-01 00:10:00'),
  ('c-002', 'Alan', 'Turing', 'alan@example.com', 'gb', 'retail', TIMESTAMP '2026-01-01 00:20:00'),
  ('c-003', 'Grace', 'Hopper', 'grace@example.com', 'us', 'enterprise', TIMESTAMP '2026-01-01 00:30:00'),
  ('c-004', 'Linus', 'Torvalds', 'linus@example.com', 'fi', 'retail', TIMESTAMP '2026-01-01 00:40:00'),
  ('c-005', 'Margaret', 'Hamilton', 'margaret@example.com', 'us', 'enterprise', TIMESTAMP '2026-01-01 00:50:00'),
  ('c-001', 'Ada', 'Lovelace', 'ada.lovelace@example.com', 'gb', 'vip', TIMESTAMP '2026-01-01 16:00:00');

-- 2026-01-02
INSERT INTO raw_customers VALUES
  ('c-006', 'Edsger', 'Dijkstra', 'edsger@example.com', 'nl', 'retail', TIMESTAMP '2026-01-02 07:30:00'),
  ('c-007', 'Barbara', 'Liskov', 'barbara@example.com', NULL, NULL, TIMESTAMP '2026-01-02 08:15:00'),
  (NULL, 'Test', 'User', 'test@example.com', 'us', 'retail', TIMESTAMP '2026-01-02 09:00:00'),
  ('c-003', 'Grace', 'Hopper', 'grace.hopper@example.com', 'us', 'enterprise', TIMESTAMP '2026-01-02 12:40:00'),
  ('c-008', 'Donald', 'Knuth', 'don@example.com', 'us', 'retail', TIMESTAMP '2026-01-02 17:05:00');

-- 2026-01-03
INSERT INTO raw_customers VALUES
  ('c-009', 'Frances', 'Allen', 'frances@example.com', 'us', 'enterprise', TIMESTAMP '2026-01-03 06:45:00'),
  ('c-004', 'Linus', 'Torvalds', 'linus@example.com', 'fi', 'vip', TIMESTAMP '2026-01-03 10:30:00'),
  ('c-007', 'Barbara', 'Liskov', 'barbara@example.com', 'us', NULL, TIMESTAMP '2026-01-03 14:20:00'),
  ('c-002', 'Alan', 'Turing', 'alan.turing@example.com', 'gb', 'retail', TIMESTAMP '2026-01-03 19:00:00');

-- 2026-01-04
INSERT INTO raw_customers VALUES
  ('c-010', ' Tim ', 'Berners-Lee', 'tim@example.com', 'ch', 'retail', TIMESTAMP '2026-01-04 09:25:00'),
  ('c-006', 'Edsger', 'Dijkstra', 'edsger@example.com', 'nl', 'vip', TIMESTAMP '2026-01-04 13:10:00'),
  ('c-005', 'Margaret', 'Hamilton', 'margaret@example.com', 'us', 'enterprise', TIMESTAMP '2026-01-04 20:30:00');

-- 2026-01-05
INSERT INTO raw_customers VALUES
  ('c-008', 'Donald', 'Knuth', 'donald.knuth@example.com', 'us', 'retail', TIMESTAMP '2026-01-05 08:00:00'),
  ('c-001', 'Ada', 'Lovelace', 'ada.lovelace@example.com', 'gb', 'vip', TIMESTAMP '2026-01-05 11:30:00'),
  ('c-011', 'Kathleen', 'O''Neil', 'kathleen@example.com', 'ie', 'retail', TIMESTAMP '2026-01-05 15:00:00'),
  ('c-009', 'Frances', 'Allen', 'frances@example.com', 'us', 'vip', TIMESTAMP '2026-01-05 18:45:00');
