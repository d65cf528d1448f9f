-- p: aggregate z per (segment, region).
INSERT INTO p
SELECT
  segment,
  region,
  COUNT(*) AS account_count,
  SUM(login_count) AS total_logins,
  SUM(failed_login_count) AS total_failed_logins,
  SUM(txn_count) AS total_txn_count,
  CAST(SUM(net_amount) AS DECIMAL(16, 2)) AS total_net_amount,
  CAST(AVG(net_amount) AS DECIMAL(16, 2)) AS avg_net_amount_per_account
FROM z
GROUP BY segment, region;
