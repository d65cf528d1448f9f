-- src_c360_groups: stateless filter/projection of raw_groups.
-- Internal test groups never reach the model.
INSERT INTO src_c360_groups
SELECT
  group_id,
  TRIM(group_name) AS group_name,
  UPPER(group_type) AS group_type,
  COALESCE(is_active, TRUE) AS is_active,
  event_ts AS updated_at
FROM raw_groups
WHERE group_id IS NOT NULL
  AND LOWER(group_type) <> 'internal_test';
