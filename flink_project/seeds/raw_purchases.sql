-- Raw purchase events from the checkout service, append-only, items lists the SKUs bought
-- (a SKU repeated once per unit). Read by src_c360_purchases (stateless filter), then the
-- temporal join (fct_c360_purchase) and the UNNEST (int_c360_purchase_items).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 24 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_purchases (
  purchase_id STRING,
  user_id STRING,
  channel STRING,
  items ARRAY<STRING>,
  amount DECIMAL(10, 2),
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_purchases VALUES
  ('pur-001', 'u-001', 'web', ARRAY['sku-100', 'sku-200'], 45.00, TIMESTAMP '2026-01-01 09:56:00'),
  ('pur-002', 'u-003', 'app', ARRAY['sku-200'], 30.00, TIMESTAMP '2026-01-01 14:30:00'),
  ('pur-003', 'u-002', 'app', ARRAY['sku-100', 'sku-100', 'sku-300'], 65.50, TIMESTAMP '2026-01-01 20:00:00');

-- 2026-01-02
INSERT INTO raw_purchases VALUES
  ('pur-004', 'u-005', 'app', ARRAY['sku-300'], 20.50, TIMESTAMP '2026-01-02 10:51:00'),
  ('pur-005', 'u-004', 'web', ARRAY['sku-100'], 0.00, TIMESTAMP '2026-01-02 12:00:00'),
  ('pur-006', 'u-011', 'app', ARRAY['sku-200', 'sku-400'], 52.00, TIMESTAMP '2026-01-02 16:41:00'),
  ('pur-007', 'u-001', NULL, ARRAY['sku-400'], 12.00, TIMESTAMP '2026-01-02 18:30:00'),
  ('pur-008', 'u-777', 'web', ARRAY['sku-500'], 99.00, TIMESTAMP '2026-01-02 21:10:00');

-- 2026-01-03
INSERT INTO raw_purchases VALUES
  ('pur-009', 'u-007', 'app', ARRAY[' sku-400 '], 12.00, TIMESTAMP '2026-01-03 08:40:00'),
  ('pur-010', 'u-001', 'web', ARRAY['sku-500', 'sku-100'], 37.00, TIMESTAMP '2026-01-03 09:30:00'),
  ('pur-011', 'u-008', 'app', ARRAY['sku-100'], 15.00, TIMESTAMP '2026-01-03 12:26:00'),
  (NULL, 'u-002', 'app', ARRAY['sku-100'], 15.00, TIMESTAMP '2026-01-03 15:00:00'),
  ('pur-012', 'u-009', 'app', ARRAY['sku-200'], -30.00, TIMESTAMP '2026-01-03 19:30:00');

-- 2026-01-04
INSERT INTO raw_purchases VALUES
  ('pur-013', 'u-002', 'app', ARRAY['sku-300', 'sku-500'], 42.50, TIMESTAMP '2026-01-04 09:36:00'),
  ('pur-014', 'u-010', 'web', ARRAY['sku-500'], 22.00, TIMESTAMP '2026-01-04 09:59:00'),
  ('pur-015', 'u-005', 'app', NULL, 18.00, TIMESTAMP '2026-01-04 11:00:00'),
  ('pur-016', 'u-003', 'app', ARRAY['sku-100', 'sku-200', 'sku-200'], 75.00, TIMESTAMP '2026-01-04 15:51:00'),
  ('pur-017', 'u-006', 'web', ARRAY['sku-300'], NULL, TIMESTAMP '2026-01-04 22:15:00');

-- 2026-01-05
INSERT INTO raw_purchases VALUES
  ('pur-018', 'u-001', 'web', ARRAY['sku-200'], 30.00, TIMESTAMP '2026-01-05 06:30:00'),
  ('pur-019', 'u-001', 'web', ARRAY['sku-300', 'sku-300'], 41.00, TIMESTAMP '2026-01-05 08:31:00'),
  ('pur-020', 'u-011', 'app', ARRAY['sku-400'], 12.00, TIMESTAMP '2026-01-05 13:46:00'),
  ('pur-021', 'u-009', 'app', ARRAY['sku-500'], 22.00, TIMESTAMP '2026-01-05 14:10:00'),
  ('pur-022', 'u-005', 'app', ARRAY['sku-100', 'sku-500'], 37.00, TIMESTAMP '2026-01-05 20:31:00'),
  ('pur-023', 'u-012', 'web', ARRAY['sku-200'], 30.00, TIMESTAMP '2026-01-05 22:45:00');
