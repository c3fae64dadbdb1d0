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

// Payment dispositions, stored in payments.status.
const (
	PaymentUnmatched = "unmatched" // memo matches no order: kept for an operator
	PaymentMatched   = "matched"   // attached to an order and handed to its workflow
	PaymentLate      = "late"      // arrived after its order closed: refund due
	PaymentRefunded  = "refunded"
)

type paymentRow struct {
	ID         string
	Mode       string
	Asset      string
	Amount     decimal.Decimal
	Memo       string
	Sender     string
	ReceivedAt time.Time
	OrderID    *string
	Status     string
	SignaledAt *time.Time
	CreatedAt  time.Time
}

func (paymentRow) TableName() string { return "payments" }

func (r paymentRow) toModel() models.Payment {
	p := models.Payment{
		ID: r.ID, Mode: models.Mode(r.Mode), Asset: r.Asset, Amount: r.Amount, Memo: r.Memo,
		Sender: r.Sender, ReceivedAt: utc(r.ReceivedAt),
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
}

// SavePayment stores an observed payment once, keyed by its id. It reports
// whether the payment was new; seeing it again changes nothing.
func (s *Store) SavePayment(ctx context.Context, p models.Payment) (bool, error) {
	row := paymentRow{
		ID: p.ID, Mode: string(p.Mode), Asset: p.Asset, Amount: p.Amount, Memo: p.Memo, Sender: p.Sender,
		ReceivedAt: p.ReceivedAt.UTC(), Status: PaymentUnmatched, CreatedAt: time.Now().UTC(),
	}
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, fmt.Errorf("saving payment: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
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

// AttachPayment marks a stored payment as belonging to an order. A payment
// already attached to another order is left alone and reported.
func (s *Store) AttachPayment(ctx context.Context, paymentID, orderID string) error {
	res := s.db.WithContext(ctx).Model(&paymentRow{}).
		Where("id = ? AND (order_id IS NULL OR order_id = ?)", paymentID, orderID).
		Updates(map[string]any{"order_id": orderID, "status": PaymentMatched})
	if res.Error != nil {
		return fmt.Errorf("attaching payment: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("payment %s is missing or attached to another order", paymentID)
	}
	return nil
}

// MarkPaymentLate records that a payment reached its order after the order
// closed: the payment is marked late and the order's payment status
// refund_due, so neither the operator nor the client can miss that money
// must go back.
func (s *Store) MarkPaymentLate(ctx context.Context, paymentID string, at time.Time) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var p paymentRow
		if err := tx.Where("id = ?", paymentID).Take(&p).Error; err != nil {
			return fmt.Errorf("reading payment: %w", err)
		}
		if err := tx.Model(&paymentRow{}).Where("id = ?", paymentID).
			Updates(map[string]any{"status": PaymentLate, "signaled_at": at.UTC()}).Error; err != nil {
			return fmt.Errorf("marking payment late: %w", err)
		}
		if p.OrderID == nil {
			return nil
		}
		return tx.Model(&orderRow{}).Where("id = ?", *p.OrderID).
			Updates(map[string]any{"payment_status": string(models.PaymentRefundDue), "updated_at": at.UTC()}).Error
	})
}

// PaymentsAwaitingSignal returns matched payments whose workflow has not
// acknowledged them, oldest first, for the reconciler.
func (s *Store) PaymentsAwaitingSignal(ctx context.Context, createdBefore time.Time, limit int) ([]models.Payment, error) {
	var rows []paymentRow
	err := s.db.WithContext(ctx).Where("order_id IS NOT NULL AND signaled_at IS NULL AND created_at < ?", createdBefore.UTC()).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing payments awaiting signal: %w", err)
	}
	out := make([]models.Payment, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// RecordPayment is the workflow's write of a payment it counted (or
// refused to credit): it stores the payment if it is new (an operator's
// manual payment reaches the service only through the workflow) and
// attaches it to the order. Idempotent.
func (s *Store) RecordPayment(ctx context.Context, orderID string, p models.Payment) error {
	row := paymentRow{
		ID: p.ID, Mode: string(p.Mode), Asset: p.Asset, Amount: p.Amount, Memo: p.Memo, Sender: p.Sender,
		ReceivedAt: p.ReceivedAt.UTC(), OrderID: &orderID, Status: PaymentMatched, CreatedAt: time.Now().UTC(),
	}
	now := time.Now().UTC()
	row.SignaledAt = &now
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "id"}},
		DoUpdates: clause.Assignments(map[string]any{
			"order_id":    gorm.Expr("COALESCE(payments.order_id, ?)", orderID),
			"signaled_at": gorm.Expr("COALESCE(payments.signaled_at, ?)", now),
			"status":      gorm.Expr("CASE WHEN payments.status = ? THEN ? ELSE payments.status END", PaymentUnmatched, PaymentMatched),
		}),
	}).Create(&row).Error
	if err != nil {
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
		out[i] = StoredPayment{Payment: r.toModel(), Status: r.Status, SignaledAt: r.SignaledAt}
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
		out[i] = StoredPayment{Payment: r.toModel(), Status: r.Status, SignaledAt: r.SignaledAt}
	}
	return out, nil
}
