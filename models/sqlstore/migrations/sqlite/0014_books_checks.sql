-- The last check of the books (see the Postgres migration of the same number).
CREATE TABLE books_checks (
    id                 INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    claimed_at         DATETIME,
    checked_at         DATETIME,
    test_discrepancies INTEGER NOT NULL DEFAULT 0,
    live_discrepancies INTEGER NOT NULL DEFAULT 0
);
INSERT INTO books_checks (id) VALUES (1);
