package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// committedEvents is the events API's view of webhook_events: the events
// every transaction older than the oldest one still running has written
// (Postgres: txid below the snapshot's xmin). An event is listed only once
// no event can still commit before it in (txid, seq) order, so a client
// that pages forward from the newest event it saw never skips one. A long
// write transaction anywhere in the database holds newer events back
// until it ends. SQLite runs one write transaction at a time: what it
// reads is committed in order.
func (s *Store) committedEvents(db *gorm.DB) *gorm.DB {
	tx := db.Table("webhook_events AS e")
	if s.dialect == DialectPostgres {
		tx = tx.Where("e.txid < pg_snapshot_xmin(pg_current_snapshot())")
	}
	return tx
}

// ListEvents returns a page of an account's events in a mode, newest
// first in commit order, with their bodies as a delivery at now would
// send them (deliveredBody), and whether more events follow the page in
// its direction (older ones, or with EndingBefore newer ones).
//
// The page is one range read of webhook_events_list_idx (account_id,
// mode, txid, seq), or of webhook_events_order_idx for one order, past
// the cursor; type and time filters are checked on the rows read.
func (s *Store) ListEvents(ctx context.Context, q models.EventListQuery, now time.Time) ([]models.Event, bool, error) {
	db := s.db.WithContext(ctx)
	tx := s.committedEvents(db).Select("e.*").Where("e.account_id = ? AND e.mode = ?", q.AccountID, string(q.Mode))
	if len(q.Types) > 0 {
		types := make([]string, len(q.Types))
		for i, t := range q.Types {
			types[i] = string(t)
		}
		tx = tx.Where("e.type IN ?", types)
	}
	if q.OrderID != "" {
		tx = tx.Where("e.order_id = ?", q.OrderID)
	}
	tx = createdBetween(tx, "e", q.CreatedGTE, q.CreatedLTE)
	// Keyset pagination on (txid, seq), read from the cursor's own row.
	const cursor = "(SELECT c.txid, c.seq FROM webhook_events c WHERE c.id = ? AND c.account_id = ? AND c.mode = ?)"
	cursorID, newer := q.StartingAfter, false
	switch {
	case q.EndingBefore != "":
		cursorID, newer = q.EndingBefore, true
		tx = tx.Where("(e.txid, e.seq) > "+cursor, cursorID, q.AccountID, string(q.Mode)).Order("e.txid, e.seq")
	case q.StartingAfter != "":
		tx = tx.Where("(e.txid, e.seq) < "+cursor, cursorID, q.AccountID, string(q.Mode)).Order("e.txid DESC, e.seq DESC")
	default:
		tx = tx.Order("e.txid DESC, e.seq DESC")
	}
	var rows []webhookEventRow
	if err := tx.Limit(q.Limit + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("listing events: %w", err)
	}
	if len(rows) == 0 && cursorID != "" {
		// A cursor that names no event of the account reads as an empty
		// page; only then is it worth a second query to tell.
		if _, err := s.EventForAccount(ctx, q.AccountID, q.Mode, cursorID, now); err != nil {
			return nil, false, err
		}
	}
	more := len(rows) > q.Limit
	if more {
		rows = rows[:q.Limit]
	}
	if newer {
		// Read oldest first from the cursor; shown newest first.
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	out := make([]models.Event, len(rows))
	for i, r := range rows {
		ev := r.toModel()
		var err error
		if ev.Payload, err = s.deliveredBody(db, ev, now); err != nil {
			return nil, false, err
		}
		out[i] = ev
	}
	return out, more, nil
}

// EventForAccount returns one of an account's events in a mode, with its
// body as a delivery at now would send it, or models.ErrEventNotFound
// (also another account's or mode's). An event is readable once
// committed, even before it is listed (committedEvents): a receiver may
// look up the event a webhook just delivered, and a page that ends before
// it is then empty until it is listed, never one that skips an event.
func (s *Store) EventForAccount(ctx context.Context, accountID string, mode models.Mode, id string, now time.Time) (models.Event, error) {
	db := s.db.WithContext(ctx)
	r, err := take[webhookEventRow](db.Where("id = ? AND account_id = ? AND mode = ?", id, accountID, string(mode)), models.ErrEventNotFound, "event")
	if err != nil {
		return models.Event{}, err
	}
	ev := r.toModel()
	if ev.Payload, err = s.deliveredBody(db, ev, now); err != nil {
		return models.Event{}, err
	}
	return ev, nil
}

// PruneEvents deletes up to batch events recorded before cutoff, oldest
// first, with their delivery attempts, in one transaction, and returns
// how many it deleted. Events still waiting for their dispatch are kept:
// their deliveries are owed. Run it again while it returns batch.
func (s *Store) PruneEvents(ctx context.Context, cutoff time.Time, batch int) (int, error) {
	n := 0
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		err := tx.Model(&webhookEventRow{}).Where("recorded_at < ? AND dispatched_at IS NOT NULL", cutoff.UTC()).
			Order("recorded_at").Limit(batch).Pluck("id", &ids).Error
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.Where("event_id IN ?", ids).Delete(&webhookAttemptRow{}).Error; err != nil {
			return err
		}
		res := tx.Where("id IN ?", ids).Delete(&webhookEventRow{})
		n = int(res.RowsAffected)
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("pruning events: %w", err)
	}
	return n, nil
}
