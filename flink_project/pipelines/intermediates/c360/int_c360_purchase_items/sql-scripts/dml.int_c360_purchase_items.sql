-- int_c360_purchase_items: CROSS JOIN UNNEST the items ARRAY, purchases with a NULL
-- item list produce no row. Stateless: each output row comes from one purchase.
INSERT INTO int_c360_purchase_items
SELECT
  p.purchase_id,
  p.user_id,
  UPPER(TRIM(t.item)) AS sku,
  p.channel,
  p.purchase_ts
FROM src_c360_purchases AS p
CROSS JOIN UNNEST(p.items) AS t(item);
