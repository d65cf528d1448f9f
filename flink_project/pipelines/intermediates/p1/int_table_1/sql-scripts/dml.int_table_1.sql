-- int_table_1: LEFT JOIN orders to customers, a missing or unknown customer_id keeps the order.
INSERT INTO int_table_1
SELECT
  o.order_id,
  o.customer_id,
  COALESCE(c.full_name, 'UNKNOWN CUSTOMER') AS customer_name,
  COALESCE(c.customer_segment, 'UNASSIGNED') AS customer_segment,
  COALESCE(c.country_code, 'ZZ') AS country_code,
  o.product_id,
  o.quantity,
  o.order_amount,
  o.order_status,
  o.order_ts
FROM src_table_1 AS o
LEFT JOIN src_table_2 AS c
  ON o.customer_id = c.customer_id;
