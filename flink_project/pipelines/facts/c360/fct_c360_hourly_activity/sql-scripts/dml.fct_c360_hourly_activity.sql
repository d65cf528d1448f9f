-- fct_c360_hourly_activity: 1-hour tumbling window TVF over the event time ($rowtime).
INSERT INTO fct_c360_hourly_activity
SELECT
  window_start,
  window_end,
  event_type,
  COUNT(*) AS event_count,
  COUNT(DISTINCT user_id) AS unique_users,
  SUM(duration_ms) AS total_duration_ms,
  MAX(duration_ms) AS max_duration_ms
FROM TABLE(
  TUMBLE(TABLE src_c360_app_events, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)
)
GROUP BY window_start, window_end, event_type;
