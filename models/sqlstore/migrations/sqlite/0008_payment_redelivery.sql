-- Redelivery of matched payments their workflow has not recorded yet: how
-- many times a reconciler has signalled each again, and when the next may
-- be. Every replica's reconciler claims a redelivery with a compare-and-set
-- on redeliveries, so each one is signalled by one replica, and the wait
-- between them grows (ClaimPaymentRedeliveries).
ALTER TABLE payments ADD COLUMN redeliveries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE payments ADD COLUMN redeliver_after DATETIME;
