-- Raw account transactions from the payment gateway, the gateway re-delivers some
-- transactions (same txn_id, later timestamp, possibly corrected amount).
-- Read by src_y (ROW_NUMBER dedup on txn_id, last delivery wins).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 26 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_transactions (
  txn_id STRING,
  account_id STRING,
  txn_type STRING,
  currency STRING,
  amount DECIMAL(10, 2),
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_transactions VALUES
  ('t-001', 'acc-01', 'purchase', 'usd', 250.00, TIMESTAMP '2026-01-01 09:00:00'),
  ('t-002', 'acc-02', 'purchase', 'usd', 100.00, TIMESTAMP '2026-01-01 11:30:00'),
  ('t-003', 'acc-02', 'purchase', 'usd', 45.50, TIMESTAMP '2026-01-01 14:15:00'),
  ('t-003', 'acc-02', 'purchase', 'usd', 45.50, TIMESTAMP '2026-01-01 14:16:00'),
  ('t-008', 'acc-04', 'purchase', 'usd', 500.00, TIMESTAMP '2026-01-01 19:45:00');

-- 2026-01-02
INSERT INTO raw_transactions VALUES
  ('t-006', 'acc-03', 'purchase', 'eur', 60.00, TIMESTAMP '2026-01-02 08:10:00'),
  ('t-008', 'acc-04', 'purchase', 'usd', 450.00, TIMESTAMP '2026-01-02 10:05:00'),
  ('t-009', 'acc-05', 'purchase', NULL, 30.00, TIMESTAMP '2026-01-02 12:40:00'),
  ('t-011', 'acc-06', 'purchase', 'usd', 900.00, TIMESTAMP '2026-01-02 15:20:00'),
  ('t-011', 'acc-06', 'purchase', 'usd', 900.00, TIMESTAMP '2026-01-02 15:21:00'),
  ('t-020', 'acc-02', 'purchase', 'usd', NULL, TIMESTAMP '2026-01-02 18:00:00');

-- 2026-01-03
INSERT INTO raw_transactions VALUES
  ('t-004', 'acc-02', 'refund', 'usd', 20.00, TIMESTAMP '2026-01-03 09:30:00'),
  ('t-010', 'acc-05', 'purchase', 'usd', 40.00, TIMESTAMP '2026-01-03 11:15:00'),
  ('t-014', 'acc-08', 'purchase', 'usd', 33.30, TIMESTAMP '2026-01-03 13:50:00'),
  ('t-014', 'acc-08', 'purchase', 'usd', 33.30, TIMESTAMP '2026-01-03 13:55:00'),
  ('t-019', 'acc-99', 'purchase', 'usd', 99.00, TIMESTAMP '2026-01-03 17:25:00');

-- 2026-01-04
INSERT INTO raw_transactions VALUES
  ('t-007', 'acc-03', 'purchase', 'eur', 12.25, TIMESTAMP '2026-01-04 08:45:00'),
  ('t-012', 'acc-06', ' Refund ', 'usd', 100.00, TIMESTAMP '2026-01-04 10:30:00'),
  (NULL, 'acc-01', 'purchase', 'usd', 5.00, TIMESTAMP '2026-01-04 12:00:00'),
  ('t-015', 'acc-08', 'purchase', 'usd', 66.70, TIMESTAMP '2026-01-04 16:10:00'),
  ('t-016', 'acc-09', 'purchase', 'usd', 10.00, TIMESTAMP '2026-01-04 20:20:00');

-- 2026-01-05
INSERT INTO raw_transactions VALUES
  ('t-005', 'acc-02', 'purchase', 'usd', 80.00, TIMESTAMP '2026-01-05 08:05:00'),
  ('t-013', 'acc-06', 'purchase', NULL, 75.00, TIMESTAMP '2026-01-05 10:40:00'),
  ('t-017', 'acc-10', 'purchase', 'eur', 15.00, TIMESTAMP '2026-01-05 13:15:00'),
  ('t-017', 'acc-10', 'purchase', 'eur', 15.00, TIMESTAMP '2026-01-05 13:20:00'),
  ('t-018', 'acc-10', 'purchase', 'eur', 25.00, TIMESTAMP '2026-01-05 17:00:00');
