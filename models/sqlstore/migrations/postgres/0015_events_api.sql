-- Every fact is kept as an event for the events API (GET /v1/events), not
-- only those a webhook endpoint subscribes to, for the retention
-- MEMOCART_EVENT_RETENTION gives.
--
-- The API lists an account's events in the order they were committed, so
-- that a client catching up from the last event it saw never skips one:
-- txid is the recording transaction's id, and the list shows only events
-- of transactions older than every one still running
-- (pg_snapshot_xmin), so an event committed later always sorts after the
-- ones already listed; seq orders the events of one transaction as they
-- were written.
ALTER TABLE webhook_events ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE webhook_events ADD COLUMN seq bigserial;
-- SQLite numbers seq from its largest value (see its migration).
CREATE INDEX webhook_events_seq_idx ON webhook_events (seq);
CREATE INDEX webhook_events_list_idx ON webhook_events (account_id, mode, txid, seq);
CREATE INDEX webhook_events_order_idx ON webhook_events (order_id, txid, seq);
-- Pruning takes the oldest events first, with their delivery attempts.
CREATE INDEX webhook_events_recorded_idx ON webhook_events (recorded_at);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id);
