-- d: per-row projection of z (same key, no join, no aggregation).
INSERT INTO d
SELECT
  account_id,
  account_name,
  segment,
  region,
  CASE
    WHEN txn_count >= 4 OR login_count >= 6 THEN 'HIGH'
    WHEN txn_count >= 2 THEN 'MEDIUM'
    ELSE 'LOW'
  END AS activity_tier,
  (failed_login_count * 2 >= login_count) AS is_login_risk,
  net_amount AS lifetime_net_amount,
  last_activity_ts
FROM z;
