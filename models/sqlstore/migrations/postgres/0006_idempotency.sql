-- Idempotency-Key records of POST requests under /v1 (package api's
-- idempotency middleware). One row per key, per account and mode: the
-- primary key makes the reservation atomic across API replicas.
CREATE TABLE idempotency_keys (
    account_id      text NOT NULL REFERENCES accounts (id),
    mode            text NOT NULL CHECK (mode IN ('test', 'live')),
    idempotency_key text NOT NULL,
    -- The request that holds the key: its fingerprint (method, path and
    -- body) decides "same request"; method and path are for messages.
    request_method  text NOT NULL,
    request_path    text NOT NULL,
    request_hash    text NOT NULL,
    -- in_flight: being processed; released: answered 5xx, may run again;
    -- done: answered, response kept for replay.
    state           text NOT NULL CHECK (state IN ('in_flight', 'released', 'done')),
    -- One reservation of the key: only its holder completes or releases it.
    token           text NOT NULL,
    reserved_at     timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    response_status integer,
    response_header text NOT NULL DEFAULT '',
    response_body   bytea,
    completed_at    timestamptz,
    PRIMARY KEY (account_id, mode, idempotency_key)
);
-- The periodic purge of expired keys.
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
