-- Refunds: money owed back to a payer and its way there (models.Refund),
-- one row per refund, created once by its natural key, so a retried
-- activity or two callers at once create it once. An order also keeps
-- where its client asked money owed back to go, which its refunds start
-- with.
CREATE TABLE refunds (
    id                    text PRIMARY KEY,
    -- "payment:<payment id>" or "order:<order id>:<n>" (models.RefundsOwed).
    key                   text NOT NULL UNIQUE,
    -- NULL for an unmatched payment an operator refunds: no order, no account.
    order_id              text REFERENCES orders (id),
    account_id            text REFERENCES accounts (id),
    mode                  text NOT NULL CHECK (mode IN ('test', 'live')),
    -- The payments it returns, as a JSON array of their ids.
    payment_ids           text NOT NULL DEFAULT '[]',
    reason                text NOT NULL,
    amount                numeric(30, 10) NOT NULL,
    asset                 text NOT NULL,
    -- The amount in the order's currency (models.RefundValue); NULL when
    -- unknown, and such a refund waits for an operator's approval.
    value                 numeric(20, 8),
    status                text NOT NULL,
    -- The destination: none while address is '' and to_sender false.
    destination_address   text NOT NULL DEFAULT '',
    destination_memo_type text NOT NULL DEFAULT '',
    destination_memo      text NOT NULL DEFAULT '',
    destination_to_sender boolean NOT NULL DEFAULT false,
    transaction_hash      text NOT NULL DEFAULT '',
    -- The payout's signed XDR, kept so a retry submits the same transaction.
    envelope              text NOT NULL DEFAULT '',
    failure_reason        text NOT NULL DEFAULT '',
    -- Outbox marker: NULL until the refund's workflow is known to exist.
    workflow_started_at   timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    approved_at           timestamptz,
    sent_at               timestamptz,
    failed_at             timestamptz,
    cancelled_at          timestamptz
);
-- GET /v1/refunds: one account and mode, newest first, the id breaking
-- ties, as orders_list_idx does for orders.
CREATE INDEX refunds_list_idx ON refunds (account_id, mode, created_at DESC, id DESC);
CREATE INDEX refunds_order_idx ON refunds (order_id);
CREATE INDEX refunds_workflow_pending_idx ON refunds (created_at) WHERE workflow_started_at IS NULL;
-- The daily approval limit sums the refunds approved since a time.
CREATE INDEX refunds_approved_idx ON refunds (approved_at) WHERE approved_at IS NOT NULL;
-- Operators list refunds by status.
CREATE INDEX refunds_status_idx ON refunds (status, created_at);

-- models.Order.RefundDestination: none while refund_address is '' and
-- refund_to_sender false.
ALTER TABLE orders
    ADD COLUMN refund_address   text NOT NULL DEFAULT '',
    ADD COLUMN refund_memo_type text NOT NULL DEFAULT '',
    ADD COLUMN refund_memo      text NOT NULL DEFAULT '',
    ADD COLUMN refund_to_sender boolean NOT NULL DEFAULT false;
