-- Webhooks: the endpoints accounts register, the events recorded for them
-- (an outbox: written in the transaction of the fact they describe,
-- dispatched to a Temporal workflow afterwards), and every delivery attempt.
CREATE TABLE webhook_endpoints (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id),
    mode            text NOT NULL CHECK (mode IN ('test', 'live')),
    url             text NOT NULL,
    description     text NOT NULL DEFAULT '',
    -- Space-separated event types, or '*' for all.
    enabled_events  text NOT NULL,
    -- The signing secret, encrypted when the deployment has a key
    -- ("v1:" prefix; see secrets.go), else "plain:" and the secret.
    secret          text NOT NULL,
    created_at      timestamptz NOT NULL,
    disabled_at     timestamptz,
    disabled_reason text NOT NULL DEFAULT '',
    deleted_at      timestamptz,
    last_success_at timestamptz
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, mode) WHERE deleted_at IS NULL;

CREATE TABLE webhook_events (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id),
    mode          text NOT NULL CHECK (mode IN ('test', 'live')),
    type          text NOT NULL,
    order_id      text REFERENCES orders (id),
    payment_id    text NOT NULL DEFAULT '',
    -- When the fact happened (in the body); when the row was written.
    created_at    timestamptz NOT NULL,
    recorded_at   timestamptz NOT NULL,
    -- The body delivered: the event with its object as it was.
    payload       text NOT NULL,
    -- Outbox marker: NULL until the event's delivery workflow exists.
    dispatched_at timestamptz
);
CREATE INDEX webhook_events_pending_idx ON webhook_events (recorded_at) WHERE dispatched_at IS NULL;
CREATE INDEX webhook_events_order_pending_idx ON webhook_events (order_id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_attempts (
    delivery_id     text NOT NULL,
    attempt         integer NOT NULL CHECK (attempt > 0),
    event_id        text NOT NULL REFERENCES webhook_events (id),
    endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id),
    -- The delivery workflow's id, for operators.
    dispatch        text NOT NULL,
    resend          boolean NOT NULL DEFAULT false,
    attempted_at    timestamptz NOT NULL,
    succeeded       boolean NOT NULL,
    response_status integer NOT NULL DEFAULT 0,
    error           text NOT NULL DEFAULT '',
    duration_ms     integer NOT NULL DEFAULT 0,
    next_retry_at   timestamptz,
    PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, attempted_at);
