-- Orders, their tracking steps, and observed payments.
-- SQLite: money is exact decimal TEXT, times DATETIME (see 0001).
CREATE TABLE orders (
    id                  TEXT PRIMARY KEY,
    number              TEXT NOT NULL UNIQUE,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    mode                TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    -- One order per cart, enforced here as well as by the cart row lock.
    cart_id             TEXT NOT NULL UNIQUE REFERENCES carts (id),
    status              TEXT NOT NULL,
    payment_status      TEXT NOT NULL,
    status_reason       TEXT NOT NULL DEFAULT '',
    customer_email      TEXT NOT NULL,
    ship_name           TEXT NOT NULL,
    ship_phone          TEXT NOT NULL DEFAULT '',
    ship_line1          TEXT NOT NULL,
    ship_line2          TEXT NOT NULL DEFAULT '',
    ship_city           TEXT NOT NULL,
    ship_region         TEXT NOT NULL DEFAULT '',
    ship_postal_code    TEXT NOT NULL DEFAULT '',
    ship_country        TEXT NOT NULL,
    currency            TEXT NOT NULL,
    total               TEXT NOT NULL,
    payment_asset       TEXT NOT NULL,
    payment_amount      TEXT NOT NULL,
    payment_address     TEXT NOT NULL,
    payment_memo        TEXT NOT NULL,
    payment_expires_at  DATETIME NOT NULL,
    amount_received     TEXT NOT NULL DEFAULT '0',
    carrier             TEXT NOT NULL DEFAULT '',
    tracking_number     TEXT NOT NULL DEFAULT '',
    estimated_delivery  TEXT NOT NULL DEFAULT '',
    idempotency_key     TEXT,
    request_hash        TEXT NOT NULL,
    -- Outbox marker: NULL until the order's workflow is known to exist.
    workflow_started_at DATETIME,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL
);
CREATE UNIQUE INDEX orders_idempotency_idx ON orders (account_id, mode, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX orders_account_idx ON orders (account_id, mode, created_at);
CREATE INDEX orders_workflow_pending_idx ON orders (created_at) WHERE workflow_started_at IS NULL;

CREATE TABLE order_steps (
    order_id   TEXT NOT NULL REFERENCES orders (id),
    name       TEXT NOT NULL,
    reached_at DATETIME NOT NULL,
    PRIMARY KEY (order_id, name)
);

CREATE TABLE payments (
    id          TEXT PRIMARY KEY,
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    asset       TEXT NOT NULL,
    amount      TEXT NOT NULL,
    memo        TEXT NOT NULL DEFAULT '',
    sender      TEXT NOT NULL DEFAULT '',
    received_at DATETIME NOT NULL,
    order_id    TEXT REFERENCES orders (id),
    -- unmatched, matched, late (arrived after the order closed: refund due), refunded
    status      TEXT NOT NULL,
    signaled_at DATETIME,
    created_at  DATETIME NOT NULL
);
CREATE INDEX payments_order_idx ON payments (order_id);
CREATE INDEX payments_unmatched_idx ON payments (created_at) WHERE order_id IS NULL;
CREATE INDEX payments_unsignaled_idx ON payments (created_at) WHERE order_id IS NOT NULL AND signaled_at IS NULL;
