-- Webhooks (see the Postgres migration of the same number).
-- SQLite: times DATETIME, booleans INTEGER 0/1.
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    url             TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    enabled_events  TEXT NOT NULL,
    secret          TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    disabled_at     DATETIME,
    disabled_reason TEXT NOT NULL DEFAULT '',
    deleted_at      DATETIME,
    last_success_at DATETIME
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, mode) WHERE deleted_at IS NULL;

CREATE TABLE webhook_events (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    type          TEXT NOT NULL,
    order_id      TEXT REFERENCES orders (id),
    payment_id    TEXT NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    recorded_at   DATETIME NOT NULL,
    payload       TEXT NOT NULL,
    dispatched_at DATETIME
);
CREATE INDEX webhook_events_pending_idx ON webhook_events (recorded_at) WHERE dispatched_at IS NULL;
CREATE INDEX webhook_events_order_pending_idx ON webhook_events (order_id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_attempts (
    delivery_id     TEXT NOT NULL,
    attempt         INTEGER NOT NULL CHECK (attempt > 0),
    event_id        TEXT NOT NULL REFERENCES webhook_events (id),
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id),
    dispatch        TEXT NOT NULL,
    resend          INTEGER NOT NULL DEFAULT 0,
    attempted_at    DATETIME NOT NULL,
    succeeded       INTEGER NOT NULL,
    response_status INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    next_retry_at   DATETIME,
    PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, attempted_at);
