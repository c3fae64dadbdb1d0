-- Orders, their tracking steps, and observed payments.
CREATE TABLE orders (
    id                  text PRIMARY KEY,
    number              text NOT NULL UNIQUE,
    account_id          text NOT NULL REFERENCES accounts (id),
    mode                text NOT NULL CHECK (mode IN ('test', 'live')),
    -- One order per cart, enforced here as well as by the cart row lock.
    cart_id             text NOT NULL UNIQUE REFERENCES carts (id),
    status              text NOT NULL,
    payment_status      text NOT NULL,
    status_reason       text NOT NULL DEFAULT '',
    customer_email      text NOT NULL,
    ship_name           text NOT NULL,
    ship_phone          text NOT NULL DEFAULT '',
    ship_line1          text NOT NULL,
    ship_line2          text NOT NULL DEFAULT '',
    ship_city           text NOT NULL,
    ship_region         text NOT NULL DEFAULT '',
    ship_postal_code    text NOT NULL DEFAULT '',
    ship_country        char(2) NOT NULL,
    currency            char(3) NOT NULL,
    total               numeric(20, 8) NOT NULL,
    payment_asset       text NOT NULL,
    payment_amount      numeric(30, 10) NOT NULL,
    payment_address     text NOT NULL,
    payment_memo        text NOT NULL,
    payment_expires_at  timestamptz NOT NULL,
    amount_received     numeric(30, 10) NOT NULL DEFAULT 0,
    carrier             text NOT NULL DEFAULT '',
    tracking_number     text NOT NULL DEFAULT '',
    estimated_delivery  text NOT NULL DEFAULT '',
    idempotency_key     text,
    request_hash        text NOT NULL,
    -- Outbox marker: NULL until the order's workflow is known to exist.
    workflow_started_at timestamptz,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX orders_idempotency_idx ON orders (account_id, mode, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX orders_account_idx ON orders (account_id, mode, created_at);
CREATE INDEX orders_workflow_pending_idx ON orders (created_at) WHERE workflow_started_at IS NULL;

CREATE TABLE order_steps (
    order_id   text NOT NULL REFERENCES orders (id),
    name       text NOT NULL,
    reached_at timestamptz NOT NULL,
    PRIMARY KEY (order_id, name)
);

CREATE TABLE payments (
    id          text PRIMARY KEY,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    asset       text NOT NULL,
    amount      numeric(30, 10) NOT NULL,
    memo        text NOT NULL DEFAULT '',
    sender      text NOT NULL DEFAULT '',
    received_at timestamptz NOT NULL,
    order_id    text REFERENCES orders (id),
    -- unmatched, matched, late (arrived after the order closed: refund due), refunded
    status      text NOT NULL,
    signaled_at timestamptz,
    created_at  timestamptz NOT NULL
);
CREATE INDEX payments_order_idx ON payments (order_id);
CREATE INDEX payments_unmatched_idx ON payments (created_at) WHERE order_id IS NULL;
CREATE INDEX payments_unsignaled_idx ON payments (created_at) WHERE order_id IS NOT NULL AND signaled_at IS NULL;
