-- The payer's claim links (models.RefundClaim, a refund's claim_url): at
-- most one per refund, for a refund that waits for its destination. A new
-- claim replaces the row; setting the destination (through the link or
-- otherwise) deletes it, in the transaction that writes the refund.
CREATE TABLE refund_claims (
    refund_id   text PRIMARY KEY REFERENCES refunds (id),
    -- Hex SHA-256 of the token: how a link finds its refund. The token
    -- itself is 256 random bits, so a plain hash is enough.
    token_hash  text NOT NULL UNIQUE,
    -- The token, sealed like a webhook endpoint's secret (secrets.go:
    -- "v1:" under MEMOCART_WEBHOOK_SECRETS_KEY, bound to the refund id;
    -- "plain:" without a key), so the API can show claim_url again.
    token       text NOT NULL,
    issued_at   timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    -- A submission through the link holds it until then while the
    -- refund's workflow sets the destination, so two at once set one.
    taken_until timestamptz
);
