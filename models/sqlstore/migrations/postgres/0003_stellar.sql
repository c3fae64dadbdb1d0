-- Live payments on Stellar: what a payer needs beyond the contract's fields,
-- the exchange rate locked on an order, chain details and refunds of
-- payments, the watcher's cursor, and alerts for operators.
ALTER TABLE orders
    ADD COLUMN payment_network      text NOT NULL DEFAULT '',
    ADD COLUMN payment_asset_issuer text NOT NULL DEFAULT '',
    ADD COLUMN payment_memo_type    text NOT NULL DEFAULT 'text',
    ADD COLUMN payment_uri          text NOT NULL DEFAULT '',
    ADD COLUMN rate_price           numeric(30, 10),
    ADD COLUMN rate_source          text NOT NULL DEFAULT '',
    ADD COLUMN rate_at              timestamptz,
    ADD COLUMN refunded_at          timestamptz,
    ADD COLUMN refund_tx            text NOT NULL DEFAULT '';

-- Payment status now also takes 'received' (stored by a watcher, not yet
-- matched) and 'refund_due' (recorded against an order but not credited).
ALTER TABLE payments
    ADD COLUMN memo_type   text NOT NULL DEFAULT '',
    ADD COLUMN tx_hash     text NOT NULL DEFAULT '',
    ADD COLUMN refund_tx   text NOT NULL DEFAULT '',
    ADD COLUMN refunded_at timestamptz;
CREATE INDEX payments_status_idx ON payments (status, created_at);

CREATE TABLE stellar_cursors (
    network    text NOT NULL,
    account    text NOT NULL,
    cursor     text NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (network, account)
);

CREATE TABLE alerts (
    kind       text PRIMARY KEY,
    detail     text NOT NULL,
    first_at   timestamptz NOT NULL,
    last_at    timestamptz NOT NULL,
    count      integer NOT NULL,
    cleared_at timestamptz
);
