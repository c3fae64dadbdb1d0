-- What the service's refunds have returned of an order's money in its own
-- asset (sent or settled another way), kept with the order's payment
-- status as its refunds move, so every read of an order (one, a list, an
-- event) says what is still due back without reading its refunds.
ALTER TABLE orders ADD COLUMN amount_refunded TEXT NOT NULL DEFAULT '0';
