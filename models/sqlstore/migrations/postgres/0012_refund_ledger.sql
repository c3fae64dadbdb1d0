-- The refunds table is the one ledger of money owed back. A payment a
-- refund returns whole follows its refund: an unmatched payment being
-- refunded is no longer unmatched (it can pay no order), and a payment
-- whose refund settled is refunded, with that refund's transaction.
UPDATE payments SET status = 'refund_due'
WHERE status = 'unmatched'
  AND EXISTS (SELECT 1 FROM refunds r WHERE r."key" = 'payment:' || payments.id);

UPDATE payments SET
    status = 'refunded',
    refund_tx = (SELECT r.transaction_hash FROM refunds r WHERE r."key" = 'payment:' || payments.id),
    refunded_at = (SELECT COALESCE(r.sent_at, r.cancelled_at, r.updated_at) FROM refunds r WHERE r."key" = 'payment:' || payments.id)
WHERE status IN ('late', 'refund_due')
  AND EXISTS (SELECT 1 FROM refunds r WHERE r."key" = 'payment:' || payments.id AND r.status IN ('sent', 'cancelled'));
-- orders.amount_refunded now counts refunds of the order's own money only
-- (models.RefundsSettledIn); it is recomputed by this migration's Go step
-- (refundLedgerStep), since SQLite keeps amounts as text.

-- One transaction returns one refund's money: a refund recorded sent is
-- checked against every other record of a transaction sent back.
CREATE INDEX refunds_transaction_idx ON refunds (transaction_hash) WHERE transaction_hash <> '';
CREATE INDEX payments_refund_tx_idx ON payments (refund_tx) WHERE refund_tx <> '';
CREATE INDEX orders_refund_tx_idx ON orders (refund_tx) WHERE refund_tx <> '';
