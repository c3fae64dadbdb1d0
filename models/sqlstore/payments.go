package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

// Payment dispositions, stored in payments.status: the models.PaymentState
// vocabulary, as the strings of the column.
const (
	PaymentReceived  = string(models.PaymentStateReceived)
	PaymentUnmatched = string(models.PaymentStateUnmatched)
	PaymentMatched   = string(models.PaymentStateMatched)
	PaymentLate      = string(models.PaymentStateLate)
	PaymentRefundDue = string(models.PaymentStateRefundDue)
	PaymentRefunded  = string(models.PaymentStateRefunded)
)

type paymentRow struct {
	ID         string
	Mode       string
	Asset      string
	Amount     decimal.Decimal
	Memo       string
	MemoType   string
	TxHash     string
	Sender     string
	ReceivedAt time.Time
	OrderID    *string
	Status     string
	SignaledAt *time.Time
	RefundTx   string
	RefundedAt *time.Time
	CreatedAt  time.Time
}

func (paymentRow) TableName() string { return "payments" }

func (r paymentRow) toModel() models.Payment {
	p := models.Payment{
		ID: r.ID, Mode: models.Mode(r.Mode), Asset: r.Asset, Amount: r.Amount, Memo: r.Memo,
		MemoType: r.MemoType, TxHash: r.TxHash, Sender: r.Sender, ReceivedAt: utc(r.ReceivedAt),
	}
	if r.OrderID != nil {
		p.OrderID = *r.OrderID
	}
	return p
}

// StoredPayment is a payment with its disposition, for operators.
type StoredPayment struct {
	models.Payment
	Status     string
	SignaledAt *time.Time
	RefundTx   string
	RefundedAt *time.Time
}

func newPaymentRow(p models.Payment, status string, now time.Time) paymentRow {
	return paymentRow{
		ID: p.ID, Mode: string(p.Mode), Asset: p.Asset, Amount: p.Amount, Memo: p.Memo, MemoType: p.MemoType,
		TxHash: p.TxHash, Sender: p.Sender, ReceivedAt: p.ReceivedAt.UTC(), Status: status, CreatedAt: now.UTC(),
	}
}

// SavePayment stores an observed payment once, keyed by its id, as
// received (not yet matched). It reports whether the payment was new;
// seeing it again changes nothing.
func (s *Store) SavePayment(ctx context.Context, p models.Payment, now time.Time) (bool, error) {
	row := newPaymentRow(p, PaymentReceived, now)
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, fmt.Errorf("saving payment: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// SaveMatch stores the matcher's verdict on a payment in one idempotent
// write: the payment itself if no source stored it yet, attached to
// orderID (status matched) or, with orderID empty, kept as unmatched. A
// payment already attached elsewhere, late, due back or refunded keeps its
// state.
func (s *Store) SaveMatch(ctx context.Context, p models.Payment, orderID string, now time.Time) error {
	status := PaymentUnmatched
	row := newPaymentRow(p, status, now)
	if orderID != "" {
		status = PaymentMatched
		row.Status, row.OrderID = status, &orderID
	}
	var attach any = nil
	if orderID != "" {
		attach = orderID
	}
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "id"}},
		DoUpdates: clause.Assignments(map[string]any{
			"status":   status,
			"order_id": gorm.Expr("COALESCE(payments.order_id, ?)", attach),
		}),
		Where: clause.Where{Exprs: []clause.Expression{
			gorm.Expr("payments.status IN (?, ?) AND (payments.order_id IS NULL OR payments.order_id = ?)",
				PaymentReceived, PaymentUnmatched, orderID),
		}},
	}).Create(&row)
	if res.Error != nil {
		return fmt.Errorf("saving match: %w", res.Error)
	}
	return nil
}

// PaymentsToMatch returns payments a source stored but the matcher has not
// processed (the process died in between), oldest first.
func (s *Store) PaymentsToMatch(ctx context.Context, createdBefore time.Time, limit int) ([]models.Payment, error) {
	var rows []paymentRow
	err := s.db.WithContext(ctx).Where("status = ? AND created_at < ?", PaymentReceived, createdBefore.UTC()).
		Order("created_at, id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing payments to match: %w", err)
	}
	out := make([]models.Payment, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// StellarCursor returns the watcher's saved paging token for an account,
// or "" before its first start.
func (s *Store) StellarCursor(ctx context.Context, network, account string) (string, error) {
	var row struct{ Cursor string }
	err := s.db.WithContext(ctx).Table("stellar_cursors").Select("cursor").
		Where("network = ? AND account = ?", network, account).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading stellar cursor: %w", err)
	}
	return row.Cursor, nil
}

// SaveStellarPayments stores a page of observed payments (each once, by
// id) and advances the watcher's cursor past them in one transaction: a
// crash either keeps both or neither, so no payment is skipped or counted
// twice on restart.
func (s *Store) SaveStellarPayments(ctx context.Context, network, account string, ps []models.Payment, cursor string, now time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if len(ps) > 0 {
			rows := make([]paymentRow, len(ps))
			for i, p := range ps {
				rows[i] = newPaymentRow(p, PaymentReceived, now)
			}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
				return err
			}
		}
		return tx.Exec(`INSERT INTO stellar_cursors (network, account, cursor, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (network, account) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
			network, account, cursor, now.UTC()).Error
	})
	if err != nil {
		return fmt.Errorf("saving stellar payments: %w", err)
	}
	return nil
}

// OrderIDByNumber finds the order a memo names, within a mode: a test-mode
// payment never pays a live order.
func (s *Store) OrderIDByNumber(ctx context.Context, mode models.Mode, number string) (string, error) {
	var row orderRow
	err := s.db.WithContext(ctx).Select("id").Where("number = ? AND mode = ?", number, string(mode)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", models.ErrOrderNotFound
	}
	if err != nil {
		return "", fmt.Errorf("finding order by number: %w", err)
	}
	return row.ID, nil
}

// MarkPaymentLate records that a payment reached its order after the order
// closed, as models.DecideLatePayment decides: the payment is marked
// late, the order's payment status set as decided and the payment's
// refund created (models.RefundsOwed), so it goes back by itself. It
// reports false, and changes nothing, for a payment the order's workflow
// had already counted (RecordPayment acknowledged it).
func (s *Store) MarkPaymentLate(ctx context.Context, paymentID string, at time.Time) (bool, error) {
	return s.markPaymentLate(ctx, paymentID, at, false)
}

// MarkRecordedPaymentLate marks late a payment the order's workflow
// recorded without crediting it (one that arrived after the order's refund
// was recorded): unlike MarkPaymentLate, the workflow's acknowledgement
// does not mean the order counted it.
func (s *Store) MarkRecordedPaymentLate(ctx context.Context, paymentID string, at time.Time) error {
	_, err := s.markPaymentLate(ctx, paymentID, at, true)
	return err
}

func (s *Store) markPaymentLate(ctx context.Context, paymentID string, at time.Time, recorded bool) (bool, error) {
	late := true
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Locked against RecordPayment acknowledging it meanwhile.
		var p paymentRow
		if err := s.forUpdate(tx).Where("id = ?", paymentID).Take(&p).Error; err != nil {
			return fmt.Errorf("reading payment: %w", err)
		}
		decided := models.DecideLatePayment(p.SignaledAt != nil, p.Status == PaymentLate, recorded)
		if !decided.Late {
			late = false
			return nil
		}
		if err := tx.Model(&paymentRow{}).Where("id = ?", paymentID).
			Updates(map[string]any{"status": PaymentLate, "signaled_at": at.UTC()}).Error; err != nil {
			return fmt.Errorf("marking payment late: %w", err)
		}
		if p.OrderID == nil {
			return nil
		}
		err := tx.Model(&orderRow{}).Where("id = ?", *p.OrderID).
			Updates(map[string]any{"payment_status": string(decided.OrderPaymentStatus), "updated_at": at.UTC()}).Error
		if err != nil {
			return err
		}
		var o orderRow
		if err := tx.Select("id", "account_id", "mode").Where("id = ?", *p.OrderID).Take(&o).Error; err != nil {
			return err
		}
		if err := s.recordPaymentEvent(tx, at, o, paymentID, models.EventPaymentLate); err != nil {
			return err
		}
		// The late payment is owed back: its refund is created with the
		// mark, so no crash between the two leaves money owed without a
		// refund. Its workflow is started by whoever marked it, or by the
		// reconciler (RefundWorkflowsToStart). Only its own: the order's
		// money is its workflow's to hand over (CreateOwedRefunds), or,
		// for a run from before refund payouts, to an operator's
		// mark-refunded that the run still waits for; a refund of it
		// created here would pay it a second time.
		_, err = s.createOwedRefunds(tx, *p.OrderID, at, paymentID)
		return err
	})
	return late, err
}

// ClaimPaymentRedeliveries returns up to limit matched payments created
// before createdBefore whose workflow has not recorded them and whose next
// redelivery is due at now, oldest first, each claimed for the caller to
// signal again: its count of redeliveries is raised to n and its next one
// put off until now+wait(n), with a compare-and-set on the count, so of
// several replicas claiming at once each payment goes to one.
func (s *Store) ClaimPaymentRedeliveries(ctx context.Context, createdBefore, now time.Time, wait func(n int) time.Duration, limit int) ([]models.Payment, error) {
	db := s.db.WithContext(ctx)
	now = now.UTC()
	var rows []redeliveryRow
	err := db.Where("order_id IS NOT NULL AND signaled_at IS NULL AND created_at < ? AND (redeliver_after IS NULL OR redeliver_after <= ?)",
		createdBefore.UTC(), now).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing payments awaiting signal: %w", err)
	}
	var out []models.Payment
	for _, r := range rows {
		n := r.Redeliveries + 1
		res := db.Model(&paymentRow{}).Where("id = ? AND redeliveries = ? AND signaled_at IS NULL", r.Payment.ID, r.Redeliveries).
			Updates(map[string]any{"redeliveries": n, "redeliver_after": now.Add(wait(n))})
		if res.Error != nil {
			return out, fmt.Errorf("claiming the redelivery of payment %s: %w", r.Payment.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			out = append(out, r.Payment.toModel())
		}
	}
	return out, nil
}

// ReleasePaymentRedelivery undoes a claim of ClaimPaymentRedeliveries whose
// signal was not delivered (Temporal unavailable): the payment is due again
// at once, and its count is back where it was.
func (s *Store) ReleasePaymentRedelivery(ctx context.Context, paymentID string) error {
	err := s.db.WithContext(ctx).Model(&paymentRow{}).Where("id = ? AND signaled_at IS NULL AND redeliveries > 0", paymentID).
		Updates(map[string]any{"redeliveries": gorm.Expr("redeliveries - 1"), "redeliver_after": nil}).Error
	if err != nil {
		return fmt.Errorf("releasing the redelivery of payment %s: %w", paymentID, err)
	}
	return nil
}

// redeliveryRow is a payment with its count of redeliveries.
type redeliveryRow struct {
	Payment      paymentRow `gorm:"embedded"`
	Redeliveries int
}

func (redeliveryRow) TableName() string { return "payments" }

// RecordPayment is the workflow's write of a payment it took in: it stores
// the payment if it is new (an operator's manual payment reaches the
// service only through the workflow), attaches it to the order, and marks
// it acknowledged. A payment in another asset than the order's is kept as
// refund_due: recorded, never credited. Idempotent.
func (s *Store) RecordPayment(ctx context.Context, orderID string, p models.Payment, now time.Time) error {
	now = now.UTC()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var o orderRow
		if err := tx.Select("id", "payment_asset", "account_id", "mode").Where("id = ?", orderID).Take(&o).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.ErrOrderNotFound
			}
			return err
		}
		status := PaymentMatched
		if !models.CreditsOrder(p.Asset, o.PaymentAsset) {
			status = PaymentRefundDue
		}
		row := newPaymentRow(p, status, now)
		row.OrderID, row.SignaledAt = &orderID, &now
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return err
		}
		// Already stored (by the matcher): attach and acknowledge. A late,
		// refunded or refund_due payment keeps its status.
		err := tx.Model(&paymentRow{}).Where("id = ?", p.ID).Updates(map[string]any{
			"order_id":    gorm.Expr("COALESCE(order_id, ?)", orderID),
			"signaled_at": gorm.Expr("COALESCE(signaled_at, ?)", now),
			"status": gorm.Expr("CASE WHEN status IN (?, ?, ?) THEN ? ELSE status END",
				PaymentReceived, PaymentUnmatched, PaymentMatched, status),
		}).Error
		if err != nil {
			return err
		}
		return s.recordPaymentEvent(tx, now, o, p.ID, models.EventPaymentReceived)
	})
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) {
			return err
		}
		return fmt.Errorf("recording payment: %w", err)
	}
	return nil
}

// Payments lists stored payments with the given dispositions (all when
// none are given), newest first.
func (s *Store) Payments(ctx context.Context, statuses ...string) ([]StoredPayment, error) {
	q := s.db.WithContext(ctx).Order("created_at DESC, id")
	if len(statuses) > 0 {
		q = q.Where("status IN ?", statuses)
	}
	var rows []paymentRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("listing payments: %w", err)
	}
	out := make([]StoredPayment, len(rows))
	for i, r := range rows {
		out[i] = StoredPayment{Payment: r.toModel(), Status: r.Status, SignaledAt: r.SignaledAt, RefundTx: r.RefundTx, RefundedAt: r.RefundedAt}
	}
	return out, nil
}

// PaymentsForOrder lists an order's payments, oldest first.
func (s *Store) PaymentsForOrder(ctx context.Context, orderID string) ([]StoredPayment, error) {
	var rows []paymentRow
	if err := s.db.WithContext(ctx).Where("order_id = ?", orderID).Order("received_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("listing order payments: %w", err)
	}
	out := make([]StoredPayment, len(rows))
	for i, r := range rows {
		out[i] = StoredPayment{Payment: r.toModel(), Status: r.Status, SignaledAt: r.SignaledAt, RefundTx: r.RefundTx, RefundedAt: r.RefundedAt}
	}
	return out, nil
}
