-- Every fact is kept as an event for the events API (see the Postgres
-- migration of the same number). SQLite runs one write transaction at a
-- time, so the order events were written in is the order they were
-- committed in: txid is always 0 and seq, the next number, is given by a
-- trigger on insert (the rows there were keep their insertion order).
ALTER TABLE webhook_events ADD COLUMN txid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_events ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_events SET seq = rowid;
CREATE TRIGGER webhook_events_seq AFTER INSERT ON webhook_events WHEN NEW.seq = 0
BEGIN
    UPDATE webhook_events SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM webhook_events) WHERE id = NEW.id;
END;
CREATE INDEX webhook_events_seq_idx ON webhook_events (seq);
CREATE INDEX webhook_events_list_idx ON webhook_events (account_id, mode, txid, seq);
CREATE INDEX webhook_events_order_idx ON webhook_events (order_id, txid, seq);
CREATE INDEX webhook_events_recorded_idx ON webhook_events (recorded_at);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id);
