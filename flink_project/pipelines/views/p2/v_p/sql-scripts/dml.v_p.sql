-- v_p: join the account dimension d to the segment fact p.
INSERT INTO v_p
SELECT
  d.account_id,
  d.account_name,
  d.segment,
  d.region,
  d.activity_tier,
  d.lifetime_net_amount,
  p.account_count AS segment_account_count,
  p.total_net_amount AS segment_net_amount,
  CASE
    WHEN p.total_net_amount = 0 THEN CAST(NULL AS DOUBLE)
    ELSE CAST(d.lifetime_net_amount AS DOUBLE) * 100 / CAST(p.total_net_amount AS DOUBLE)
  END AS share_of_segment_pct
FROM d
JOIN p
  ON d.segment = p.segment
 AND d.region = p.region;
