-- The operator's metrics count the orders still on their way by status
-- and age each minute (sqlstore.OpsSnapshot): this index holds those
-- orders only, so the count stays small however many orders have ended.
-- The payout's coverage sums the refunds sent in the last days
-- (sqlstore.RefundsSentSince): a range of this index.
CREATE INDEX orders_open_idx ON orders (status, updated_at) WHERE status IN ('created', 'paid', 'ordered', 'shipped');
CREATE INDEX refunds_sent_idx ON refunds (sent_at) WHERE status = 'sent';
