-- y: transactions of accounts that are not closed, aggregated per account.
INSERT INTO y
WITH account_txns AS (
  SELECT
    t.account_id,
    t.txn_type,
    t.amount,
    CASE WHEN t.txn_type = 'REFUND' THEN -t.amount ELSE t.amount END AS signed_amount,
    t.txn_ts
  FROM src_y AS t
  JOIN src_b AS b
    ON t.account_id = b.account_id
  WHERE b.account_status <> 'CLOSED'
)
SELECT
  account_id,
  COUNT(*) AS txn_count,
  SUM(CASE WHEN txn_type = 'REFUND' THEN 1 ELSE 0 END) AS refund_count,
  CAST(SUM(signed_amount) AS DECIMAL(14, 2)) AS net_amount,
  MAX(amount) AS max_amount,
  MAX(txn_ts) AS last_txn_ts
FROM account_txns
GROUP BY account_id;
