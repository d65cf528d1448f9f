-- z: every account with logins, with its transaction totals when it has any.
INSERT INTO z
SELECT
  x.account_id,
  x.account_name,
  x.segment,
  x.region,
  x.login_count,
  x.failed_login_count,
  COALESCE(y.txn_count, CAST(0 AS BIGINT)) AS txn_count,
  COALESCE(y.net_amount, CAST(0 AS DECIMAL(14, 2))) AS net_amount,
  COALESCE(y.max_amount, CAST(0 AS DECIMAL(10, 2))) AS max_amount,
  CASE
    WHEN y.last_txn_ts IS NULL OR x.last_login_ts >= y.last_txn_ts THEN x.last_login_ts
    ELSE y.last_txn_ts
  END AS last_activity_ts
FROM x
LEFT JOIN y
  ON x.account_id = y.account_id;
