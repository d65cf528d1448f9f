-- src_table_2: the CRM connector re-sends a full customer record on every change,
-- keep only the most recent one per customer and normalise the text columns.
INSERT INTO src_table_2
WITH latest_customers AS (
  SELECT
    customer_id,
    first_name,
    last_name,
    email,
    country_code,
    segment,
    event_ts,
    ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY $rowtime DESC) AS row_num
  FROM raw_customers
  WHERE customer_id IS NOT NULL
)
SELECT
  customer_id,
  CONCAT(TRIM(first_name), ' ', TRIM(last_name)) AS full_name,
  LOWER(TRIM(email)) AS email,
  UPPER(COALESCE(country_code, 'ZZ')) AS country_code,
  UPPER(COALESCE(segment, 'unassigned')) AS customer_segment,
  event_ts AS updated_at
FROM latest_customers
WHERE row_num = 1;
