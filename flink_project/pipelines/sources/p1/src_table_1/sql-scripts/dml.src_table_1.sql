-- src_table_1: deduplicate raw order events, keeping the last record received per order.
-- Malformed events without an order_id are dropped before ranking.
INSERT INTO src_table_1
WITH ranked_orders AS (
  SELECT
    order_id,
    customer_id,
    product_id,
    quantity,
    unit_price,
    UPPER(TRIM(COALESCE(order_status, 'unknown'))) AS order_status,
    event_ts AS order_ts,
    ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY `$rowtime` DESC) AS row_num
  FROM raw_orders
  WHERE order_id IS NOT NULL
)
SELECT
  order_id,
  customer_id,
  product_id,
  quantity,
  unit_price,
  CAST(quantity * unit_price AS DECIMAL(12, 2)) AS order_amount,
  order_status,
  order_ts
FROM ranked_orders
WHERE row_num = 1;
