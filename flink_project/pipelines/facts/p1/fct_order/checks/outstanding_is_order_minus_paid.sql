-- A data test: the rows returned break the rule (none: the check passes). Severity error blocks.
-- severity: error
SELECT order_id, order_amount, paid_amount, outstanding_amount
FROM fct_order
WHERE outstanding_amount <> order_amount - paid_amount
