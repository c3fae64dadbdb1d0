-- The operator's metrics count the orders still on their way by status
-- and age each minute (sqlstore.OpsSnapshot): this index holds those
-- orders only, so the count stays small however many orders have ended.
CREATE INDEX orders_open_idx ON orders (status, updated_at) WHERE status IN ('created', 'paid', 'ordered', 'shipped');
