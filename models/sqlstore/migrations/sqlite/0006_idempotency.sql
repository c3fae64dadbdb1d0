-- Idempotency-Key records of POST requests (see the Postgres migration of
-- the same number).
CREATE TABLE idempotency_keys (
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    mode            TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    idempotency_key TEXT NOT NULL,
    request_method  TEXT NOT NULL,
    request_path    TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_flight', 'released', 'done')),
    token           TEXT NOT NULL,
    reserved_at     DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    response_status INTEGER,
    response_header TEXT NOT NULL DEFAULT '',
    response_body   BLOB,
    completed_at    DATETIME,
    PRIMARY KEY (account_id, mode, idempotency_key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
