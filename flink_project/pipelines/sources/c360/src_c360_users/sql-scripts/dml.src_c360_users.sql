-- src_c360_users: project raw user records into the versioned users table.
-- Stateless: each raw record becomes one upsert of its user_id.
INSERT INTO src_c360_users
SELECT
  user_id,
  TRIM(user_name) AS user_name,
  LOWER(TRIM(email)) AS email,
  group_id,
  UPPER(COALESCE(tier, 'bronze')) AS tier,
  UPPER(country) AS country,
  preferences,
  COALESCE(preferences['language'], 'en') AS preferred_language,
  `$rowtime` AS updated_at
FROM raw_users
WHERE user_id IS NOT NULL;
