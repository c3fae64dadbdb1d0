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

// Refund is money owed back that no refund covers, for an operator to send
// back by hand: a single payment (late, wrong asset) or part of an order's
// credited payments (an underpaid order that expired or was cancelled, a
// failed order, the excess of an overpaid one).
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

// paymentRefundExists is the SQL condition that a refund (the ledger of
// money owed back) covers the payment of the current payments row: the
// refund of that payment whole, by its key (models.PaymentRefundKey).
func paymentRefundExists() clause.Expr {
	return gorm.Expr(`EXISTS (SELECT 1 FROM refunds r WHERE r."key" = ? || payments.id)`, models.PaymentRefundKey(""))
}

// orderRefundExists is the SQL condition that a refund of the current
// orders row's own money exists (models.RefundReasonsOfOrder).
func orderRefundExists() clause.Expr {
	return gorm.Expr(`EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = orders.id AND r.reason IN ?)`, refundReasonsOfOrder())
}

// RefundsDue lists the money owed back that no refund covers, oldest
// first: what was left to operators before the service paid refunds out
// (an order whose workflow still waits for mark-refunded, a late or
// wrong-asset payment recorded then). Money a refund covers belongs to
// that refund (memocart refunds) and is never listed here, so nobody sends
// it by hand beside the service's payout.
func (s *Store) RefundsDue(ctx context.Context) ([]Refund, error) {
	db := s.db.WithContext(ctx)
	var out []Refund

	// Whole payments: late ones and those in a wrong asset.
	var ps []paymentRow
	err := db.Where("status IN ?", paymentStatesDueBack()).Not(paymentRefundExists()).
		Order("created_at, id").Find(&ps).Error
	if err != nil {
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
	err = db.Where("payment_status IN ? AND refunded_at IS NULL", paymentStatusesOwingMoneyBack()).Not(orderRefundExists()).
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

// MarkPaymentRefunded records that an operator sent a payment due back on
// its own (models.PaymentState.DueBack: late, another asset) back, in the
// chain transaction txHash. A payment a refund covers is refused
// (models.RefundCoversIt): the refund is moved instead. The payment's
// order, then the payment, are locked first, as every refund write locks
// them, so a refund created at the same time (a late payment's) and this
// record are one after the other and the later one sees the first.
func (s *Store) MarkPaymentRefunded(ctx context.Context, paymentID, txHash string, at time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var head paymentRow
		err := tx.Select("id", "order_id").Where("id = ?", paymentID).Take(&head).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.ErrNothingToRefund
		}
		if err != nil {
			return err
		}
		if head.OrderID != nil {
			if err := s.forUpdate(tx).Select("id").Where("id = ?", *head.OrderID).Take(&orderRow{}).Error; err != nil {
				return fmt.Errorf("locking order %s: %w", *head.OrderID, err)
			}
		}
		if err := s.forUpdate(tx).Select("id").Where("id = ?", paymentID).Take(&paymentRow{}).Error; err != nil {
			return err
		}
		if r, ok, err := paymentRefund(tx, paymentID); err != nil || ok {
			if err != nil {
				return err
			}
			return models.RefundCoversIt("Payment "+paymentID, r)
		}
		res := tx.Model(&paymentRow{}).
			Where("id = ? AND status IN ?", paymentID, paymentStatesDueBack()).
			Updates(map[string]any{"status": PaymentRefunded, "refund_tx": txHash, "refunded_at": at.UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return models.ErrNothingToRefund
		}
		return nil
	})
	var me *models.Error
	if err != nil && !errors.Is(err, models.ErrNothingToRefund) && !errors.As(err, &me) {
		return fmt.Errorf("marking payment refunded: %w", err)
	}
	return err
}

// paymentRefund returns the refund of payment paymentID whole, if there is
// one (models.PaymentRefundKey).
func paymentRefund(tx *gorm.DB, paymentID string) (models.Refund, bool, error) {
	var row refundRow
	err := tx.Where(clause.Eq{Column: keyColumn, Value: models.PaymentRefundKey(paymentID)}).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Refund{}, false, nil
	}
	if err != nil {
		return models.Refund{}, false, fmt.Errorf("reading the refund of payment %s: %w", paymentID, err)
	}
	r, err := row.toModel()
	return r, err == nil, err
}

// MarkOrderRefunded records that an operator sent back an order's credited
// money (refund_due) or its excess (overpaid), in the transaction txHash,
// as models.DecideOrderRefund decides: the order's payment status becomes
// models.PaymentStatusAfterRefund's, and it is no longer listed as due
// back. Recording the same txHash for the order again succeeds and changes
// nothing; an order whose own money a refund covers is refused
// (models.RefundCoversIt), and anything else is models.ErrNothingToRefund. It
// holds the order's row lock, as creating the order's refunds does, so
// the two never both return the money: whichever is second sees the other.
func (s *Store) MarkOrderRefunded(ctx context.Context, orderNumber, txHash string, at time.Time) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var o orderRow
		err := s.forUpdate(tx).Select("id", "payment_status", "refunded_at", "refund_tx").Where("number = ?", orderNumber).Take(&o).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.ErrNothingToRefund
		}
		if err != nil {
			return err
		}
		var covering []refundRow
		if err := tx.Where("order_id = ? AND reason IN ?", o.ID, refundReasonsOfOrder()).Order("created_at, id").Limit(1).Find(&covering).Error; err != nil {
			return err
		}
		if len(covering) > 0 {
			r, err := covering[0].toModel()
			if err != nil {
				return err
			}
			return models.RefundCoversIt("Order "+orderNumber, r)
		}
		status := models.PaymentStatus(o.PaymentStatus)
		switch models.DecideOrderRefund(status, o.RefundedAt != nil, o.RefundTx, txHash) {
		case models.RefundAlreadyRecorded:
			return nil
		case models.RefundToRecord:
		default:
			return models.ErrNothingToRefund
		}
		return tx.Model(&orderRow{}).Where("id = ?", o.ID).Updates(map[string]any{
			"refund_tx": txHash, "refunded_at": at.UTC(), "updated_at": at.UTC(),
			"payment_status": string(models.PaymentStatusAfterRefund(status)),
		}).Error
	})
	var me *models.Error
	if err != nil && !errors.Is(err, models.ErrNothingToRefund) && !errors.As(err, &me) {
		return fmt.Errorf("marking order refunded: %w", err)
	}
	return err
}

// AttachUnmatched attaches a payment that matched no order to the order an
// operator names, if models.CanAttachPayment allows it, and returns it
// ready to hand to the order's workflow. The payment's row is locked, so an
// operator refunding it at the same time (CreateRefund) and this are one
// after the other: a payment being refunded is no longer unmatched.
func (s *Store) AttachUnmatched(ctx context.Context, paymentID, orderNumber string) (models.Payment, error) {
	var out models.Payment
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var p paymentRow
		if err := s.forUpdate(tx).Where("id = ?", paymentID).Take(&p).Error; err != nil {
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

// refundReasonsOfOrder is models.RefundReasonsOfOrder as column values.
func refundReasonsOfOrder() []string {
	var out []string
	for _, r := range models.RefundReasonsOfOrder() {
		out = append(out, string(r))
	}
	return out
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
