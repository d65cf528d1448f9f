-- Raw payment gateway events (authorisations, captures, refunds, failures), append-only.
-- gateway_response is the gateway's JSON reply. Read by src_table_3 (stateless filter).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 25 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_payments (
  payment_id STRING,
  order_id STRING,
  payment_method STRING,
  payment_status STRING,
  amount DECIMAL(10, 2),
  gateway_response STRING,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_payments VALUES
  ('pay-001', 'ord-001', 'card', 'authorized', 39.98, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-01 10:00:00'),
  ('pay-002', 'ord-001', 'card', 'captured', 39.98, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-01 12:29:00'),
  ('pay-004', 'ord-004', 'card', 'failed', 75.50, '{"card_brand":"mastercard","code":"05"}', TIMESTAMP '2026-01-01 16:00:00'),
  ('pay-003', 'ord-002', 'PayPal', 'captured', 149.00, '{"code":"00"}', TIMESTAMP '2026-01-01 18:00:00');

-- 2026-01-02
INSERT INTO raw_payments VALUES
  ('pay-005', 'ord-004', 'card', 'captured', 75.50, '{"card_brand":"mastercard","code":"00"}', TIMESTAMP '2026-01-02 09:00:00'),
  ('pay-007', 'ord-006', 'card', 'captured', 149.00, '{"card_brand":"amex","code":"00"}', TIMESTAMP '2026-01-02 10:20:00'),
  ('pay-008', 'ord-007', 'bank_transfer', 'captured', 35.00, NULL, TIMESTAMP '2026-01-02 17:00:00'),
  ('pay-006', 'ord-005', 'card', 'captured', 29.70, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-02 19:04:00'),
  ('pay-009', NULL, 'card', 'captured', 10.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-02 20:00:00');

-- 2026-01-03
INSERT INTO raw_payments VALUES
  ('pay-012', 'ord-002', 'paypal', 'captured', NULL, '{"code":"00"}', TIMESTAMP '2026-01-03 09:15:00'),
  ('pay-010', 'ord-006', 'card', 'refunded', 149.00, '{"card_brand":"amex","code":"00"}', TIMESTAMP '2026-01-03 12:05:00'),
  ('pay-011', 'ord-008', 'card', 'captured', 151.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-03 17:19:00'),
  ('pay-013', 'ord-003', 'card', 'authorized', 79.96, '{"card_brand":"mastercard","code":"00"}', TIMESTAMP '2026-01-03 21:00:00');

-- 2026-01-04
INSERT INTO raw_payments VALUES
  ('pay-014', 'ord-009', 'card', 'captured', 199.90, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-04 09:29:00'),
  ('pay-015', 'ord-003', 'card', 'captured', 79.96, '{"card_brand":"mastercard","code":"00"}', TIMESTAMP '2026-01-04 12:58:00'),
  ('pay-016', 'ord-010', 'wallet', ' CAPTURED ', 59.40, '{"card_brand":"visa","wallet":"apple_pay","code":"00"}', TIMESTAMP '2026-01-04 18:39:00'),
  ('pay-017', 'ord-012', 'card', 'captured', 150.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-04 21:14:00'),
  ('pay-018', 'ord-011', 'card', NULL, 35.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-04 22:00:00');

-- 2026-01-05
INSERT INTO raw_payments VALUES
  ('pay-019', 'ord-012', 'card', 'captured', 148.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-05 08:10:00'),
  ('pay-020', 'ord-013', 'card', 'captured', 75.50, '{"card_brand":"amex","code":"00"}', TIMESTAMP '2026-01-05 09:59:00'),
  ('pay-025', 'ord-007', 'bank_transfer', 'captured', 35.00, NULL, TIMESTAMP '2026-01-05 12:00:00'),
  ('pay-021', 'ord-015', 'card', 'captured', 140.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-05 16:24:00'),
  ('pay-022', 'ord-002', 'paypal', 'refunded', 49.00, '{"code":"00"}', TIMESTAMP '2026-01-05 17:30:00'),
  ('pay-023', 'ord-017', 'card', 'captured', 149.00, '{"card_brand":"mastercard","code":"00"}', TIMESTAMP '2026-01-05 22:09:00'),
  ('pay-024', 'ord-099', 'card', 'captured', 20.00, '{"card_brand":"visa","code":"00"}', TIMESTAMP '2026-01-05 23:00:00');
