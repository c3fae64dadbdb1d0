package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// booksPage is how many rows ReadBooks reads per query (a variable so
// that a test can page through a few rows).
var booksPage = 1000

// Columns the books read of each table. A refund's envelope is read as a
// mark, not whole: the books only ask whether the service's payout
// recorded one (models.CompareChain).
const (
	bookPaymentCols = "id, mode, asset, amount, status, signaled_at, order_id, refunded_at, refund_tx, sender"
	bookRefundCols  = `id, "key", order_id, mode, payment_ids, reason, amount, asset, status, transaction_hash, ` +
		`destination_address, destination_memo_type, destination_memo, destination_to_sender, ` +
		`CASE WHEN envelope <> '' THEN '` + envelopeMark + `' ELSE '' END AS envelope`
	bookOrderCols = "id, number, mode, status, payment_status, status_reason, cancellation_reason, " +
		"payment_asset, payment_amount, amount_received, refunded_at, refund_tx"
)

// ReadBooks hands the books of mode (both when empty) to k, a page at a
// time: every payment with the refund that returns it whole, every order
// with its credited payments and its refunds of its own money, then the
// rows that name a row not stored. It reads in one transaction, on
// Postgres a read-only repeatable-read snapshot, so the three tables are
// read as of one instant while the service keeps writing; on SQLite the
// transaction holds the one writer's lock while it reads.
//
// Cost: payments and orders are read in pages of booksPage rows by id (an
// index walk of the primary key), each page with one query for its
// refunds (by key, or by order) and, for orders, one for their credited
// payments (a range of order_id); the stray rows are three anti-joins, which find
// none on a healthy database. Only the columns the books use are read,
// and a page at a time is held (k keeps one small record per transaction
// hash claimed).
func (s *Store) ReadBooks(ctx context.Context, mode models.Mode, k models.BookParts) error {
	var opts []*sql.TxOptions
	if s.dialect == DialectPostgres {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	ofOrder := refundReasonsOfOrder()
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		inMode := func(q *gorm.DB, table string) *gorm.DB {
			if mode != "" {
				q = q.Where(table+".mode = ?", string(mode))
			}
			return q
		}
		err := pages(tx, mode, "payments", bookPaymentCols, func(rows []paymentRow) error {
			keys := make([]string, len(rows))
			for i, r := range rows {
				keys[i] = models.PaymentRefundKey(r.ID)
			}
			refunds, err := bookRefunds(inMode(tx.Table("refunds"), "refunds").
				Where(`"key" IN ? AND reason NOT IN ?`, keys, ofOrder))
			if err != nil {
				return err
			}
			byKey := map[string]*models.Refund{}
			for i := range refunds {
				byKey[refunds[i].Key] = &refunds[i]
			}
			for _, r := range rows {
				k.Payment(r.toBook(), byKey[models.PaymentRefundKey(r.ID)])
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading payments: %w", err)
		}

		err = pages(tx, mode, "orders", bookOrderCols, func(rows []orderRow) error {
			// The page's orders are every order of mode from its first id to
			// its last: their rows are a range of the order_id indexes
			// (faster than a probe per id), with those of orders of the
			// other mode in it left out by the lookups below.
			first, last := rows[0].ID, rows[len(rows)-1].ID
			var credited []paymentRow
			err := tx.Table("payments").Select(bookPaymentCols).
				Where("order_id >= ? AND order_id <= ? AND status = ? AND signaled_at IS NOT NULL", first, last, string(models.PaymentStateMatched)).
				Order("id").Find(&credited).Error
			if err != nil {
				return err
			}
			refunds, err := bookRefunds(tx.Table("refunds").Where("order_id >= ? AND order_id <= ? AND reason IN ?", first, last, ofOrder))
			if err != nil {
				return err
			}
			creditedTo := map[string][]models.BookPayment{}
			for _, p := range credited {
				creditedTo[*p.OrderID] = append(creditedTo[*p.OrderID], p.toBook())
			}
			refundsOf := map[string][]models.Refund{}
			for _, r := range refunds {
				refundsOf[r.OrderID] = append(refundsOf[r.OrderID], r)
			}
			for _, r := range rows {
				k.Order(r.toModel(nil, nil), creditedTo[r.ID], refundsOf[r.ID])
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading orders: %w", err)
		}

		// Refunds of an order's own money whose order is not stored, then
		// refunds returning a payment whole that is not stored.
		noOrder := "NOT EXISTS (SELECT 1 FROM orders WHERE orders.id = refunds.order_id)"
		strays, err := bookRefunds(inMode(tx.Table("refunds"), "refunds").
			Where("reason IN ? AND "+noOrder, ofOrder).Order("order_id, id"))
		if err != nil {
			return fmt.Errorf("reading refunds of orders not stored: %w", err)
		}
		for i := 0; i < len(strays); {
			j := i + 1
			for j < len(strays) && strays[j].OrderID == strays[i].OrderID {
				j++
			}
			k.StrayRefunds(strays[i].OrderID, strays[i:j])
			i = j
		}
		prefix := models.PaymentRefundKey("")
		strays, err = bookRefunds(inMode(tx.Table("refunds"), "refunds").
			Where(`reason NOT IN ? AND NOT ("key" LIKE ? AND EXISTS (SELECT 1 FROM payments WHERE payments.id = substr(refunds."key", ?)))`,
				ofOrder, prefix+"%", len(prefix)+1).Order("id"))
		if err != nil {
			return fmt.Errorf("reading refunds of payments not stored: %w", err)
		}
		k.StrayRefunds("", strays)

		var lost []paymentRow
		err = inMode(tx.Table("payments"), "payments").Select(bookPaymentCols).
			Where("status = ? AND signaled_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM orders WHERE orders.id = payments.order_id)",
				string(models.PaymentStateMatched)).Order("id").Find(&lost).Error
		if err != nil {
			return fmt.Errorf("reading payments credited to orders not stored: %w", err)
		}
		for _, p := range lost {
			k.StrayCredit(p.toBook())
		}
		return nil
	}, opts...)
}

// bookRefunds reads the refunds q selects, in the books' columns.
func bookRefunds(q *gorm.DB) ([]models.Refund, error) {
	var rows []refundRow
	if err := q.Select(bookRefundCols).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]models.Refund, 0, len(rows))
	for _, row := range rows {
		r, err := row.toModel()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// toBook is the payment as the books read it.
func (r paymentRow) toBook() models.BookPayment {
	p := models.BookPayment{ID: r.ID, Mode: models.Mode(r.Mode), Asset: r.Asset, Amount: r.Amount,
		State: models.PaymentState(r.Status), Signaled: r.SignaledAt != nil,
		RefundedAt: utcPtr(r.RefundedAt), RefundTx: r.RefundTx, Sender: r.Sender}
	if r.OrderID != nil {
		p.OrderID = *r.OrderID
	}
	return p
}

// envelopeMark stands for a refund's recorded envelope in the books.
const envelopeMark = "recorded"

// pages reads table's rows of mode (all when empty), columns cols, in
// pages of booksPage by id, handing each page to each.
func pages[R any, P interface {
	*R
	rowID() string
}](tx *gorm.DB, mode models.Mode, table, cols string, each func([]R) error) error {
	after := ""
	for {
		q := tx.Table(table).Select(cols).Where("id > ?", after)
		if mode != "" {
			q = q.Where("mode = ?", string(mode))
		}
		var rows []R
		if err := q.Order("id").Limit(booksPage).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		if err := each(rows); err != nil {
			return err
		}
		if len(rows) < booksPage {
			return nil
		}
		after = P(&rows[len(rows)-1]).rowID()
	}
}

func (r *paymentRow) rowID() string { return r.ID }
func (r *orderRow) rowID() string   { return r.ID }

// booksCheckRow is the one row of books_checks.
type booksCheckRow struct {
	CheckedAt         *time.Time
	TestDiscrepancies int
	LiveDiscrepancies int
}

// ClaimBooksCheck claims the next check of the books for this process,
// as of now: true when no process claimed one within every before now,
// so that one process of a deployment reads the books per period. A
// claimer that dies lets another claim after every.
func (s *Store) ClaimBooksCheck(ctx context.Context, now time.Time, every time.Duration) (bool, error) {
	res := s.db.WithContext(ctx).Table("books_checks").
		Where("id = 1 AND (claimed_at IS NULL OR claimed_at <= ?)", now.Add(-every).UTC()).
		Update("claimed_at", now.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("claiming the check of the books: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RecordBooksCheck records c as the last check of the books.
func (s *Store) RecordBooksCheck(ctx context.Context, c models.BooksCheck) error {
	err := s.db.WithContext(ctx).Table("books_checks").Where("id = 1").Updates(map[string]any{
		"checked_at":         c.CheckedAt.UTC(),
		"test_discrepancies": c.Discrepancies[models.ModeTest],
		"live_discrepancies": c.Discrepancies[models.ModeLive],
	}).Error
	if err != nil {
		return fmt.Errorf("recording the check of the books: %w", err)
	}
	return nil
}

// LastBooksCheck answers the last check of the books recorded, with a
// zero CheckedAt before the first.
func (s *Store) LastBooksCheck(ctx context.Context) (models.BooksCheck, error) {
	var row booksCheckRow
	if err := s.db.WithContext(ctx).Table("books_checks").
		Select("checked_at, test_discrepancies, live_discrepancies").Where("id = 1").Take(&row).Error; err != nil {
		return models.BooksCheck{}, fmt.Errorf("reading the last check of the books: %w", err)
	}
	c := models.BooksCheck{Discrepancies: map[models.Mode]int{
		models.ModeTest: row.TestDiscrepancies, models.ModeLive: row.LiveDiscrepancies}}
	if row.CheckedAt != nil {
		c.CheckedAt = row.CheckedAt.UTC()
	}
	return c, nil
}
