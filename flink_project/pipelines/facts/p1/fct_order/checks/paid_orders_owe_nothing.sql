-- severity: warn
-- Worth a look, never blocks: an order marked PAID that still owes something.
SELECT order_id, payment_state, outstanding_amount FROM fct_order
WHERE payment_state = 'PAID' AND outstanding_amount > 0
