-- Issue 10: what clients read of their orders beyond the contract.

-- An order waiting for payment lists the payments a source stored with its
-- memo that the matcher has not attached yet. Unmatched payments are kept
-- for operators and anyone can send one (a spammer, to the public
-- receiving account), so they are found by memo, never by scanning them.
CREATE INDEX payments_unattached_memo_idx ON payments (memo) WHERE order_id IS NULL;

-- metadata: the client's string map on carts and orders, as canonical JSON
-- (keys sorted); '' when none. Bounded by the API (models.ValidateMetadata:
-- 20 keys, keys of 40 and values of 500 characters).
ALTER TABLE carts ADD COLUMN metadata text NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN metadata text NOT NULL DEFAULT '';

-- Why a cancelled order was cancelled, in the clients' vocabulary
-- (models.CancellationReason): requested_by_customer,
-- payment_window_expired, cancelled_by_operator; '' unless cancelled.
ALTER TABLE orders ADD COLUMN cancellation_reason text NOT NULL DEFAULT '';
-- Orders cancelled before the column existed, by the words the workflow
-- wrote (workflows.paymentOutcome): the deadline's, or else an operator's.
UPDATE orders SET cancellation_reason = CASE
        WHEN status_reason = 'payment deadline passed' THEN 'payment_window_expired'
        ELSE 'cancelled_by_operator' END
    WHERE status = 'cancelled';

-- GET /v1/orders: one account and mode, newest first with the id breaking
-- ties, optionally one status. Each index yields the rows in the order the
-- page returns them, so a page is a range read of limit+1 entries past the
-- cursor, never a sort, however many orders the account has. The list
-- index replaces orders_account_idx (account_id, mode, created_at), whose
-- lookups it serves as well.
CREATE INDEX orders_list_idx ON orders (account_id, mode, created_at DESC, id DESC);
CREATE INDEX orders_list_status_idx ON orders (account_id, mode, status, created_at DESC, id DESC);
DROP INDEX orders_account_idx;
