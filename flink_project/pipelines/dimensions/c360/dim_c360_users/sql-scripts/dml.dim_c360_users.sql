-- dim_c360_users: latest user profile LEFT JOIN its group (users in an unknown or
-- filtered-out group are kept with group_name 'NO GROUP').
INSERT INTO dim_c360_users
SELECT
  u.user_id,
  u.user_name,
  u.email,
  u.tier,
  u.country,
  u.preferred_language,
  u.group_id,
  COALESCE(g.group_name, 'NO GROUP') AS group_name,
  COALESCE(g.group_type, 'NONE') AS group_type,
  COALESCE(g.is_active, FALSE) AS group_is_active,
  u.updated_at
FROM src_c360_users AS u
LEFT JOIN src_c360_groups AS g
  ON u.group_id = g.group_id;
