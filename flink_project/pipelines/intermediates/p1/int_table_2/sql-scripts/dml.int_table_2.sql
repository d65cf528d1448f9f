-- int_table_2: aggregate settled payments per order (refunds are already negative).
INSERT INTO int_table_2
SELECT
  order_id,
  CAST(SUM(signed_amount) AS DECIMAL(12, 2)) AS paid_amount,
  COUNT(*) AS payment_count,
  SUM(CASE WHEN payment_status = 'REFUNDED' THEN 1 ELSE 0 END) AS refund_count,
  MAX(payment_ts) AS last_payment_ts
FROM src_table_3
GROUP BY order_id;
