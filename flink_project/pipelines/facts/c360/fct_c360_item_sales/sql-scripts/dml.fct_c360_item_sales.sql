-- fct_c360_item_sales: GROUP BY sku over the exploded purchase items.
INSERT INTO fct_c360_item_sales
SELECT
  sku,
  COUNT(*) AS units_sold,
  COUNT(DISTINCT purchase_id) AS purchase_count,
  COUNT(DISTINCT user_id) AS buyer_count,
  MIN(purchase_ts) AS first_sold_ts,
  MAX(purchase_ts) AS last_sold_ts
FROM int_c360_purchase_items
GROUP BY sku;
