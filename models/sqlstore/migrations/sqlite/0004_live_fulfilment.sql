-- Live marketplaces (see the Postgres migration of the same number).
-- SQLite: money is exact decimal TEXT; one column per ALTER.
ALTER TABLE cart_items ADD COLUMN currency TEXT NOT NULL DEFAULT '';
ALTER TABLE cart_items ADD COLUMN upstream_id TEXT NOT NULL DEFAULT '';
ALTER TABLE cart_items ADD COLUMN variation TEXT NOT NULL DEFAULT '';
ALTER TABLE cart_items ADD COLUMN listing TEXT NOT NULL DEFAULT '';

ALTER TABLE orders ADD COLUMN supplier_budget TEXT NOT NULL DEFAULT '0';
ALTER TABLE orders ADD COLUMN supplier_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN fulfilment TEXT NOT NULL DEFAULT '';
CREATE INDEX orders_supplier_ref_idx ON orders (supplier_ref) WHERE supplier_ref <> '';
