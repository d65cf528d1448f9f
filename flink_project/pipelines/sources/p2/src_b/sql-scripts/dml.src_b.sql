-- src_b: deduplicate account records (keep the last one received per account).
INSERT INTO src_b
WITH ranked_accounts AS (
  SELECT
    account_id,
    account_name,
    segment,
    region,
    account_status,
    event_ts,
    ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY `$rowtime` DESC) AS row_num
  FROM raw_accounts
  WHERE account_id IS NOT NULL
)
SELECT
  account_id,
  TRIM(account_name) AS account_name,
  UPPER(COALESCE(segment, 'unknown')) AS segment,
  UPPER(COALESCE(region, 'unknown')) AS region,
  UPPER(account_status) AS account_status,
  event_ts AS updated_at
FROM ranked_accounts
WHERE row_num = 1;
