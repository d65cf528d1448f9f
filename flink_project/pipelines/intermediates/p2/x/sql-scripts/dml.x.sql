-- x: logins of known accounts only (inner join on src_b), aggregated per account.
INSERT INTO x
SELECT
  l.account_id,
  b.account_name,
  b.segment,
  b.region,
  COUNT(*) AS login_count,
  SUM(CASE WHEN l.login_success THEN 0 ELSE 1 END) AS failed_login_count,
  COUNT(DISTINCT l.device) AS device_count,
  MAX(l.login_ts) AS last_login_ts
FROM src_x AS l
JOIN src_b AS b
  ON l.account_id = b.account_id
GROUP BY l.account_id, b.account_name, b.segment, b.region;
