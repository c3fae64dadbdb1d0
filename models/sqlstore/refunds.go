package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

// refundRow is a stored models.Refund.
type refundRow struct {
	ID                  string
	Key                 string
	OrderID             *string // NULL for an unmatched payment's refund
	AccountID           *string
	Mode                string
	PaymentIDs          string `gorm:"column:payment_ids"` // JSON array of payment ids
	Reason              string
	Amount              decimal.Decimal
	Asset               string
	Value               decimal.NullDecimal
	Status              string
	DestinationAddress  string
	DestinationMemoType string
	DestinationMemo     string
	DestinationToSender bool
	TransactionHash     string
	Envelope            string
	FailureReason       string
	WorkflowStartedAt   *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
	ApprovedAt          *time.Time
	SentAt              *time.Time
	FailedAt            *time.Time
	CancelledAt         *time.Time
}

func (refundRow) TableName() string { return "refunds" }

// refundDestinationOf is a destination stored in four columns (a refund's
// destination_*, an order's refund_*): none while there is no address and
// not to_sender, since a destination has one or the other
// (models.ValidateRefundDestination).
func refundDestinationOf(address, memoType, memo string, toSender bool) *models.RefundDestination {
	if address == "" && !toSender {
		return nil
	}
	return &models.RefundDestination{Address: address, MemoType: memoType, Memo: memo, ToSender: toSender}
}

func newRefundRow(r models.Refund) (refundRow, error) {
	ids := r.PaymentIDs
	if ids == nil {
		ids = []string{}
	}
	doc, err := json.Marshal(ids)
	if err != nil {
		return refundRow{}, fmt.Errorf("encoding refund payments: %w", err)
	}
	row := refundRow{
		ID: r.ID, Key: r.Key, Mode: string(r.Mode), PaymentIDs: string(doc), Reason: string(r.Reason),
		Amount: r.Amount, Asset: r.Asset, Status: string(r.Status), TransactionHash: r.TransactionHash,
		Envelope: r.Envelope, FailureReason: r.FailureReason, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.CreatedAt.UTC(),
		ApprovedAt: utcPtr(r.ApprovedAt), SentAt: utcPtr(r.SentAt), FailedAt: utcPtr(r.FailedAt), CancelledAt: utcPtr(r.CancelledAt),
	}
	if r.OrderID != "" {
		row.OrderID = &r.OrderID
	}
	if r.AccountID != "" {
		row.AccountID = &r.AccountID
	}
	if r.Value != nil {
		row.Value = decimal.NullDecimal{Decimal: *r.Value, Valid: true}
	}
	if d := r.Destination; d != nil {
		row.DestinationAddress, row.DestinationMemoType, row.DestinationMemo, row.DestinationToSender = d.Address, d.MemoType, d.Memo, d.ToSender
	}
	return row, nil
}

func (r refundRow) toModel() (models.Refund, error) {
	var ids []string
	if err := json.Unmarshal([]byte(r.PaymentIDs), &ids); err != nil {
		return models.Refund{}, fmt.Errorf("reading refund %s payments: %w", r.ID, err)
	}
	if len(ids) == 0 {
		ids = nil
	}
	out := models.Refund{
		ID: r.ID, Key: r.Key, Mode: models.Mode(r.Mode), PaymentIDs: ids, Reason: models.RefundReason(r.Reason),
		Amount: r.Amount, Asset: r.Asset, Status: models.RefundStatus(r.Status),
		Destination:     refundDestinationOf(r.DestinationAddress, r.DestinationMemoType, r.DestinationMemo, r.DestinationToSender),
		TransactionHash: r.TransactionHash, Envelope: r.Envelope, FailureReason: r.FailureReason,
		CreatedAt: utc(r.CreatedAt), ApprovedAt: utcPtr(r.ApprovedAt), SentAt: utcPtr(r.SentAt),
		FailedAt: utcPtr(r.FailedAt), CancelledAt: utcPtr(r.CancelledAt),
	}
	if r.OrderID != nil {
		out.OrderID = *r.OrderID
	}
	if r.AccountID != nil {
		out.AccountID = *r.AccountID
	}
	if r.Value.Valid {
		v := r.Value.Decimal
		out.Value = &v
	}
	return out, nil
}

func refundModels(rows []refundRow) ([]models.Refund, error) {
	out := make([]models.Refund, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.toModel(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keyColumn is refunds.key, quoted by GORM: KEY is a keyword to both
// databases.
var keyColumn = clause.Column{Name: "key"}

// insertRefund stores r once by its key and reports whether this call
// stored it; a refund already stored under the key is left as it is.
func insertRefund(tx *gorm.DB, r models.Refund) (bool, error) {
	row, err := newRefundRow(r)
	if err != nil {
		return false, err
	}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{keyColumn}, DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, fmt.Errorf("storing refund %s: %w", r.Key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// refundsOfOrder lists an order's refunds, oldest first.
func refundsOfOrder(tx *gorm.DB, orderID string) ([]models.Refund, error) {
	var rows []refundRow
	if err := tx.Where("order_id = ?", orderID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("reading the refunds of order %s: %w", orderID, err)
	}
	return refundModels(rows)
}

// orderWithPayments is the order of row with the payments attached to it,
// each with its outcome as the order's reader sees it, as
// models.RefundsOwed and models.PaymentStatusAfterRefunds need; without
// steps or items.
func orderWithPayments(tx *gorm.DB, row orderRow) (models.Order, error) {
	var rows []paymentRow
	if err := tx.Where("order_id = ?", row.ID).Order("received_at, id").Find(&rows).Error; err != nil {
		return models.Order{}, fmt.Errorf("reading the payments of order %s: %w", row.ID, err)
	}
	o := row.toModel(nil, nil)
	for _, p := range rows {
		o.Payments = append(o.Payments, orderPaymentOf(p))
	}
	return o, nil
}

// CreateOwedRefunds creates the refunds order orderID owes and does not
// have yet (models.RefundsOwed), at now, and returns all the order's
// refunds, oldest first. Each new refund carries the order's account and
// mode, its value in the order's currency (models.RefundValue; none in
// another asset), and the order's refund destination when it has one that
// models.SetRefundDestination accepts; with none, or one it refuses, the
// refund awaits its destination.
//
// It runs in one transaction holding the order's row lock, so callers at
// once compute what is owed one after the other, each seeing the
// refunds of the one before; each refund is inserted once by its key
// whatever happens, and its refund.created event is recorded with it, in
// the same transaction, as is the claim (models.RefundClaim) of each that
// awaits its destination. Calling it again creates nothing. The refunds
// returned carry their claims.
func (s *Store) CreateOwedRefunds(ctx context.Context, orderID string, now time.Time) ([]models.Refund, error) {
	var out []models.Refund
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		out, err = s.createOwedRefunds(tx, orderID, now, "")
		return err
	})
	if err != nil {
		var me *models.Error
		if errors.As(err, &me) {
			return nil, err
		}
		return nil, fmt.Errorf("creating the refunds of order %s: %w", orderID, err)
	}
	return out, nil
}

// createOwedRefunds is CreateOwedRefunds inside the caller's transaction.
// With onlyPayment, it creates only that payment's own refund, if owed.
func (s *Store) createOwedRefunds(tx *gorm.DB, orderID string, now time.Time, onlyPayment string) ([]models.Refund, error) {
	var row orderRow
	if err := s.forUpdate(tx).Where("id = ?", orderID).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, models.ErrOrderNotFound
		}
		return nil, err
	}
	o, err := orderWithPayments(tx, row)
	if err != nil {
		return nil, err
	}
	existing, err := refundsOfOrder(tx, orderID)
	if err != nil {
		return nil, err
	}
	owed := models.RefundsOwed(o, existing, now)
	if onlyPayment != "" {
		owed = slices.DeleteFunc(owed, func(r models.Refund) bool { return r.Key != models.PaymentRefundKey(onlyPayment) })
	}
	if len(owed) == 0 {
		return existing, s.attachClaims(tx, existing)
	}
	inserted := map[string]bool{}
	for _, r := range owed {
		r = owedRefund(o, r)
		stored, err := insertRefund(tx, r)
		if err != nil {
			return nil, err
		}
		inserted[r.ID] = stored
		// A refund that waits for its destination gets its claim link
		// with it, which its refund.created event shows.
		if stored && models.RefundClaimable(r) {
			if _, err := s.issueRefundClaim(tx, r, now); err != nil {
				return nil, err
			}
		}
	}
	all, err := refundsOfOrder(tx, orderID)
	if err != nil {
		return nil, err
	}
	if err := s.attachClaims(tx, all); err != nil {
		return nil, err
	}
	// One refund.created per refund this call stored, with the refund as
	// stored; a refund another caller stored first is that caller's event.
	var created []models.Refund
	for _, r := range all {
		if inserted[r.ID] {
			created = append(created, r)
		}
	}
	if err := s.recordRefundsCreated(tx, now, created); err != nil {
		return nil, err
	}
	return all, nil
}

// owedRefund completes a refund models.RefundsOwed made for order o.
func owedRefund(o models.Order, r models.Refund) models.Refund {
	r.AccountID, r.Mode = o.AccountID, o.Mode
	if v, ok := models.RefundValue(o, r); ok {
		r.Value = &v
	}
	if o.RefundDestination != nil {
		if withDestination, err := models.SetRefundDestination(r, *o.RefundDestination); err == nil {
			r = withDestination
		}
	}
	return r
}

// CreateRefund stores refund r once, by its key (an unmatched payment's,
// models.RefundOfUnmatchedPayment), and returns the refund stored under
// that key and whether this call created it. A refund without a mode
// takes the mode of its payments, so that a test-mode payment goes back
// through the sandbox. A refund of an order (with its account) records
// its refund.created event as it is created; an unmatched payment's has
// none. A refund created awaiting its destination gets its claim
// (models.RefundClaim) issued at its creation time.
func (s *Store) CreateRefund(ctx context.Context, r models.Refund) (models.Refund, bool, error) {
	if r.Key == "" {
		return models.Refund{}, false, errors.New("creating refund: it has no key")
	}
	if r.ID == "" {
		r.ID = models.RefundID(r.Key)
	}
	var (
		out     models.Refund
		created bool
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if r.Mode == "" {
			mode, err := paymentsMode(tx, r.PaymentIDs)
			if err != nil {
				return err
			}
			r.Mode = mode
		}
		var err error
		if created, err = insertRefund(tx, r); err != nil {
			return err
		}
		var row refundRow
		if err := tx.Where(clause.Eq{Column: keyColumn, Value: r.Key}).Take(&row).Error; err != nil {
			return err
		}
		if out, err = row.toModel(); err != nil {
			return err
		}
		if !created {
			out, err = s.withClaim(tx, out)
			return err
		}
		if out.Reason == models.RefundUnmatchedPayment {
			if err := s.takeUnmatchedPayment(tx, out); err != nil {
				return err
			}
		}
		if models.RefundClaimable(out) {
			if out, err = s.issueRefundClaim(tx, out, out.CreatedAt); err != nil {
				return err
			}
		}
		return s.recordRefundsCreated(tx, out.CreatedAt, []models.Refund{out})
	})
	if err != nil {
		return models.Refund{}, false, fmt.Errorf("creating refund %s: %w", r.Key, err)
	}
	return out, created, nil
}

// takeUnmatchedPayment moves the one payment refund r returns, unmatched,
// to refund_due in the transaction that creates r: a payment being
// refunded is no longer unmatched, so it is neither listed to attach nor
// attachable (models.CanAttachPayment) and never pays an order with money
// on its way back. Its row is locked, and one attached meanwhile refuses
// the refund: its order returns it.
func (s *Store) takeUnmatchedPayment(tx *gorm.DB, r models.Refund) error {
	if len(r.PaymentIDs) != 1 {
		return fmt.Errorf("an unmatched payment's refund returns one payment, not %d", len(r.PaymentIDs))
	}
	id := r.PaymentIDs[0]
	var p paymentRow
	err := s.forUpdate(tx).Select("id", "status", "order_id").Where("id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("payment %s is not stored", id)
	}
	if err != nil {
		return err
	}
	if p.Status != PaymentUnmatched || p.OrderID != nil {
		return fmt.Errorf("payment %s is %s, not unmatched: its order's refunds return it", id, p.Status)
	}
	return tx.Model(&paymentRow{}).Where("id = ?", id).Update("status", PaymentRefundDue).Error
}

// paymentsMode is the one mode of the stored payments ids.
func paymentsMode(tx *gorm.DB, ids []string) (models.Mode, error) {
	var modes []string
	if len(ids) > 0 {
		if err := tx.Model(&paymentRow{}).Distinct("mode").Where("id IN ?", ids).Pluck("mode", &modes).Error; err != nil {
			return "", err
		}
	}
	if len(modes) != 1 {
		return "", fmt.Errorf("a refund without a mode takes its payments' one mode: %d found", len(modes))
	}
	return models.Mode(modes[0]), nil
}

// Refund returns a refund by id, of any account, or
// models.ErrRefundNotFound.
func (s *Store) Refund(ctx context.Context, id string) (models.Refund, error) {
	db := s.db.WithContext(ctx)
	row, err := take[refundRow](db.Where("id = ?", id), models.ErrRefundNotFound, "refund")
	if err != nil {
		return models.Refund{}, err
	}
	r, err := row.toModel()
	if err != nil {
		return models.Refund{}, err
	}
	return s.withClaim(db, r)
}

// RefundForAccount returns a refund by id if it belongs to the account and
// mode; another account's or mode's refund is models.ErrRefundNotFound.
func (s *Store) RefundForAccount(ctx context.Context, accountID string, mode models.Mode, id string) (models.Refund, error) {
	r, err := s.Refund(ctx, id)
	if err == nil && (r.AccountID != accountID || r.Mode != mode) {
		return models.Refund{}, models.ErrRefundNotFound
	}
	return r, err
}

// RefundsForOrder lists an order's refunds, oldest first.
func (s *Store) RefundsForOrder(ctx context.Context, orderID string) ([]models.Refund, error) {
	db := s.db.WithContext(ctx)
	rs, err := refundsOfOrder(db, orderID)
	if err != nil {
		return nil, err
	}
	if err := s.attachClaims(db, rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// Refunds lists the refunds of every account with the given statuses (all
// when none are given), oldest first, for operators.
func (s *Store) Refunds(ctx context.Context, statuses ...models.RefundStatus) ([]models.Refund, error) {
	q := s.db.WithContext(ctx).Order("created_at, id")
	if len(statuses) > 0 {
		ss := make([]string, len(statuses))
		for i, st := range statuses {
			ss[i] = string(st)
		}
		q = q.Where("status IN ?", ss)
	}
	var rows []refundRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("listing refunds: %w", err)
	}
	out, err := refundModels(rows)
	if err != nil {
		return nil, err
	}
	return out, s.attachClaims(s.db.WithContext(ctx), out)
}

// ListRefunds returns a page of one account's refunds in one mode and
// whether more follow it, as ListOrders does for orders: newest first
// (created_at, then id), strictly after the StartingAfter refund, read
// from refunds_list_idx. A cursor that is not one of the account's
// refunds in the mode is models.ErrRefundNotFound. A limit out of 1 to
// models.MaxRefundListLimit is brought into it (the default when not
// positive). The refunds carry their claims.
func (s *Store) ListRefunds(ctx context.Context, q models.RefundListQuery) ([]models.Refund, bool, error) {
	switch {
	case q.Limit <= 0:
		q.Limit = models.DefaultRefundListLimit
	case q.Limit > models.MaxRefundListLimit:
		q.Limit = models.MaxRefundListLimit
	}
	db := s.db.WithContext(ctx)
	tx := db.Table("refunds AS r").Select("r.*").Where("r.account_id = ? AND r.mode = ?", q.AccountID, string(q.Mode))
	if q.Status != "" {
		tx = tx.Where("r.status = ?", string(q.Status))
	}
	if q.OrderID != "" {
		tx = tx.Where("r.order_id = ?", q.OrderID)
	}
	tx = createdBetween(tx, "r", q.CreatedGTE, q.CreatedLTE)
	var rows []refundRow
	if err := newestFirstAfter(tx, "refunds", "r", q.StartingAfter, q.AccountID, q.Mode, q.Limit).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("listing refunds: %w", err)
	}
	rows, more, err := keysetPage(db, &refundRow{}, rows, q.StartingAfter, q.AccountID, q.Mode, q.Limit, models.ErrRefundNotFound)
	if err != nil {
		return nil, false, err
	}
	out, err := refundModels(rows)
	if err != nil {
		return nil, false, err
	}
	if err := s.attachClaims(db, out); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// lockRefund reads refund id inside tx with its row locked, having locked
// its order's row first. Every refund write takes the order before the
// refund, as CreateOwedRefunds does, so two writes never wait for each
// other in opposite orders; and two refunds of one order settling at
// once are written one after the other, so the second sees the first's
// status when the order's payment status is recomputed.
func (s *Store) lockRefund(tx *gorm.DB, id string) (models.Refund, error) {
	var head refundRow
	err := tx.Select("id", "order_id").Where("id = ?", id).Take(&head).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.Refund{}, models.ErrRefundNotFound
	}
	if err != nil {
		return models.Refund{}, err
	}
	if head.OrderID != nil {
		if err := s.forUpdate(tx).Select("id").Where("id = ?", *head.OrderID).Take(&orderRow{}).Error; err != nil {
			return models.Refund{}, fmt.Errorf("locking order %s: %w", *head.OrderID, err)
		}
	}
	var row refundRow
	if err := s.forUpdate(tx).Where("id = ?", id).Take(&row).Error; err != nil {
		return models.Refund{}, err
	}
	r, err := row.toModel()
	if err != nil {
		return models.Refund{}, err
	}
	return s.withClaim(tx, r)
}

// UpdateRefund applies move (a models move function: ApproveRefund,
// MarkRefundSent...) to refund id at now, in one transaction holding the
// refund's row lock (and its order's). When move refuses, its error is
// returned as it is (a *models.Error reaches the caller) and nothing is
// written. Otherwise every mutable column is written: status,
// destination, transaction hash, envelope, failure reason, value and the
// timestamps; the key, amount, asset, payments, order and account never
// change. A move that returns the refund unchanged (a retried write)
// writes nothing.
//
// When the refund's status changes and it belongs to an order, the order's
// payment status becomes models.PaymentStatusAfterRefunds of its refunds
// as written: refunded (or confirmed) once every refund is settled.
func (s *Store) UpdateRefund(ctx context.Context, id string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	return s.updateRefund(ctx, id, "", now, move)
}

// UpdateRefundByClaim is UpdateRefund for a move asked through the
// refund's claim link (the payer setting the destination), claim naming
// the link by its hash (models.RefundClaimHash): the same transaction
// uses the claim up (useRefundClaim), and a claim that no longer works
// refuses the move with models.ErrRefundClaimGone.
func (s *Store) UpdateRefundByClaim(ctx context.Context, id, claim string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	if claim == "" {
		return models.Refund{}, errors.New("updating a refund by its claim: no claim named")
	}
	return s.updateRefund(ctx, id, claim, now, move)
}

// updateRefund is UpdateRefund, through the claim whose hash is claim
// when it is not empty.
func (s *Store) updateRefund(ctx context.Context, id, claim string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	var (
		out     models.Refund
		refusal error
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		cur, err := s.lockRefund(tx, id)
		if err != nil {
			return err
		}
		next, err := move(cur)
		if err != nil {
			refusal = err
			return err
		}
		if claim != "" {
			if refusal, err = s.useRefundClaim(tx, cur, next, claim, now); refusal != nil || err != nil {
				return errors.Join(refusal, err)
			}
		}
		out, err = s.writeRefund(tx, cur, next, now)
		return err
	})
	if refusal != nil {
		return models.Refund{}, refusal
	}
	if err != nil {
		if errors.Is(err, models.ErrRefundNotFound) {
			return models.Refund{}, err
		}
		return models.Refund{}, fmt.Errorf("updating refund %s: %w", id, err)
	}
	return out, nil
}

// moved is refund before with the mutable fields of after: what a move
// may change.
func moved(before, after models.Refund) models.Refund {
	out := before
	out.Status, out.Destination, out.Value = after.Status, after.Destination, after.Value
	out.TransactionHash, out.Envelope, out.FailureReason = after.TransactionHash, after.Envelope, after.FailureReason
	out.ApprovedAt, out.SentAt, out.FailedAt, out.CancelledAt = after.ApprovedAt, after.SentAt, after.FailedAt, after.CancelledAt
	return out
}

// refundChanged reports whether a move changed anything of before.
func refundChanged(before, after models.Refund) bool {
	return before.Status != after.Status || before.TransactionHash != after.TransactionHash ||
		before.Envelope != after.Envelope || before.FailureReason != after.FailureReason ||
		!sameDestination(before.Destination, after.Destination) || !sameDecimal(before.Value, after.Value) ||
		!sameTime(before.ApprovedAt, after.ApprovedAt) || !sameTime(before.SentAt, after.SentAt) ||
		!sameTime(before.FailedAt, after.FailedAt) || !sameTime(before.CancelledAt, after.CancelledAt)
}

func sameDestination(a, b *models.RefundDestination) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func sameDecimal(a, b *decimal.Decimal) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

func sameTime(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// writeRefund writes what move made of before (locked in tx) at now, the
// order's payment status when the refund's status changed, the refund's
// claim (claimAfterMove), and the event of the move if it is one
// (refund.sent, refund.failed), with the order as it then is; it returns
// the refund as stored.
func (s *Store) writeRefund(tx *gorm.DB, before, after models.Refund, now time.Time) (models.Refund, error) {
	out := moved(before, after)
	if !refundChanged(before, out) {
		return before, nil
	}
	if out.Status == models.RefundSent && before.Status != models.RefundSent {
		if err := hashUnclaimed(tx, out); err != nil {
			return models.Refund{}, err
		}
	}
	row, err := newRefundRow(out)
	if err != nil {
		return models.Refund{}, err
	}
	err = tx.Model(&refundRow{}).Where("id = ?", before.ID).Updates(map[string]any{
		"status":                row.Status,
		"destination_address":   row.DestinationAddress,
		"destination_memo_type": row.DestinationMemoType,
		"destination_memo":      row.DestinationMemo,
		"destination_to_sender": row.DestinationToSender,
		"transaction_hash":      row.TransactionHash,
		"envelope":              row.Envelope,
		"failure_reason":        row.FailureReason,
		"value":                 row.Value,
		"approved_at":           nullableTime(row.ApprovedAt),
		"sent_at":               nullableTime(row.SentAt),
		"failed_at":             nullableTime(row.FailedAt),
		"cancelled_at":          nullableTime(row.CancelledAt),
		"updated_at":            now.UTC(),
	}).Error
	if err != nil {
		return models.Refund{}, err
	}
	if !before.Status.Settled() && out.Status.Settled() && out.Key == models.PaymentRefundKey(firstOf(out.PaymentIDs)) {
		if err := markPaymentSettled(tx, out, now); err != nil {
			return models.Refund{}, err
		}
	}
	if before.OrderID != "" && before.Status != out.Status {
		if err := settleOrderPaymentStatus(tx, before.OrderID, now); err != nil {
			return models.Refund{}, err
		}
	}
	stored, err := row.toModel()
	if err != nil {
		return models.Refund{}, err
	}
	// A failed refund gets a new claim (shown in its refund.failed event);
	// one that stops waiting for a destination loses its own: a claim is
	// used by the very write that sets the destination through it.
	if stored, err = s.claimAfterMove(tx, before.Status, stored, now); err != nil {
		return models.Refund{}, err
	}
	if err := s.recordRefundMove(tx, now, before.Status, stored); err != nil {
		return models.Refund{}, err
	}
	return stored, nil
}

// hashUnclaimed refuses to record refund r sent in a transaction that
// already settles money owed back: another sent refund's, or a payment or
// an order an operator recorded refunded by hand. One transaction pays
// one refund, so an operator's mark-sent with a hash already used (a
// copy-paste slip, or a claim that one payment covers two debts) would
// mark money returned that never left.
func hashUnclaimed(tx *gorm.DB, r models.Refund) error {
	var ids []string
	if err := tx.Model(&refundRow{}).Where("transaction_hash = ? AND status = ? AND id <> ?", r.TransactionHash, string(models.RefundSent), r.ID).
		Limit(1).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("looking the transaction up among refunds: %w", err)
	}
	if len(ids) == 0 {
		if err := tx.Model(&paymentRow{}).Where("refund_tx = ? AND status = ?", r.TransactionHash, PaymentRefunded).
			Not(paymentRefundExists()).Limit(1).Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("looking the transaction up among payments: %w", err)
		}
	}
	if len(ids) == 0 {
		if err := tx.Model(&orderRow{}).Where("refund_tx = ?", r.TransactionHash).Limit(1).Pluck("number", &ids).Error; err != nil {
			return fmt.Errorf("looking the transaction up among orders: %w", err)
		}
	}
	if len(ids) > 0 {
		return models.FieldError(models.CodeInvalidRequest, "transaction_hash",
			"Transaction %s already settles %s: one transaction returns one refund's money", r.TransactionHash, ids[0])
	}
	return nil
}

// markPaymentSettled marks the one payment that refund r returns whole
// refunded, with r's transaction (none when an operator settled it another
// way), as r settles: the payment is then neither due back nor owed by
// its order (models.AmountDueBack), and its readers see when it went back.
func markPaymentSettled(tx *gorm.DB, r models.Refund, now time.Time) error {
	at := now
	if r.SentAt != nil {
		at = *r.SentAt
	} else if r.CancelledAt != nil {
		at = *r.CancelledAt
	}
	err := tx.Model(&paymentRow{}).Where("id = ?", r.PaymentIDs[0]).
		Updates(map[string]any{"status": PaymentRefunded, "refund_tx": r.TransactionHash, "refunded_at": at.UTC()}).Error
	if err != nil {
		return fmt.Errorf("marking payment %s refunded: %w", r.PaymentIDs[0], err)
	}
	return nil
}

func firstOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// nullableTime is t for a write, NULL when nil.
func nullableTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// settleOrderPaymentStatus writes the payment status of order orderID
// (locked in tx) that models.PaymentStatusAfterRefunds gives its refunds
// as tx sees them, if it changed. No event of its own is recorded: no
// event type is about a payment status a refund settles (nor does
// MarkOrderRefunded record one); the refund's event (writeRefund) shows
// the order with it.
func settleOrderPaymentStatus(tx *gorm.DB, orderID string, now time.Time) error {
	var row orderRow
	if err := tx.Where("id = ?", orderID).Take(&row).Error; err != nil {
		return fmt.Errorf("reading order %s: %w", orderID, err)
	}
	o, err := orderWithPayments(tx, row)
	if err != nil {
		return err
	}
	refunds, err := refundsOfOrder(tx, orderID)
	if err != nil {
		return err
	}
	next := models.PaymentStatusAfterRefunds(o, refunds)
	refunded := models.RefundsSettledIn(refunds, o.PaymentAsset)
	if next == o.PaymentStatus && refunded.Equal(o.AmountRefunded) {
		return nil
	}
	return tx.Model(&orderRow{}).Where("id = ?", orderID).
		Updates(map[string]any{"payment_status": string(next), "amount_refunded": refunded, "updated_at": now.UTC()}).Error
}

// refundLedgerStep is migration 12's Go step: orders.amount_refunded
// counts only refunds of the order's own money from then on
// (models.RefundsSettledIn), so it is computed again for every order that
// has a settled refund of one payment whole, which it used to count.
func refundLedgerStep(tx *gorm.DB) error {
	var ids []string
	err := tx.Model(&refundRow{}).Distinct("order_id").
		Where("order_id IS NOT NULL AND status IN ? AND reason NOT IN ?",
			[]string{string(models.RefundSent), string(models.RefundCancelled)}, refundReasonsOfOrder()).
		Pluck("order_id", &ids).Error
	if err != nil {
		return err
	}
	for _, id := range ids {
		var o orderRow
		if err := tx.Select("id", "payment_asset").Where("id = ?", id).Take(&o).Error; err != nil {
			return err
		}
		refunds, err := refundsOfOrder(tx, id)
		if err != nil {
			return err
		}
		err = tx.Model(&orderRow{}).Where("id = ?", id).
			Update("amount_refunded", models.RefundsSettledIn(refunds, o.PaymentAsset)).Error
		if err != nil {
			return err
		}
	}
	return nil
}

// refundApprovalLockID names the Postgres advisory lock that approvals
// within the daily maximum take, so that they sum and approve one at a
// time (an arbitrary constant, not migrationLockID).
const refundApprovalLockID = 0x6d63726566756e64 // "mcrefund"

// ApproveRefundWithinDailyMax approves refund id at now
// (models.ApproveRefund) if its value fits under max together with the
// values of the refunds of its mode approved at or after since that are
// being sent or were sent (a failed or cancelled one's money did not
// leave): their sum plus its value at most max. It reports whether the refund is approved.
// A refund of unknown value is never approved here, nor anything when max
// is not positive: they wait for an operator (false, no error). A refund
// already being sent is reported approved without a write (a retried
// approval). A refund models.ApproveRefund refuses (no destination, sent)
// returns its error.
//
// Approvals are serialised, so two that together exceed max approve one:
// on Postgres by a transaction-scoped advisory lock taken before the sum
// is read; SQLite has one writer at a time.
func (s *Store) ApproveRefundWithinDailyMax(ctx context.Context, id string, now, since time.Time, max decimal.Decimal) (models.Refund, bool, error) {
	var (
		out      models.Refund
		approved bool
		refusal  error
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		approved = false
		if s.dialect == DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(refundApprovalLockID)).Error; err != nil {
				return err
			}
		}
		cur, err := s.lockRefund(tx, id)
		if err != nil {
			return err
		}
		out = cur
		switch {
		case cur.Status == models.RefundSending:
			approved = true
			return nil
		case cur.Value == nil || !max.IsPositive():
			return nil
		}
		next, err := models.ApproveRefund(cur, now)
		if err != nil {
			refusal = err
			return err
		}
		sum, err := approvedSince(tx, cur.Mode, since)
		if err != nil {
			return err
		}
		if sum.Add(*cur.Value).GreaterThan(max) {
			return nil
		}
		if out, err = s.writeRefund(tx, cur, next, now); err != nil {
			return err
		}
		approved = true
		return nil
	})
	if refusal != nil {
		return models.Refund{}, false, refusal
	}
	if err != nil {
		if errors.Is(err, models.ErrRefundNotFound) {
			return models.Refund{}, false, err
		}
		return models.Refund{}, false, fmt.Errorf("approving refund %s: %w", id, err)
	}
	return out, approved, nil
}

// approvedSince sums the values of the refunds of mode approved at or
// after since that are being sent or sent: the daily maximum is a mode's
// own, so test keys' sandbox refunds never spend the live budget. The sum
// is taken here rather than by SQL's SUM: SQLite keeps amounts as text,
// which its SUM would add as floats.
func approvedSince(tx *gorm.DB, mode models.Mode, since time.Time) (decimal.Decimal, error) {
	var values []decimal.NullDecimal
	err := tx.Model(&refundRow{}).
		Where("mode = ? AND approved_at >= ? AND status IN ?", string(mode), since.UTC(), []string{string(models.RefundSending), string(models.RefundSent)}).
		Pluck("value", &values).Error
	if err != nil {
		return decimal.Zero, fmt.Errorf("summing approved refunds: %w", err)
	}
	sum := decimal.Zero
	for _, v := range values {
		if v.Valid {
			sum = sum.Add(v.Decimal)
		}
	}
	return sum, nil
}

// RefundWorkflowsToStart returns up to limit refunds created before
// createdBefore whose workflow is not known to exist (the process died
// between creating the refund and starting its workflow, or Temporal was
// down), oldest first.
func (s *Store) RefundWorkflowsToStart(ctx context.Context, createdBefore time.Time, limit int) ([]models.Refund, error) {
	var rows []refundRow
	err := s.db.WithContext(ctx).Where("workflow_started_at IS NULL AND created_at < ?", createdBefore.UTC()).
		Order("created_at, id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("listing refunds awaiting their workflow: %w", err)
	}
	out, err := refundModels(rows)
	if err != nil {
		return nil, err
	}
	return out, s.attachClaims(s.db.WithContext(ctx), out)
}

// MarkRefundWorkflowStarted records that refund id's workflow exists. A
// refund already marked keeps its first mark; an unknown id is
// models.ErrRefundNotFound.
func (s *Store) MarkRefundWorkflowStarted(ctx context.Context, id string, at time.Time) error {
	db := s.db.WithContext(ctx)
	res := db.Model(&refundRow{}).Where("id = ? AND workflow_started_at IS NULL", id).Update("workflow_started_at", at.UTC())
	if res.Error != nil {
		return fmt.Errorf("marking refund workflow started: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	var n int64
	if err := db.Model(&refundRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return fmt.Errorf("reading refund: %w", err)
	}
	if n == 0 {
		return models.ErrRefundNotFound
	}
	return nil
}

// PaymentSenders returns the account each stored payment of paymentIDs
// came from (payment id → sender), for a refund sent back to its sender.
// An id not stored is left out; a payment whose sender is unknown (an
// operator's manual payment) maps to "".
func (s *Store) PaymentSenders(ctx context.Context, paymentIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(paymentIDs))
	if len(paymentIDs) == 0 {
		return out, nil
	}
	var rows []paymentRow
	if err := s.db.WithContext(ctx).Select("id", "sender").Where("id IN ?", paymentIDs).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("reading payment senders: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.Sender
	}
	return out, nil
}
