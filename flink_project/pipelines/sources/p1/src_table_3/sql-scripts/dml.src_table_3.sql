-- src_table_3: keep captured and refunded payments only (authorisations, failures and
-- events without a status are dropped), refunds are negated so amounts can be summed.
INSERT INTO src_table_3
SELECT
  payment_id,
  order_id,
  LOWER(TRIM(payment_method)) AS payment_method,
  UPPER(TRIM(payment_status)) AS payment_status,
  COALESCE(JSON_VALUE(gateway_response, '$.card_brand'), 'n/a') AS card_brand,
  CASE
    WHEN UPPER(TRIM(payment_status)) = 'REFUNDED' THEN -amount
    ELSE amount
  END AS signed_amount,
  event_ts AS payment_ts
FROM raw_payments
WHERE order_id IS NOT NULL
  AND amount IS NOT NULL
  AND UPPER(TRIM(payment_status)) IN ('CAPTURED', 'REFUNDED');
