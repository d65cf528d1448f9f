-- src_x: filter and normalise raw login events (no join, no aggregation).
-- Events without an account or without an outcome cannot be attributed and are dropped.
INSERT INTO src_x
SELECT
  login_id,
  account_id,
  LOWER(TRIM(COALESCE(device, 'unknown'))) AS device,
  login_success,
  event_ts AS login_ts
FROM raw_logins
WHERE account_id IS NOT NULL
  AND login_success IS NOT NULL;
