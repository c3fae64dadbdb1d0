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

// Refund is money an operator must send back: a single payment (late,
// wrong asset) or part of an order's credited payments (an underpaid order
// that expired or was cancelled, a failed order, the excess of an
// overpaid one).
type Refund struct {
	OrderID     string
	OrderNumber string
	PaymentID   string // set when one payment is refunded whole
	Asset       string
	Amount      decimal.Decimal
	Reason      string
	// Senders are where the money came from, for the operator sending it back.
	Senders []string
}

// RefundsDue lists everything to send back, oldest first.
func (s *Store) RefundsDue(ctx context.Context) ([]Refund, error) {
	db := s.db.WithContext(ctx)
	var out []Refund

	// Whole payments: late ones and those in a wrong asset.
	var ps []paymentRow
	if err := db.Where("status IN ?", paymentStatesDueBack()).Order("created_at, id").Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("listing payments to refund: %w", err)
	}
	numbers, err := s.orderNumbers(ctx, ps)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		r := Refund{PaymentID: p.ID, Asset: p.Asset, Amount: p.Amount, Senders: []string{p.Sender}}
		if p.OrderID != nil {
			r.OrderID, r.OrderNumber = *p.OrderID, numbers[*p.OrderID]
		}
		r.Reason = "arrived after the order closed"
		if p.Status == PaymentRefundDue {
			r.Reason = "paid in " + p.Asset + ", not the order's asset"
		}
		out = append(out, r)
	}

	// Credited money on orders that will not use it, and overpayments.
	var os []orderRow
	err = db.Where("payment_status IN ? AND refunded_at IS NULL", paymentStatusesOwingMoneyBack()).
		Order("created_at, id").Find(&os).Error
	if err != nil {
		return nil, fmt.Errorf("listing orders to refund: %w", err)
	}
	for _, o := range os {
		amount, reason := o.AmountReceived, "order "+o.Status+" after receiving payment"
		if models.PaymentStatus(o.PaymentStatus) == models.PaymentOverpaid {
			amount, reason = o.AmountReceived.Sub(o.PaymentAmount), "paid more than the amount due"
		}
		if !amount.IsPositive() {
			continue // refund_due only because of a stray payment, listed above
		}
		var senders []string
		if err := db.Model(&paymentRow{}).Distinct("sender").Where("order_id = ? AND status = ?", o.ID, PaymentMatched).
			Pluck("sender", &senders).Error; err != nil {
			return nil, err
		}
		out = append(out, Refund{OrderID: o.ID, OrderNumber: o.Number, Asset: o.PaymentAsset, Amount: amount, Reason: reason, Senders: senders})
	}
	return out, nil
}

func (s *Store) orderNumbers(ctx context.Context, ps []paymentRow) (map[string]string, error) {
	var ids []string
	for _, p := range ps {
		if p.OrderID != nil {
			ids = append(ids, *p.OrderID)
		}
	}
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []orderRow
	if err := s.db.WithContext(ctx).Select("id", "number").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = r.Number
	}
	return out, nil
}

// ErrNothingToRefund is returned when a refund is recorded for something
// that is not due back.
var ErrNothingToRefund = errors.New("nothing is due back there")

// MarkPaymentRefunded records that an operator sent a payment due back on
// its own (models.PaymentState.DueBack: late, another asset) back, in the
// chain transaction txHash.
func (s *Store) MarkPaymentRefunded(ctx context.Context, paymentID, txHash string, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&paymentRow{}).
		Where("id = ? AND status IN ?", paymentID, paymentStatesDueBack()).
		Updates(map[string]any{"status": PaymentRefunded, "refund_tx": txHash, "refunded_at": at.UTC()})
	if res.Error != nil {
		return fmt.Errorf("marking payment refunded: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNothingToRefund
	}
	return nil
}

// MarkOrderRefunded records that an operator sent back an order's credited
// money (refund_due) or its excess (overpaid), in the transaction txHash,
// as models.DecideOrderRefund decides: the order's payment status becomes
// models.PaymentStatusAfterRefund's, and it is no longer listed as due
// back. Recording the same txHash for the order again succeeds and changes
// nothing; anything else is ErrNothingToRefund.
func (s *Store) MarkOrderRefunded(ctx context.Context, orderNumber, txHash string, at time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Locked against a concurrent refund of the same order; SQLite
		// transactions begin IMMEDIATE, one writer at a time.
		q := tx
		if s.dialect == DialectPostgres {
			q = tx.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		var o orderRow
		err := q.Select("id", "payment_status", "refunded_at", "refund_tx").Where("number = ?", orderNumber).Take(&o).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNothingToRefund
		}
		if err != nil {
			return err
		}
		status := models.PaymentStatus(o.PaymentStatus)
		switch models.DecideOrderRefund(status, o.RefundedAt != nil, o.RefundTx, txHash) {
		case models.RefundAlreadyRecorded:
			return nil
		case models.RefundToRecord:
		default:
			return ErrNothingToRefund
		}
		return tx.Model(&orderRow{}).Where("id = ?", o.ID).Updates(map[string]any{
			"refund_tx": txHash, "refunded_at": at.UTC(), "updated_at": at.UTC(),
			"payment_status": string(models.PaymentStatusAfterRefund(status)),
		}).Error
	})
	if err != nil && !errors.Is(err, ErrNothingToRefund) {
		return fmt.Errorf("marking order refunded: %w", err)
	}
	return err
}

// AttachUnmatched attaches a payment that matched no order to the order an
// operator names, if models.CanAttachPayment allows it, and returns it
// ready to hand to the order's workflow.
func (s *Store) AttachUnmatched(ctx context.Context, paymentID, orderNumber string) (models.Payment, error) {
	var out models.Payment
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var p paymentRow
		if err := tx.Where("id = ?", paymentID).Take(&p).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return fmt.Errorf("no payment %s", paymentID)
			}
			return err
		}
		var (
			o     orderRow
			order *models.Order
		)
		err := tx.Select("id", "number", "mode").Where("number = ?", orderNumber).Take(&o).Error
		switch {
		case err == nil:
			order = &models.Order{ID: o.ID, Number: o.Number, Mode: models.Mode(o.Mode)}
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}
		if err := models.CanAttachPayment(p.toModel(), models.PaymentState(p.Status), order); err != nil {
			return err
		}
		if err := tx.Model(&paymentRow{}).Where("id = ?", paymentID).
			Updates(map[string]any{"order_id": o.ID, "status": PaymentMatched}).Error; err != nil {
			return err
		}
		out = p.toModel()
		out.OrderID = o.ID
		return nil
	})
	return out, err
}

// paymentStatesDueBack is models.PaymentStatesDueBack as column values.
func paymentStatesDueBack() []string {
	var out []string
	for _, st := range models.PaymentStatesDueBack() {
		out = append(out, string(st))
	}
	return out
}

// paymentStatusesOwingMoneyBack is models.PaymentStatusesOwingMoneyBack as
// column values.
func paymentStatusesOwingMoneyBack() []string {
	var out []string
	for _, st := range models.PaymentStatusesOwingMoneyBack() {
		out = append(out, string(st))
	}
	return out
}

// RaiseAlert records a condition an operator must act on; raising it again
// counts and refreshes it.
func (s *Store) RaiseAlert(ctx context.Context, kind, detail string, at time.Time) error {
	return s.db.WithContext(ctx).Exec(`INSERT INTO alerts (kind, detail, first_at, last_at, count) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (kind) DO UPDATE SET detail = excluded.detail, last_at = excluded.last_at, count = alerts.count + 1, cleared_at = NULL`,
		kind, detail, at.UTC(), at.UTC()).Error
}

// ClearAlert marks an alert as resolved.
//
// It answers ErrNoOpenAlert when no alert of that kind is open, so an
// operator's typo is an error, not a silent success.
func (s *Store) ClearAlert(ctx context.Context, kind string, at time.Time) error {
	res := s.db.WithContext(ctx).Exec(`UPDATE alerts SET cleared_at = ? WHERE kind = ? AND cleared_at IS NULL`, at.UTC(), kind)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNoOpenAlert
	}
	return nil
}

// ErrNoOpenAlert is returned by ClearAlert when no alert of the kind is open.
var ErrNoOpenAlert = errors.New("no open alert of that kind")

// Alert is a condition an operator must act on.
type Alert struct {
	Kind      string
	Detail    string
	FirstAt   time.Time
	LastAt    time.Time
	Count     int
	ClearedAt *time.Time
}

// OpenAlerts lists alerts not cleared, newest first.
func (s *Store) OpenAlerts(ctx context.Context) ([]Alert, error) {
	var rows []Alert
	err := s.db.WithContext(ctx).Table("alerts").Where("cleared_at IS NULL").Order("last_at DESC").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing alerts: %w", err)
	}
	for i := range rows {
		rows[i].FirstAt, rows[i].LastAt = utc(rows[i].FirstAt), utc(rows[i].LastAt)
	}
	return rows, nil
}

// PaymentCounts returns how many stored payments have each disposition.
func (s *Store) PaymentCounts(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	if err := s.db.WithContext(ctx).Model(&paymentRow{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("counting payments: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}
