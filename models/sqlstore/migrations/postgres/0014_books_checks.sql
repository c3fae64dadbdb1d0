-- The last check of the books (memocart reconcile's, run for the metrics):
-- one row, so that one process of a deployment checks them per period
-- (it claims the row: claimed_at) and every process reports the counts
-- of the last check (memocart_reconcile_discrepancies).
CREATE TABLE books_checks (
    id                 integer PRIMARY KEY CHECK (id = 1),
    claimed_at         timestamptz,
    checked_at         timestamptz,
    test_discrepancies integer NOT NULL DEFAULT 0,
    live_discrepancies integer NOT NULL DEFAULT 0
);
INSERT INTO books_checks (id) VALUES (1);
