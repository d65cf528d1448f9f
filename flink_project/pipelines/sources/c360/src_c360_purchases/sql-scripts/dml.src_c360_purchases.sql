-- src_c360_purchases: drop zero, negative and missing amounts (voids and test orders).
INSERT INTO src_c360_purchases
SELECT
  purchase_id,
  user_id,
  UPPER(COALESCE(channel, 'web')) AS channel,
  items,
  amount,
  event_ts AS purchase_ts
FROM raw_purchases
WHERE purchase_id IS NOT NULL
  AND amount > 0;
