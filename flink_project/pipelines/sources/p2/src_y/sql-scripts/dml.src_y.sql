-- src_y: keep the last delivery of each transaction, rows without an amount are invalid.
INSERT INTO src_y
WITH ranked_txns AS (
  SELECT
    txn_id,
    account_id,
    txn_type,
    currency,
    amount,
    event_ts,
    ROW_NUMBER() OVER (PARTITION BY txn_id ORDER BY `$rowtime` DESC) AS row_num
  FROM raw_transactions
  WHERE txn_id IS NOT NULL
    AND amount IS NOT NULL
)
SELECT
  txn_id,
  account_id,
  UPPER(TRIM(txn_type)) AS txn_type,
  UPPER(COALESCE(currency, 'usd')) AS currency,
  amount,
  event_ts AS txn_ts
FROM ranked_txns
WHERE row_num = 1;
