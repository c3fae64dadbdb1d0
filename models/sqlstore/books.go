package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/memocart/memocart/models"
)

// booksPage is how many rows Books reads per query (a variable so that a
// test can page through a few rows).
var booksPage = 1000

// Books reads what models.Reconcile needs, of one mode (both when mode is
// empty): every payment, every refund, and every order a payment or a
// refund reached. It reads in one transaction, on Postgres a read-only
// repeatable-read snapshot, so the three tables are read as of one
// instant while the service keeps writing; on SQLite the transaction
// holds the one writer's lock while it reads.
//
// Cost: payments and refunds are read in pages of booksPage rows by id
// (an index walk of the primary key), orders by id in batches of
// booksPage; only the columns the books use are read. Every row read is
// held in memory (a few hundred bytes per payment, refund and order), since
// Reconcile sets each payment against its order and refunds.
func (s *Store) Books(ctx context.Context, mode models.Mode) (models.Books, error) {
	var b models.Books
	var opts []*sql.TxOptions
	if s.dialect == DialectPostgres {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		orderIDs := map[string]bool{}
		err := pages(tx, mode, "payments", "id, mode, asset, amount, status, signaled_at, order_id, refunded_at, refund_tx, sender",
			func(rows []paymentRow) {
				for _, r := range rows {
					p := models.BookPayment{ID: r.ID, Mode: models.Mode(r.Mode), Asset: r.Asset, Amount: r.Amount,
						State: models.PaymentState(r.Status), Signaled: r.SignaledAt != nil,
						RefundedAt: utcPtr(r.RefundedAt), RefundTx: r.RefundTx, Sender: r.Sender}
					if r.OrderID != nil {
						p.OrderID = *r.OrderID
						orderIDs[p.OrderID] = true
					}
					b.Payments = append(b.Payments, p)
				}
			})
		if err != nil {
			return fmt.Errorf("reading payments: %w", err)
		}
		var convErr error
		// The envelope is read as a mark, not whole: the books only ask
		// whether the service's payout recorded one (models.CompareChain).
		err = pages(tx, mode, "refunds", `id, "key", order_id, mode, payment_ids, reason, amount, asset, status, transaction_hash, `+
			`destination_address, destination_memo_type, destination_memo, destination_to_sender, `+
			`CASE WHEN envelope <> '' THEN '`+envelopeMark+`' ELSE '' END AS envelope`,
			func(rows []refundRow) {
				for _, row := range rows {
					r, err := row.toModel()
					if err != nil && convErr == nil {
						convErr = err
					}
					if r.OrderID != "" {
						orderIDs[r.OrderID] = true
					}
					b.Refunds = append(b.Refunds, r)
				}
			})
		if err == nil {
			err = convErr
		}
		if err != nil {
			return fmt.Errorf("reading refunds: %w", err)
		}

		ids := make([]string, 0, len(orderIDs))
		for id := range orderIDs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for batch := range slices.Chunk(ids, booksPage) {
			var rows []orderRow
			err := tx.Select("id, number, mode, status, payment_status, status_reason, cancellation_reason, "+
				"payment_asset, payment_amount, amount_received, refunded_at, refund_tx").
				Where("id IN ?", batch).Order("id").Find(&rows).Error
			if err != nil {
				return fmt.Errorf("reading orders: %w", err)
			}
			for _, r := range rows {
				b.Orders = append(b.Orders, r.toModel(nil, nil))
			}
		}
		return nil
	}, opts...)
	if err != nil {
		return models.Books{}, err
	}
	return b, nil
}

// envelopeMark stands for a refund's recorded envelope in the books.
const envelopeMark = "recorded"

// pages reads table's rows of mode (all when empty), columns cols, in
// pages of booksPage by id, handing each page to each.
func pages[R any, P interface {
	*R
	rowID() string
}](tx *gorm.DB, mode models.Mode, table, cols string, each func([]R)) error {
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
		each(rows)
		if len(rows) < booksPage {
			return nil
		}
		after = P(&rows[len(rows)-1]).rowID()
	}
}

func (r *paymentRow) rowID() string { return r.ID }
func (r *refundRow) rowID() string  { return r.ID }
