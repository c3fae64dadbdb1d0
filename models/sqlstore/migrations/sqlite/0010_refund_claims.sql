-- The payer's claim links (see the Postgres migration of the same number).
CREATE TABLE refund_claims (
    refund_id   TEXT NOT NULL PRIMARY KEY REFERENCES refunds (id),
    token_hash  TEXT NOT NULL UNIQUE,
    token       TEXT NOT NULL,
    issued_at   DATETIME NOT NULL,
    expires_at  DATETIME NOT NULL,
    taken_until DATETIME
);
