-- Issue 10: what clients read of their orders beyond the contract.

-- An order waiting for payment lists the payments a source stored with its
-- memo that the matcher has not attached yet. Unmatched payments are kept
-- for operators and anyone can send one (a spammer, to the public
-- receiving account), so they are found by memo, never by scanning them.
CREATE INDEX payments_unattached_memo_idx ON payments (memo) WHERE order_id IS NULL;

-- metadata (see the Postgres migration of the same number).
ALTER TABLE carts ADD COLUMN metadata TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN metadata TEXT NOT NULL DEFAULT '';

-- cancellation_reason (see the Postgres migration of the same number).
ALTER TABLE orders ADD COLUMN cancellation_reason TEXT NOT NULL DEFAULT '';
UPDATE orders SET cancellation_reason = CASE
        WHEN status_reason = 'payment deadline passed' THEN 'payment_window_expired'
        ELSE 'cancelled_by_operator' END
    WHERE status = 'cancelled';

-- The order list's indexes (see the Postgres migration of the same number).
CREATE INDEX orders_list_idx ON orders (account_id, mode, created_at DESC, id DESC);
CREATE INDEX orders_list_status_idx ON orders (account_id, mode, status, created_at DESC, id DESC);
DROP INDEX orders_account_idx;
