-- Refunds and an order's refund destination (see the Postgres migration of
-- the same number). SQLite: money is exact decimal TEXT, times DATETIME,
-- booleans INTEGER 0/1; one column per ALTER.
CREATE TABLE refunds (
    id                    TEXT NOT NULL PRIMARY KEY,
    key                   TEXT NOT NULL UNIQUE,
    order_id              TEXT REFERENCES orders (id),
    account_id            TEXT REFERENCES accounts (id),
    mode                  TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    payment_ids           TEXT NOT NULL DEFAULT '[]',
    reason                TEXT NOT NULL,
    amount                TEXT NOT NULL,
    asset                 TEXT NOT NULL,
    value                 TEXT,
    status                TEXT NOT NULL,
    destination_address   TEXT NOT NULL DEFAULT '',
    destination_memo_type TEXT NOT NULL DEFAULT '',
    destination_memo      TEXT NOT NULL DEFAULT '',
    destination_to_sender INTEGER NOT NULL DEFAULT 0,
    transaction_hash      TEXT NOT NULL DEFAULT '',
    envelope              TEXT NOT NULL DEFAULT '',
    failure_reason        TEXT NOT NULL DEFAULT '',
    workflow_started_at   DATETIME,
    created_at            DATETIME NOT NULL,
    updated_at            DATETIME NOT NULL,
    approved_at           DATETIME,
    sent_at               DATETIME,
    failed_at             DATETIME,
    cancelled_at          DATETIME
);
CREATE INDEX refunds_list_idx ON refunds (account_id, mode, created_at DESC, id DESC);
CREATE INDEX refunds_order_idx ON refunds (order_id);
CREATE INDEX refunds_workflow_pending_idx ON refunds (created_at) WHERE workflow_started_at IS NULL;
CREATE INDEX refunds_approved_idx ON refunds (approved_at) WHERE approved_at IS NOT NULL;
CREATE INDEX refunds_status_idx ON refunds (status, created_at);

ALTER TABLE orders ADD COLUMN refund_address TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN refund_memo_type TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN refund_memo TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN refund_to_sender INTEGER NOT NULL DEFAULT 0;
