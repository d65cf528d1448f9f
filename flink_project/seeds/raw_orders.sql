-- Raw order events from the order service CDC connector: one record per change,
-- so an order appears several times as its status moves (created, paid, shipped...).
-- Read by src_table_1 (ROW_NUMBER dedup on order_id, last record wins).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 35 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_orders (
  order_id STRING,
  customer_id STRING,
  product_id STRING,
  quantity INT,
  unit_price DECIMAL(10, 2),
  order_status STRING,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_orders VALUES
  ('ord-001', 'c-001', 'p-100', 2, 19.99, 'created', TIMESTAMP '2026-01-01 09:05:00'),
  ('ord-002', 'c-002', 'p-200', 1, 149.00, 'created', TIMESTAMP '2026-01-01 09:40:00'),
  ('ord-003', 'c-003', 'p-100', 5, 19.99, 'created', TIMESTAMP '2026-01-01 11:12:00'),
  ('ord-001', 'c-001', 'p-100', 2, 19.99, 'paid', TIMESTAMP '2026-01-01 12:30:00'),
  ('ord-004', 'c-099', 'p-300', 1, 75.50, 'created', TIMESTAMP '2026-01-01 15:45:00'),
  ('ord-002', 'c-002', 'p-200', 1, 149.00, 'paid', TIMESTAMP '2026-01-01 18:02:00');

-- 2026-01-02
INSERT INTO raw_orders VALUES
  ('ord-005', 'c-004', 'p-400', 3, 9.90, 'created', TIMESTAMP '2026-01-02 08:20:00'),
  ('ord-003', 'c-003', 'p-100', 4, 19.99, 'created', TIMESTAMP '2026-01-02 08:55:00'),
  ('ord-006', 'c-005', 'p-200', 1, 149.00, 'created', TIMESTAMP '2026-01-02 10:15:00'),
  ('ord-001', 'c-001', 'p-100', 2, 19.99, 'shipped', TIMESTAMP '2026-01-02 11:00:00'),
  (NULL, 'c-006', 'p-100', 1, 19.99, 'created', TIMESTAMP '2026-01-02 13:30:00'),
  ('ord-007', NULL, 'p-500', 2, 35.00, 'created', TIMESTAMP '2026-01-02 16:40:00'),
  ('ord-005', 'c-004', 'p-400', 3, 9.90, 'paid', TIMESTAMP '2026-01-02 19:05:00');

-- 2026-01-03
INSERT INTO raw_orders VALUES
  ('ord-008', 'c-006', 'p-300', 2, 75.50, 'created', TIMESTAMP '2026-01-03 07:50:00'),
  ('ord-002', 'c-002', 'p-200', 1, 149.00, 'shipped', TIMESTAMP '2026-01-03 09:10:00'),
  ('ord-009', 'c-007', 'p-100', 10, 19.99, 'created', TIMESTAMP '2026-01-03 10:25:00'),
  ('ord-006', 'c-005', 'p-200', 1, 149.00, 'cancelled', TIMESTAMP '2026-01-03 12:00:00'),
  ('ord-010', 'c-008', 'p-400', 6, 9.90, 'created', TIMESTAMP '2026-01-03 14:35:00'),
  ('ord-008', 'c-006', 'p-300', 2, 75.50, 'paid', TIMESTAMP '2026-01-03 17:20:00'),
  ('ord-011', 'c-002', 'p-500', 1, 35.00, NULL, TIMESTAMP '2026-01-03 20:45:00');

-- 2026-01-04
INSERT INTO raw_orders VALUES
  ('ord-012', 'c-009', 'p-200', 2, 149.00, 'created', TIMESTAMP '2026-01-04 08:05:00'),
  ('ord-009', 'c-007', 'p-100', 10, 19.99, 'paid', TIMESTAMP '2026-01-04 09:30:00'),
  ('ord-013', 'c-001', 'p-300', 1, 75.50, 'created', TIMESTAMP '2026-01-04 11:45:00'),
  ('ord-003', 'c-003', 'p-100', 4, 19.99, 'paid', TIMESTAMP '2026-01-04 13:00:00'),
  ('ord-014', 'c-099', 'p-100', 3, 19.99, 'created', TIMESTAMP '2026-01-04 15:10:00'),
  ('ord-010', 'c-008', 'p-400', 6, 9.90, 'paid', TIMESTAMP '2026-01-04 18:40:00'),
  ('ord-012', 'c-009', 'p-200', 2, 149.00, ' Paid', TIMESTAMP '2026-01-04 21:15:00');

-- 2026-01-05
INSERT INTO raw_orders VALUES
  ('ord-015', 'c-010', 'p-500', 4, 35.00, 'created', TIMESTAMP '2026-01-05 08:30:00'),
  ('ord-013', 'c-001', 'p-300', 1, 75.50, 'paid', TIMESTAMP '2026-01-05 10:00:00'),
  ('ord-016', 'c-003', 'p-400', 2, 9.90, 'created', TIMESTAMP '2026-01-05 11:20:00'),
  ('ord-009', 'c-007', 'p-100', 10, 19.99, 'shipped', TIMESTAMP '2026-01-05 12:45:00'),
  ('ord-017', 'c-005', 'p-200', 1, 149.00, 'created', TIMESTAMP '2026-01-05 14:00:00'),
  ('ord-015', 'c-010', 'p-500', 4, 35.00, 'paid', TIMESTAMP '2026-01-05 16:25:00'),
  ('ord-018', 'c-004', 'p-100', 1, 19.99, 'created', TIMESTAMP '2026-01-05 19:50:00'),
  ('ord-017', 'c-005', 'p-200', 1, 149.00, 'paid', TIMESTAMP '2026-01-05 22:10:00');
