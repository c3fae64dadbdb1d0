-- Accounts, their API keys, and priced carts. Money is TEXT holding the
-- exact decimal string: SQLite's NUMERIC affinity would turn it into a
-- float. Times are DATETIME so the driver returns time.Time.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at DATETIME NOT NULL
);

CREATE TABLE api_keys (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    key_hash       TEXT NOT NULL UNIQUE,
    mode           TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    tier           TEXT NOT NULL CHECK (tier IN ('free', 'pro', 'enterprise')),
    per_minute     INTEGER NOT NULL DEFAULT 0 CHECK (per_minute >= 0),
    display_prefix TEXT NOT NULL,
    last4          TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    revoked_at     DATETIME
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id);

CREATE TABLE carts (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),
    mode                TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    status              TEXT NOT NULL,
    currency            TEXT NOT NULL,
    ship_to_country     TEXT NOT NULL,
    ship_to_postal_code TEXT NOT NULL DEFAULT '',
    subtotal            TEXT NOT NULL,
    shipping            TEXT NOT NULL,
    tax                 TEXT NOT NULL,
    service_fee         TEXT NOT NULL,
    total               TEXT NOT NULL,
    created_at          DATETIME NOT NULL,
    expires_at          DATETIME NOT NULL
);
CREATE INDEX carts_account_idx ON carts (account_id, mode, created_at);

CREATE TABLE cart_items (
    cart_id     TEXT NOT NULL REFERENCES carts (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    product_url TEXT NOT NULL,
    marketplace TEXT NOT NULL,
    product_id  TEXT NOT NULL,
    title       TEXT NOT NULL,
    image_url   TEXT NOT NULL,
    quantity    INTEGER NOT NULL CHECK (quantity > 0),
    unit_price  TEXT NOT NULL,
    line_total  TEXT NOT NULL,
    PRIMARY KEY (cart_id, position)
);
