package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// OpsSnapshot reads what an operator's metrics show as of now (see
// models.OpsSnapshot). Its cost does not grow with the orders, payments
// and events that have ended: those are counted on indexes of the rows
// still waiting (orders_open_idx, the payments' status index, the events'
// pending index), and each oldest row is one index lookup. The refunds
// are counted and summed in one grouped scan of their table: one row per
// refund, which only a small share of orders owes.
func (s *Store) OpsSnapshot(ctx context.Context, now time.Time) (models.OpsSnapshot, error) {
	snap := models.OpsSnapshot{At: now.UTC()}
	db := s.db.WithContext(ctx)
	steps := []func(*gorm.DB, *models.OpsSnapshot, time.Time) error{opsRefunds, opsUnmatched, opsStuckOrders, opsWebhooks}
	for _, step := range steps {
		if err := step(db, &snap, now); err != nil {
			return models.OpsSnapshot{}, fmt.Errorf("reading the operator's metrics: %w", err)
		}
	}
	return snap, nil
}

type groupCount struct {
	Mode   string
	Status string
	Asset  string
	N      int
	Amount decimal.NullDecimal
}

// oldest reads the one timestamp column col of the oldest row q selects,
// by col; zero without one.
func oldest(q *gorm.DB, col string) (time.Time, error) {
	var row struct{ At time.Time }
	err := q.Select(col + " AS at").Order(col).Limit(1).Take(&row).Error
	if err == gorm.ErrRecordNotFound {
		return time.Time{}, nil
	}
	return row.At.UTC(), err
}

func opsRefunds(db *gorm.DB, snap *models.OpsSnapshot, _ time.Time) error {
	var groups []groupCount
	if err := db.Table("refunds").Select("mode, status, asset, count(*) AS n, sum(amount) AS amount").
		Group("mode, status, asset").Scan(&groups).Error; err != nil {
		return err
	}
	for _, g := range groups {
		ops, st := snap.Mode(models.Mode(g.Mode)), models.RefundStatus(g.Status)
		ops.Refunds[st] += g.N
		if !st.Settled() && g.Amount.Valid {
			ops.RefundsOwed[g.Asset] = ops.RefundsOwed[g.Asset].Add(g.Amount.Decimal)
		}
	}
	for _, m := range models.Modes {
		for _, st := range models.RefundStatuses {
			if st.Settled() {
				continue
			}
			at, err := oldest(db.Table("refunds").Where("status = ? AND mode = ?", string(st), string(m)), "updated_at")
			if err != nil {
				return err
			}
			if !at.IsZero() {
				snap.Mode(m).RefundsOldest[st] = at
			}
		}
	}
	return nil
}

func opsUnmatched(db *gorm.DB, snap *models.OpsSnapshot, _ time.Time) error {
	var groups []groupCount
	if err := db.Table("payments").Select("mode, asset, count(*) AS n, sum(amount) AS amount").
		Where("status = ?", PaymentUnmatched).Group("mode, asset").Scan(&groups).Error; err != nil {
		return err
	}
	for _, g := range groups {
		ops := snap.Mode(models.Mode(g.Mode))
		ops.Unmatched += g.N
		if g.Amount.Valid {
			ops.UnmatchedOwed[g.Asset] = ops.UnmatchedOwed[g.Asset].Add(g.Amount.Decimal)
		}
	}
	for _, m := range models.Modes {
		at, err := oldest(db.Table("payments").Where("status = ? AND mode = ?", PaymentUnmatched, string(m)), "created_at")
		if err != nil {
			return err
		}
		snap.Mode(m).UnmatchedOldest = at
	}
	return nil
}

// stuckOrders is the count of the orders stuck as of now, by mode and
// status. The status list repeats the index's predicate, so the planner
// takes the partial index of open orders (TestStuckOrdersReadOpenOrdersOnly).
func stuckOrders(db *gorm.DB, now time.Time) *gorm.DB {
	open := make([]string, len(models.OpenStatuses))
	stuck := db.Where("1 = 0")
	for i, st := range models.OpenStatuses {
		open[i] = string(st)
		after, _ := models.StuckAfter(st)
		col := "updated_at"
		if st == models.OrderCreated {
			col = "payment_expires_at" // measured from its deadline
		}
		stuck = stuck.Or("status = ? AND "+col+" < ?", string(st), now.Add(-after).UTC())
	}
	return db.Table("orders").Select("mode, status, count(*) AS n").Where("status IN ?", open).Where(stuck).Group("mode, status")
}

// StuckOrdersPlan is Postgres's plan of the stuck orders' count, for the
// test that holds it to the index of open orders.
func (s *Store) StuckOrdersPlan(ctx context.Context, now time.Time) (string, error) {
	if s.dialect != DialectPostgres {
		return "", errors.New("query plans are read on Postgres only")
	}
	var groups []groupCount
	stmt := stuckOrders(s.db.WithContext(ctx).Session(&gorm.Session{DryRun: true}), now).Scan(&groups).Statement
	var lines []string
	if err := s.db.WithContext(ctx).Raw("EXPLAIN (COSTS OFF) "+stmt.SQL.String(), stmt.Vars...).Scan(&lines).Error; err != nil {
		return "", fmt.Errorf("explaining the stuck orders' count: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}

func opsStuckOrders(db *gorm.DB, snap *models.OpsSnapshot, now time.Time) error {
	var groups []groupCount
	if err := stuckOrders(db, now).Scan(&groups).Error; err != nil {
		return err
	}
	for _, g := range groups {
		snap.Mode(models.Mode(g.Mode)).OrdersStuck[models.OrderStatus(g.Status)] += g.N
	}
	return nil
}

// countPerMode counts the rows of table where holds in each mode and adds
// each count to that mode's part of snap.
func countPerMode(db *gorm.DB, table, where string, add func(ops *models.ModeOps, n int), snap *models.OpsSnapshot) error {
	var groups []groupCount
	if err := db.Table(table).Select("mode, count(*) AS n").Where(where).Group("mode").Scan(&groups).Error; err != nil {
		return err
	}
	for _, g := range groups {
		add(snap.Mode(models.Mode(g.Mode)), g.N)
	}
	return nil
}

func opsWebhooks(db *gorm.DB, snap *models.OpsSnapshot, _ time.Time) error {
	if err := countPerMode(db, "webhook_endpoints", "disabled_at IS NOT NULL AND deleted_at IS NULL", func(ops *models.ModeOps, n int) {
		ops.EndpointsDisabled += n
	}, snap); err != nil {
		return err
	}
	if err := countPerMode(db, "webhook_events", "dispatched_at IS NULL", func(ops *models.ModeOps, n int) {
		ops.EventsWaiting += n
	}, snap); err != nil {
		return err
	}
	for _, m := range models.Modes {
		at, err := oldest(db.Table("webhook_events").Where("dispatched_at IS NULL AND mode = ?", string(m)), "recorded_at")
		if err != nil {
			return err
		}
		snap.Mode(m).EventsOldestWaiting = at
	}
	return nil
}

// RefundsSentSince sums the refunds of mode sent at since or later, by
// asset: the recent rate at which the payout account pays out. It reads a
// range of refunds_sent_idx.
func (s *Store) RefundsSentSince(ctx context.Context, mode models.Mode, since time.Time) (map[string]decimal.Decimal, error) {
	var groups []groupCount
	if err := s.db.WithContext(ctx).Table("refunds").Select("asset, sum(amount) AS amount").
		Where("status = ? AND sent_at >= ? AND mode = ?", string(models.RefundSent), since.UTC(), string(mode)).
		Group("asset").Scan(&groups).Error; err != nil {
		return nil, fmt.Errorf("summing the refunds sent since %s: %w", since.Format(time.RFC3339), err)
	}
	out := map[string]decimal.Decimal{}
	for _, g := range groups {
		if g.Amount.Valid {
			out[g.Asset] = g.Amount.Decimal
		}
	}
	return out, nil
}
