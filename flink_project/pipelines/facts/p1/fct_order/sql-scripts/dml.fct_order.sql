-- fct_order: join enriched orders with their payment totals.
-- Orders without any settled payment are kept with zero paid and state UNPAID.
INSERT INTO fct_order
WITH order_payments AS (
  SELECT
    o.order_id,
    o.order_ts,
    o.customer_id,
    o.customer_name,
    o.customer_segment,
    o.country_code,
    o.order_status,
    o.order_amount,
    COALESCE(p.paid_amount, CAST(0 AS DECIMAL(12, 2))) AS paid_amount,
    COALESCE(p.payment_count, CAST(0 AS BIGINT)) AS payment_count
  FROM int_table_1 AS o
  LEFT JOIN int_table_2 AS p
    ON o.order_id = p.order_id
)
SELECT
  order_id,
  CAST(order_ts AS DATE) AS order_date,
  customer_id,
  customer_name,
  customer_segment,
  country_code,
  order_status,
  order_amount,
  paid_amount,
  CAST(order_amount - paid_amount AS DECIMAL(12, 2)) AS outstanding_amount,
  payment_count,
  CASE
    WHEN payment_count = 0 THEN 'UNPAID'
    WHEN paid_amount >= order_amount THEN 'PAID'
    WHEN paid_amount <= 0 THEN 'REFUNDED'
    ELSE 'PARTIAL'
  END AS payment_state,
  order_ts
FROM order_payments;
