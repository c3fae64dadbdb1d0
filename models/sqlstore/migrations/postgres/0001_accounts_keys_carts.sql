-- Accounts, their API keys, and priced carts.
CREATE TABLE accounts (
    id         text PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id             text PRIMARY KEY,
    account_id     text NOT NULL REFERENCES accounts (id),
    key_hash       text NOT NULL UNIQUE,
    mode           text NOT NULL CHECK (mode IN ('test', 'live')),
    tier           text NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    per_minute     integer NOT NULL DEFAULT 0 CHECK (per_minute >= 0),
    display_prefix text NOT NULL,
    last4          text NOT NULL,
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id);

CREATE TABLE carts (
    id                  text PRIMARY KEY,
    account_id          text NOT NULL REFERENCES accounts (id),
    mode                text NOT NULL CHECK (mode IN ('test', 'live')),
    status              text NOT NULL,
    currency            char(3) NOT NULL,
    ship_to_country     char(2) NOT NULL,
    ship_to_postal_code text NOT NULL DEFAULT '',
    subtotal            numeric(20, 8) NOT NULL,
    shipping            numeric(20, 8) NOT NULL,
    tax                 numeric(20, 8) NOT NULL,
    service_fee         numeric(20, 8) NOT NULL,
    total               numeric(20, 8) NOT NULL,
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL
);
CREATE INDEX carts_account_idx ON carts (account_id, mode, created_at);

CREATE TABLE cart_items (
    cart_id     text NOT NULL REFERENCES carts (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    product_url text NOT NULL,
    marketplace text NOT NULL,
    product_id  text NOT NULL,
    title       text NOT NULL,
    image_url   text NOT NULL,
    quantity    integer NOT NULL CHECK (quantity > 0),
    unit_price  numeric(20, 8) NOT NULL,
    line_total  numeric(20, 8) NOT NULL,
    PRIMARY KEY (cart_id, position)
);
