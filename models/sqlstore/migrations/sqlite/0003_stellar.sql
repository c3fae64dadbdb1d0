-- Live payments on Stellar (see the Postgres migration of the same number).
-- SQLite: money is exact decimal TEXT, times DATETIME; one column per ALTER.
ALTER TABLE orders ADD COLUMN payment_network TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN payment_asset_issuer TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN payment_memo_type TEXT NOT NULL DEFAULT 'text';
ALTER TABLE orders ADD COLUMN payment_uri TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN rate_price TEXT;
ALTER TABLE orders ADD COLUMN rate_source TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN rate_at DATETIME;
ALTER TABLE orders ADD COLUMN refunded_at DATETIME;
ALTER TABLE orders ADD COLUMN refund_tx TEXT NOT NULL DEFAULT '';

ALTER TABLE payments ADD COLUMN memo_type TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN tx_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN refund_tx TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN refunded_at DATETIME;
CREATE INDEX payments_status_idx ON payments (status, created_at);

CREATE TABLE stellar_cursors (
    network    TEXT NOT NULL,
    account    TEXT NOT NULL,
    cursor     TEXT NOT NULL,
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (network, account)
);

CREATE TABLE alerts (
    kind       TEXT PRIMARY KEY,
    detail     TEXT NOT NULL,
    first_at   DATETIME NOT NULL,
    last_at    DATETIME NOT NULL,
    count      INTEGER NOT NULL,
    cleared_at DATETIME
);
