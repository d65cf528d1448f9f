-- src_c360_app_events: filter out heartbeats and anonymous events, flatten the device ROW.
INSERT INTO src_c360_app_events
SELECT
  e.event_id,
  e.user_id,
  LOWER(TRIM(e.event_type)) AS event_type,
  COALESCE(e.page, '/') AS page,
  LOWER(e.device.os) AS device_os,
  e.device.app_version AS app_version,
  COALESCE(e.duration_ms, 0) AS duration_ms,
  e.event_ts
FROM raw_app_events AS e
WHERE e.user_id IS NOT NULL
  AND LOWER(TRIM(e.event_type)) <> 'heartbeat';
