-- Live marketplaces: each cart line keeps a snapshot of the listing it was
-- priced from; each order keeps the most its buying provider may spend and
-- the provider's latest report on it (reference, merchant orders, parcels
-- with checkpoints, what it charged), as one JSON document read with the
-- order.
ALTER TABLE cart_items
    ADD COLUMN currency    text NOT NULL DEFAULT '',
    ADD COLUMN upstream_id text NOT NULL DEFAULT '',
    ADD COLUMN variation   text NOT NULL DEFAULT '',
    ADD COLUMN listing     text NOT NULL DEFAULT '';

ALTER TABLE orders
    ADD COLUMN supplier_budget numeric(20, 8) NOT NULL DEFAULT 0,
    ADD COLUMN supplier_ref    text NOT NULL DEFAULT '',
    ADD COLUMN fulfilment      text NOT NULL DEFAULT '';
-- Provider webhooks name the provider's order; operators search by it too.
CREATE INDEX orders_supplier_ref_idx ON orders (supplier_ref) WHERE supplier_ref <> '';
