-- Raw application events (web and mobile), append-only, device is a ROW<os, app_version>.
-- Events arrive in bursts within a few hours of each day. heartbeat events and events
-- without a user are noise. Read by src_c360_app_events (stateless filter).
-- Event time: the event_ts column is the Kafka record timestamp ($rowtime), UTC.
-- 46 records, 2026-01-01 .. 2026-01-05.
CREATE TABLE IF NOT EXISTS raw_app_events (
  event_id STRING,
  user_id STRING,
  event_type STRING,
  page STRING,
  device ROW<os STRING, app_version STRING>,
  duration_ms INT,
  event_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'
) DISTRIBUTED INTO 1 BUCKETS WITH (
  'changelog.mode' = 'append',
  'value.format' = 'avro-registry',
  'kafka.retention.time' = '0',
  'scan.startup.mode' = 'earliest-offset'
);

-- 2026-01-01
INSERT INTO raw_app_events VALUES
  ('ev-001', 'u-001', 'page_view', '/home', ROW('web', '2026.1'), 1200, TIMESTAMP '2026-01-01 09:02:00'),
  ('ev-002', 'u-001', 'add_to_cart', '/p/sku-100', ROW('web', '2026.1'), 800, TIMESTAMP '2026-01-01 09:10:00'),
  ('ev-003', 'u-002', 'page_view', '/home', ROW('ios', '5.2.0'), 950, TIMESTAMP '2026-01-01 09:25:00'),
  ('ev-004', 'u-002', 'heartbeat', NULL, ROW('ios', '5.2.0'), NULL, TIMESTAMP '2026-01-01 09:40:00'),
  ('ev-005', 'u-001', 'checkout', '/checkout', ROW('web', '2026.1'), 2300, TIMESTAMP '2026-01-01 09:55:00'),
  ('ev-006', 'u-003', 'page_view', '/home', ROW('android', '5.1.3'), 700, TIMESTAMP '2026-01-01 14:05:00'),
  ('ev-007', 'u-003', 'page_view', '/p/sku-200', ROW('android', '5.1.3'), 1500, TIMESTAMP '2026-01-01 14:20:00'),
  ('ev-008', NULL, 'page_view', '/home', ROW('web', '2026.1'), 400, TIMESTAMP '2026-01-01 14:48:00');

-- 2026-01-02
INSERT INTO raw_app_events VALUES
  ('ev-009', 'u-004', 'page_view', '/home', ROW('web', '2026.1'), 600, TIMESTAMP '2026-01-02 10:01:00'),
  ('ev-010', 'u-005', 'page_view', '/home', ROW('ios', '5.2.0'), 1100, TIMESTAMP '2026-01-02 10:15:00'),
  ('ev-011', 'u-005', 'add_to_cart', '/p/sku-300', ROW('ios', '5.2.0'), 900, TIMESTAMP '2026-01-02 10:30:00'),
  ('ev-012', 'u-004', 'Page_View', '/p/sku-100', ROW('web', '2026.1'), NULL, TIMESTAMP '2026-01-02 10:31:00'),
  ('ev-013', 'u-005', 'checkout', '/checkout', ROW('ios', '5.2.0'), 2600, TIMESTAMP '2026-01-02 10:50:00'),
  ('ev-014', 'u-011', 'page_view', NULL, ROW('android', '5.1.3'), 500, TIMESTAMP '2026-01-02 16:10:00'),
  ('ev-015', 'u-011', 'add_to_cart', '/p/sku-200', ROW('android', '5.1.3'), 700, TIMESTAMP '2026-01-02 16:12:00'),
  ('ev-016', 'u-011', 'checkout', '/checkout', ROW('android', '5.1.3'), 1900, TIMESTAMP '2026-01-02 16:40:00'),
  ('ev-017', 'u-011', 'heartbeat', NULL, ROW('android', '5.1.3'), NULL, TIMESTAMP '2026-01-02 16:41:00');

-- 2026-01-03
INSERT INTO raw_app_events VALUES
  ('ev-018', 'u-001', 'page_view', '/home', ROW('web', '2026.1'), 900, TIMESTAMP '2026-01-03 08:05:00'),
  ('ev-019', 'u-007', 'page_view', '/home', ROW('android', '5.1.3'), 650, TIMESTAMP '2026-01-03 08:20:00'),
  ('ev-020', 'u-007', 'page_view', '/p/sku-400', ROW('android', '5.1.3'), 1300, TIMESTAMP '2026-01-03 08:35:00'),
  ('ev-021', 'u-001', 'heartbeat', NULL, ROW('web', '2026.1'), NULL, TIMESTAMP '2026-01-03 08:50:00'),
  ('ev-022', 'u-008', 'page_view', '/home', ROW('ios', '5.2.0'), 1000, TIMESTAMP '2026-01-03 12:00:00'),
  ('ev-023', 'u-008', 'add_to_cart', '/p/sku-100', ROW('ios', '5.2.0'), 750, TIMESTAMP '2026-01-03 12:10:00'),
  ('ev-024', 'u-008', 'checkout', '/checkout', ROW('ios', '5.2.0'), 2100, TIMESTAMP '2026-01-03 12:25:00'),
  ('ev-025', 'u-002', 'page_view', '/p/sku-300', ROW('ios', '5.2.0'), 880, TIMESTAMP '2026-01-03 12:40:00'),
  ('ev-026', 'u-009', 'page_view', '/home', ROW('android', '5.1.3'), 540, TIMESTAMP '2026-01-03 19:15:00'),
  ('ev-027', NULL, 'add_to_cart', '/p/sku-200', ROW('android', '5.1.3'), 610, TIMESTAMP '2026-01-03 19:45:00');

-- 2026-01-04
INSERT INTO raw_app_events VALUES
  ('ev-028', 'u-010', 'page_view', '/home', ROW('web', '2026.1'), 720, TIMESTAMP '2026-01-04 09:00:00'),
  ('ev-029', 'u-010', 'add_to_cart', '/p/sku-500', ROW('web', '2026.1'), 680, TIMESTAMP '2026-01-04 09:05:00'),
  ('ev-030', 'u-002', 'page_view', '/home', ROW('ios', '5.2.0'), 1050, TIMESTAMP '2026-01-04 09:20:00'),
  ('ev-031', 'u-002', 'checkout', '/checkout', ROW('ios', '5.2.0'), 2400, TIMESTAMP '2026-01-04 09:35:00'),
  ('ev-032', 'u-010', 'checkout', '/checkout', ROW('web', '2026.1'), 1800, TIMESTAMP '2026-01-04 09:58:00'),
  ('ev-033', 'u-003', 'page_view', '/home', ROW('android', '5.1.3'), 900, TIMESTAMP '2026-01-04 15:30:00'),
  ('ev-034', 'u-003', ' ADD_TO_CART ', '/p/sku-100', ROW('android', '5.1.3'), 640, TIMESTAMP '2026-01-04 15:32:00'),
  ('ev-035', 'u-003', 'checkout', '/checkout', ROW('android', '5.1.3'), 2050, TIMESTAMP '2026-01-04 15:50:00'),
  ('ev-036', 'u-003', 'heartbeat', NULL, ROW('android', '5.1.3'), NULL, TIMESTAMP '2026-01-04 15:51:00');

-- 2026-01-05
INSERT INTO raw_app_events VALUES
  ('ev-037', 'u-001', 'page_view', '/home', ROW('web', '2026.1'), 860, TIMESTAMP '2026-01-05 08:10:00'),
  ('ev-038', 'u-001', 'add_to_cart', '/p/sku-300', ROW('web', '2026.1'), 720, TIMESTAMP '2026-01-05 08:12:00'),
  ('ev-039', 'u-001', 'checkout', '/checkout', ROW('web', '2026.1'), 2200, TIMESTAMP '2026-01-05 08:30:00'),
  ('ev-040', 'u-012', 'page_view', '/home', ROW('ios', '5.2.0'), 500, TIMESTAMP '2026-01-05 08:45:00'),
  ('ev-041', 'u-011', 'page_view', '/home', ROW('android', '5.1.3'), 640, TIMESTAMP '2026-01-05 13:00:00'),
  ('ev-042', 'u-011', 'add_to_cart', '/p/sku-400', ROW('android', '5.1.3'), 710, TIMESTAMP '2026-01-05 13:20:00'),
  ('ev-043', 'u-011', 'checkout', '/checkout', ROW('android', '5.1.3'), 1950, TIMESTAMP '2026-01-05 13:45:00'),
  ('ev-044', 'u-009', 'page_view', '/p/sku-500', ROW('android', '5.1.3'), 480, TIMESTAMP '2026-01-05 13:59:00'),
  ('ev-045', 'u-005', 'page_view', '/home', ROW('ios', '5.2.0'), 1000, TIMESTAMP '2026-01-05 20:05:00'),
  ('ev-046', 'u-005', 'checkout', '/checkout', ROW('ios', '5.2.0'), 2500, TIMESTAMP '2026-01-05 20:30:00');
