-- See the Postgres migration of the same number.
CREATE INDEX orders_open_idx ON orders (status, updated_at) WHERE status IN ('created', 'paid', 'ordered', 'shipped');
CREATE INDEX refunds_sent_idx ON refunds (sent_at) WHERE status = 'sent';
