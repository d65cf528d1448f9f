-- fct_c360_purchase: event-time temporal join against the versioned src_c360_users table.
-- A purchase sees the user version valid at its $rowtime. Purchases of users without a
-- version at that time (unknown user, or profile created later) produce no row.
INSERT INTO fct_c360_purchase
SELECT
  p.purchase_id,
  p.user_id,
  u.user_name,
  u.tier AS tier_at_purchase,
  u.group_id,
  u.country,
  p.channel,
  p.amount,
  DATE_FORMAT(p.purchase_ts, 'yyyy-MM-dd') AS purchase_day,
  p.purchase_ts
FROM src_c360_purchases AS p
JOIN src_c360_users FOR SYSTEM_TIME AS OF p.`$rowtime` AS u
  ON p.user_id = u.user_id;
