package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// payoutAccount is a valid Stellar account (its checksum holds).
const payoutAccount = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"

var (
	payoutTx  = strings.Repeat("ab", 32)
	toSender  = models.RefundDestination{ToSender: true}
	toAccount = models.RefundDestination{Address: payoutAccount, MemoType: "id", Memo: "42"}
)

// txOf is a transaction hash of its own for refund id: one transaction
// settles one refund.
func txOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// newOrder creates a test-mode order of the account (12.50 USD, paid in
// 12.50 USDC) from a new cart, with dest as its refund destination.
func newOrder(t *testing.T, st *sqlstore.Store, accountID, cartID string, dest *models.RefundDestination) models.Order {
	t.Helper()
	seedCart(t, st, accountID, cartID)
	req := orderRequest(accountID, cartID, "", "h")
	build := req.Build
	req.Build = func(c models.Cart) (models.Order, error) {
		o, err := build(c)
		o.RefundDestination = dest
		return o, err
	}
	o, created, err := st.CreateOrder(context.Background(), req)
	require.NoError(t, err)
	require.True(t, created)
	return o
}

// failedOrder is an order paid in full by payment <cartID>-paid, whose
// purchase then failed: its 12.50 USDC are owed back.
func failedOrder(t *testing.T, st *sqlstore.Store, accountID, cartID string, dest *models.RefundDestination) models.Order {
	t.Helper()
	ctx := context.Background()
	o := newOrder(t, st, accountID, cartID, dest)
	paid := decimal.RequireFromString("12.50")
	require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment(cartID+"-paid", o.Number, "USDC", "12.50"), time.Now()))
	require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0, AmountReceived: paid}, time.Now()))
	require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderFailed, PaymentStatus: models.PaymentRefundDue, At: t0, AmountReceived: paid, Reason: "gone"}, time.Now()))
	return o
}

// overpaidOrder is an order (dest its refund destination) paid 13.50 USDC
// for its 12.50 by payment paymentID: it owes back 1 USDC.
func overpaidOrder(t *testing.T, st *sqlstore.Store, accountID, cartID, paymentID string, dest *models.RefundDestination) models.Order {
	t.Helper()
	ctx := context.Background()
	o := newOrder(t, st, accountID, cartID, dest)
	require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment(paymentID, o.Number, "USDC", "13.50"), time.Now()))
	require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentOverpaid,
		At: t0, AmountReceived: decimal.RequireFromString("13.50")}, time.Now()))
	return o
}

// paidLateOrder is an order whose payment window expired before its
// payment paymentID of amount USDC was matched to it: an hour later, the
// payment is marked late.
func paidLateOrder(t *testing.T, st *sqlstore.Store, accountID, cartID, paymentID, amount string) models.Order {
	t.Helper()
	ctx := context.Background()
	o := newOrder(t, st, accountID, cartID, nil)
	require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCancelled, PaymentStatus: models.PaymentExpired, At: t0}, time.Now()))
	require.NoError(t, st.SaveMatch(ctx, livePayment(paymentID, o.Number, "USDC", amount), o.ID, time.Now()))
	late, err := st.MarkPaymentLate(ctx, paymentID, t0.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, late, "marked late")
	return o
}

// owedRefund creates the refunds order orderID owes at at, and returns
// the one it must owe.
func owedRefund(t *testing.T, st *sqlstore.Store, orderID string, at time.Time) models.Refund {
	t.Helper()
	rs, err := st.CreateOwedRefunds(context.Background(), orderID, at)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	return rs[0]
}

func paymentStatusOf(t *testing.T, st *sqlstore.Store, orderID string) models.PaymentStatus {
	t.Helper()
	o, err := st.Order(context.Background(), orderID)
	require.NoError(t, err)
	return o.PaymentStatus
}

// refundByKey finds the refund with key in refunds.
func refundByKey(t *testing.T, refunds []models.Refund, key string) models.Refund {
	t.Helper()
	for _, r := range refunds {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no refund %s among %d", key, len(refunds))
	return models.Refund{}
}

func decimalString(d *decimal.Decimal) string {
	if d == nil {
		return "<nil>"
	}
	return d.String()
}

// Each path by which an order owes money back creates its refund, with
// the order's account, mode and value, once however often it is asked.
func TestCreateOwedRefunds(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(2 * time.Hour)

		for _, tc := range []struct {
			name     string
			cart     string
			seed     func(cartID string) models.Order
			key      func(o models.Order, cartID string) string
			reason   models.RefundReason
			amount   string
			asset    string
			value    string // "<nil>" when unknown
			payments func(cartID string) []string
		}{
			{
				name:   "failed order: everything credited",
				cart:   "crt_failed",
				seed:   func(c string) models.Order { return failedOrder(t, st, a.ID, c, nil) },
				key:    func(o models.Order, _ string) string { return "order:" + o.ID + ":1" },
				reason: models.RefundOrderFailed,
				amount: "12.5", asset: "USDC", value: "12.5",
				payments: func(c string) []string { return []string{c + "-paid"} },
			},
			{
				name:   "overpaid order: the excess",
				cart:   "crt_overpaid",
				seed:   func(c string) models.Order { return overpaidOrder(t, st, a.ID, c, c+"-paid", nil) },
				key:    func(o models.Order, _ string) string { return "order:" + o.ID + ":1" },
				reason: models.RefundOverpaid,
				amount: "1", asset: "USDC", value: "1",
				payments: func(c string) []string { return []string{c + "-paid"} },
			},
			{
				name: "late payment: that payment, created as it is marked late",
				cart: "crt_late",
				seed: func(c string) models.Order {
					o := newOrder(t, st, a.ID, c, nil)
					require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCancelled, PaymentStatus: models.PaymentExpired,
						At: t0, Reason: "payment deadline passed", Cancellation: models.CancellationPaymentWindowExpired}, time.Now()))
					require.NoError(t, st.SaveMatch(ctx, livePayment(c+"-late", o.Number, "USDC", "12.50"), o.ID, time.Now()))
					late, err := st.MarkPaymentLate(ctx, c+"-late", now)
					require.NoError(t, err)
					require.True(t, late)
					rs, err := st.RefundsForOrder(ctx, o.ID)
					require.NoError(t, err)
					require.Len(t, rs, 1, "the mark created the refund")
					pending, err := st.RefundWorkflowsToStart(ctx, now.Add(time.Second), 100)
					require.NoError(t, err)
					assert.Contains(t, pending, rs[0], "its workflow is left to start")
					return o
				},
				key:    func(_ models.Order, c string) string { return "payment:" + c + "-late" },
				reason: models.RefundLatePayment,
				amount: "12.5", asset: "USDC", value: "12.5",
				payments: func(c string) []string { return []string{c + "-late"} },
			},
			{
				name: "wrong-asset payment: that payment, in its asset, of unknown value",
				cart: "crt_wrong",
				seed: func(c string) models.Order {
					o := newOrder(t, st, a.ID, c, nil)
					require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment(c+"-xlm", o.Number, "XLM", "40"), time.Now()))
					return o
				},
				key:    func(_ models.Order, c string) string { return "payment:" + c + "-xlm" },
				reason: models.RefundWrongAsset,
				amount: "40", asset: "XLM", value: "<nil>",
				payments: func(c string) []string { return []string{c + "-xlm"} },
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cartID := tc.cart
				o := tc.seed(cartID)

				refunds, err := st.CreateOwedRefunds(ctx, o.ID, now)
				require.NoError(t, err)
				require.Len(t, refunds, 1)
				r := refunds[0]
				assert.Equal(t, tc.key(o, cartID), r.Key)
				assert.Equal(t, models.RefundID(r.Key), r.ID)
				assert.Equal(t, o.ID, r.OrderID)
				assert.Equal(t, a.ID, r.AccountID)
				assert.Equal(t, models.ModeTest, r.Mode)
				assert.Equal(t, tc.reason, r.Reason)
				assert.Equal(t, tc.amount, r.Amount.String())
				assert.Equal(t, tc.asset, r.Asset)
				assert.Equal(t, tc.value, decimalString(r.Value))
				assert.Equal(t, tc.payments(cartID), r.PaymentIDs)
				assert.Equal(t, models.RefundAwaitingDestination, r.Status)
				assert.Nil(t, r.Destination, "the order has no refund destination")
				assert.True(t, now.Equal(r.CreatedAt), "created at %v", r.CreatedAt)

				stored, err := st.Refund(ctx, r.ID)
				require.NoError(t, err)
				assert.Equal(t, r, stored, "returned as stored")

				again, err := st.CreateOwedRefunds(ctx, o.ID, now.Add(time.Hour))
				require.NoError(t, err)
				assert.Equal(t, refunds, again, "a second call creates nothing and returns the same refunds")
				all, err := st.RefundsForOrder(ctx, o.ID)
				require.NoError(t, err)
				assert.Len(t, all, 1)
			})
		}

		_, err := st.CreateOwedRefunds(ctx, "ord_missing", now)
		assert.ErrorIs(t, err, models.ErrOrderNotFound)
	})
}

// A refund created for an order starts with the order's refund
// destination, awaiting approval; with a destination models refuses, it
// awaits one.
func TestCreateOwedRefundsAppliesTheOrdersDestination(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")

		o := failedOrder(t, st, a.ID, "crt_dest", &toAccount)
		refunds, err := st.CreateOwedRefunds(ctx, o.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Len(t, refunds, 1)
		assert.Equal(t, models.RefundAwaitingApproval, refunds[0].Status)
		require.NotNil(t, refunds[0].Destination)
		assert.Equal(t, toAccount, *refunds[0].Destination)

		bad := failedOrder(t, st, a.ID, "crt_bad", nil)
		require.NoError(t, st.SetOrderRefundDestination(ctx, a.ID, models.ModeTest, bad.ID, &models.RefundDestination{Address: "GNOTANACCOUNT"}, time.Now()))
		refunds, err = st.CreateOwedRefunds(ctx, bad.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Len(t, refunds, 1)
		assert.Equal(t, models.RefundAwaitingDestination, refunds[0].Status, "an invalid destination is not applied")
		assert.Nil(t, refunds[0].Destination)
	})
}

// Callers at once (a retried activity, a reconciler) create each refund
// once and all see the same refunds.
func TestCreateOwedRefundsConcurrently(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_race", nil)
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-xlm", o.Number, "XLM", "40"), time.Now()))
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-usdc", o.Number, "USDC", "12.50"), time.Now()))
		paid := decimal.RequireFromString("12.50")
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0, AmountReceived: paid}, time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderFailed, PaymentStatus: models.PaymentRefundDue, At: t0, AmountReceived: paid}, time.Now()))

		const n = 6
		results := make([][]models.Refund, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = st.CreateOwedRefunds(ctx, o.ID, t0.Add(time.Hour+time.Duration(i)*time.Second))
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, results[0], results[i], "every caller sees the same refunds")
		}
		all, err := st.Refunds(ctx)
		require.NoError(t, err)
		require.Len(t, all, 2, "the order's money and the wrong-asset payment, once each")
		refundByKey(t, all, "order:"+o.ID+":1")
		refundByKey(t, all, "payment:p-xlm")
	})
}

// UpdateRefund writes what a move made of the refund, returns a refused
// move's error as it is and writes nothing then, nor for a move that
// changes nothing.
func TestUpdateRefund(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := failedOrder(t, st, a.ID, "crt_u", nil)
		refunds, err := st.CreateOwedRefunds(ctx, o.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		id := refunds[0].ID
		at := func(m int) time.Time { return t0.Add(2*time.Hour + time.Duration(m)*time.Minute) }

		got, err := st.UpdateRefund(ctx, id, at(1), func(r models.Refund) (models.Refund, error) {
			return models.SetRefundDestination(r, toAccount)
		})
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingApproval, got.Status)
		require.NotNil(t, got.Destination)
		assert.Equal(t, toAccount, *got.Destination)
		stored, err := st.Refund(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, got, stored, "returned as stored")
		updated, _, err := st.RefundRowTimes(ctx, id)
		require.NoError(t, err)
		assert.True(t, at(1).Equal(updated), "updated_at %v", updated)

		// Refused: nothing written, the model's error as it is.
		_, err = st.UpdateRefund(ctx, id, at(2), func(r models.Refund) (models.Refund, error) {
			return models.FailRefund(r, "no trustline", at(2))
		})
		var me *models.Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, models.CodeInvalidRefundState, me.Code)
		errBoom := errors.New("boom")
		_, err = st.UpdateRefund(ctx, id, at(2), func(r models.Refund) (models.Refund, error) {
			r.Status = models.RefundCancelled // what a move returns with its error is never written
			return r, errBoom
		})
		assert.Same(t, errBoom, err)
		after, err := st.Refund(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, stored, after, "a refused move writes nothing")
		updated, _, err = st.RefundRowTimes(ctx, id)
		require.NoError(t, err)
		assert.True(t, at(1).Equal(updated), "updated_at untouched: %v", updated)

		got, err = st.UpdateRefund(ctx, id, at(3), func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, at(3)) })
		require.NoError(t, err)
		assert.Equal(t, models.RefundSending, got.Status)
		require.NotNil(t, got.ApprovedAt)
		assert.True(t, at(3).Equal(*got.ApprovedAt))
		got, err = st.UpdateRefund(ctx, id, at(4), func(r models.Refund) (models.Refund, error) {
			return models.RecordRefundTransaction(r, strings.ToUpper(payoutTx), "AAAAenvelope")
		})
		require.NoError(t, err)
		assert.Equal(t, payoutTx, got.TransactionHash)
		assert.Equal(t, "AAAAenvelope", got.Envelope)
		got, err = st.UpdateRefund(ctx, id, at(5), func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, at(5)) })
		require.NoError(t, err)
		assert.Equal(t, models.RefundSent, got.Status)

		// The same write again (a retried activity) changes nothing.
		again, err := st.UpdateRefund(ctx, id, at(6), func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, at(6)) })
		require.NoError(t, err)
		assert.Equal(t, got, again)
		updated, _, err = st.RefundRowTimes(ctx, id)
		require.NoError(t, err)
		assert.True(t, at(5).Equal(updated), "a move that changes nothing writes nothing: updated_at %v", updated)
		stored, err = st.Refund(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, got, stored)
		require.NotNil(t, stored.SentAt)
		assert.True(t, at(5).Equal(*stored.SentAt))
		assert.Equal(t, "AAAAenvelope", stored.Envelope)
		assert.Equal(t, "12.5", decimalString(stored.Value), "the value is kept")

		_, err = st.UpdateRefund(ctx, "rfd_missing", at(7), func(r models.Refund) (models.Refund, error) { return r, nil })
		assert.ErrorIs(t, err, models.ErrRefundNotFound)
	})
}

// An order owing money back leaves refund_due (or overpaid) only once
// every refund it owes is settled: refunded when it failed, confirmed
// when it kept its purchase.
func TestOrderPaymentStatusFollowsItsRefunds(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(time.Hour)

		// A failed order that was also paid in a wrong asset: two refunds.
		o := failedOrder(t, st, a.ID, "crt_f", &toSender)
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-xlm", o.Number, "XLM", "40"), time.Now()))
		refunds, err := st.CreateOwedRefunds(ctx, o.ID, now)
		require.NoError(t, err)
		require.Len(t, refunds, 2)
		own, xlm := refundByKey(t, refunds, "order:"+o.ID+":1"), refundByKey(t, refunds, "payment:p-xlm")
		require.Equal(t, models.PaymentRefundDue, paymentStatusOf(t, st, o.ID))
		dueBack := func(id string) string {
			t.Helper()
			got, err := st.Order(ctx, id)
			require.NoError(t, err)
			return models.AmountDueBack(got).String()
		}
		require.Equal(t, "12.5", dueBack(o.ID))

		_, err = st.UpdateRefund(ctx, own.ID, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefundDue, paymentStatusOf(t, st, o.ID), "approved is not sent")
		_, err = st.UpdateRefund(ctx, own.ID, now, func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, txOf(r.ID), now) })
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefundDue, paymentStatusOf(t, st, o.ID), "the wrong-asset payment is still owed")
		assert.Equal(t, "0", dueBack(o.ID), "the order's own money went back; the XLM is in another asset")
		_, err = st.UpdateRefund(ctx, xlm.ID, now, func(r models.Refund) (models.Refund, error) { return models.CancelRefund(r, now) })
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefunded, paymentStatusOf(t, st, o.ID), "every refund settled")

		// An overpaid order keeps its purchase: confirmed once its excess is sent.
		p := overpaidOrder(t, st, a.ID, "crt_o", "p-over", &toSender)
		refunds, err = st.CreateOwedRefunds(ctx, p.ID, now)
		require.NoError(t, err)
		require.Len(t, refunds, 1)
		_, err = st.UpdateRefund(ctx, refunds[0].ID, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
		require.NoError(t, err)
		assert.Equal(t, models.PaymentOverpaid, paymentStatusOf(t, st, p.ID))
		assert.Equal(t, "1", dueBack(p.ID))
		_, err = st.UpdateRefund(ctx, refunds[0].ID, now, func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, txOf(r.ID), now) })
		require.NoError(t, err)
		assert.Equal(t, models.PaymentConfirmed, paymentStatusOf(t, st, p.ID))
		assert.Equal(t, "0", dueBack(p.ID), "the excess went back")
	})
}

// Two refunds of one order settled at once both count: the second write
// sees the first's status, and the order ends refunded.
func TestConcurrentSettlementsSettleTheOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		now := t0.Add(time.Hour)
		for round := range 5 {
			o := failedOrder(t, st, a.ID, fmt.Sprintf("crt_%d", round), &toSender)
			xlmID := fmt.Sprintf("p-xlm-%d", round)
			require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment(xlmID, o.Number, "XLM", "40"), time.Now()))
			refunds, err := st.CreateOwedRefunds(ctx, o.ID, now)
			require.NoError(t, err)
			own, xlm := refundByKey(t, refunds, "order:"+o.ID+":1"), refundByKey(t, refunds, "payment:"+xlmID)
			_, err = st.UpdateRefund(ctx, own.ID, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
			require.NoError(t, err)

			moves := map[string]func(models.Refund) (models.Refund, error){
				own.ID: func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, txOf(r.ID), now) },
				xlm.ID: func(r models.Refund) (models.Refund, error) { return models.CancelRefund(r, now) },
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, len(moves))
			for id, move := range moves {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := st.UpdateRefund(ctx, id, now, move)
					errs <- err
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.Equal(t, models.PaymentRefunded, paymentStatusOf(t, st, o.ID), "round %d", round)
		}
	})
}

// refundAt stores a refund of the account's order (or of none) created at
// t0 plus minute minutes.
func refundAt(t *testing.T, st *sqlstore.Store, accountID string, mode models.Mode, orderID string, minute int) models.Refund {
	t.Helper()
	key := fmt.Sprintf("payment:p-%s-%d", accountID, minute)
	r, created, err := st.CreateRefund(context.Background(), models.Refund{
		ID: models.RefundID(key), Key: key, OrderID: orderID, AccountID: accountID, Mode: mode,
		PaymentIDs: []string{"p"}, Reason: models.RefundLatePayment, Amount: decimal.RequireFromString("1"), Asset: "USDC",
		Status: models.RefundAwaitingDestination, CreatedAt: t0.Add(time.Duration(minute) * time.Minute),
	})
	require.NoError(t, err)
	require.True(t, created)
	return r
}

// unmatchedRefund stores p as a payment that matched no order and creates
// its refund, which must be new.
func unmatchedRefund(t *testing.T, st *sqlstore.Store, p models.Payment) models.Refund {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.SaveMatch(ctx, p, "", time.Now()))
	r, err := models.RefundOfUnmatchedPayment(p, models.PaymentStateUnmatched, t0)
	require.NoError(t, err)
	stored, created, err := st.CreateRefund(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	return stored
}

func refundIDs(rs []models.Refund) []string {
	return idsOf(rs, func(r models.Refund) string { return r.ID })
}

// An account lists its own refunds in one mode, newest first, page by
// page; another account's refund is neither listed nor found.
func TestListRefunds(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		b := newAccount(t, st, "b")
		oa1, oa2 := newOrder(t, st, a.ID, "crt_a1", nil), newOrder(t, st, a.ID, "crt_a2", nil)
		ob := newOrder(t, st, b.ID, "crt_b", nil)

		var mine []models.Refund // oldest first
		for m := 1; m <= 5; m++ {
			o := oa1
			if m%2 == 0 {
				o = oa2
			}
			mine = append(mine, refundAt(t, st, a.ID, models.ModeTest, o.ID, m))
		}
		theirs := refundAt(t, st, b.ID, models.ModeTest, ob.ID, 0)
		live := refundAt(t, st, a.ID, models.ModeLive, "", 6)

		q := models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 2}
		var pages [][]string
		for {
			page, more, err := st.ListRefunds(ctx, q)
			require.NoError(t, err)
			pages = append(pages, refundIDs(page))
			if !more {
				break
			}
			require.Less(t, len(pages), 5, "the pages end")
			q.StartingAfter = page[len(page)-1].ID
		}
		assert.Equal(t, [][]string{{mine[4].ID, mine[3].ID}, {mine[2].ID, mine[1].ID}, {mine[0].ID}}, pages)

		page, more, err := st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest, OrderID: oa2.ID, Limit: 10})
		require.NoError(t, err)
		assert.False(t, more)
		assert.Equal(t, []string{mine[3].ID, mine[1].ID}, refundIDs(page), "by order")
		from, to := t0.Add(2*time.Minute), t0.Add(4*time.Minute)
		page, _, err = st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest, CreatedGTE: &from, CreatedLTE: &to, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{mine[3].ID, mine[2].ID, mine[1].ID}, refundIDs(page), "created in the range, bounds included")
		_, err = st.UpdateRefund(ctx, mine[2].ID, t0, func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, toSender) })
		require.NoError(t, err)
		page, _, err = st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest, Status: models.RefundAwaitingApproval, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{mine[2].ID}, refundIDs(page), "by status")

		page, _, err = st.ListRefunds(ctx, models.RefundListQuery{AccountID: b.ID, Mode: models.ModeTest, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{theirs.ID}, refundIDs(page), "an account lists its own refunds only")
		page, _, err = st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeLive, Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{live.ID}, refundIDs(page), "in its mode only")

		for _, cursor := range []string{theirs.ID, live.ID, "rfd_missing"} {
			_, _, err = st.ListRefunds(ctx, models.RefundListQuery{AccountID: a.ID, Mode: models.ModeTest, StartingAfter: cursor, Limit: 10})
			assert.ErrorIs(t, err, models.ErrRefundNotFound, "cursor %s", cursor)
		}
		_, err = st.RefundForAccount(ctx, b.ID, models.ModeTest, mine[0].ID)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "another account's refund")
		_, err = st.RefundForAccount(ctx, a.ID, models.ModeLive, mine[0].ID)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "another mode's refund")
		got, err := st.RefundForAccount(ctx, a.ID, models.ModeTest, mine[0].ID)
		require.NoError(t, err)
		assert.Equal(t, mine[0], got)

		all, err := st.Refunds(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{theirs.ID, mine[0].ID, mine[1].ID, mine[2].ID, mine[3].ID, mine[4].ID, live.ID},
			refundIDs(all), "operators see every account's refunds, oldest first")
		waiting, err := st.Refunds(ctx, models.RefundAwaitingApproval, models.RefundSent)
		require.NoError(t, err)
		assert.Equal(t, []string{mine[2].ID}, refundIDs(waiting))
	})
}

// An unmatched payment's refund is created once by its key, in the
// payment's mode, with no order or account.
func TestCreateRefundOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		p := livePayment("p-stray", "nothing", "USDC", "5.5")
		p.Sender = "GSTRAY"
		stored := unmatchedRefund(t, st, p)
		assert.Equal(t, models.ModeTest, stored.Mode, "the payment's mode")
		assert.Empty(t, stored.OrderID)
		assert.Empty(t, stored.AccountID)
		assert.Nil(t, stored.Value)
		assert.Equal(t, "5.5", stored.Amount.String())
		assert.Equal(t, []string{p.ID}, stored.PaymentIDs)

		later := stored
		later.CreatedAt = t0.Add(time.Hour)
		again, created, err := st.CreateRefund(ctx, later)
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, stored, again, "the refund stored first")
		read, err := st.Refund(ctx, stored.ID)
		require.NoError(t, err)
		assert.Equal(t, stored, read)
		_, err = st.Refund(ctx, "rfd_missing")
		assert.ErrorIs(t, err, models.ErrRefundNotFound)

		senders, err := st.PaymentSenders(ctx, []string{p.ID, "p-missing"})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{p.ID: "GSTRAY"}, senders)
	})
}

// approvable stores a refund of the given value (nil: unknown) awaiting
// approval to its sender.
func approvable(t *testing.T, st *sqlstore.Store, key string, value *decimal.Decimal) models.Refund {
	t.Helper()
	require.NoError(t, st.SaveMatch(context.Background(), livePayment(key, "nothing", "USDC", "1"), "", time.Now()))
	r, _, err := st.CreateRefund(context.Background(), models.Refund{
		Key: key, Mode: models.ModeTest, PaymentIDs: []string{key}, Reason: models.RefundUnmatchedPayment,
		Amount: decimal.RequireFromString("1"), Asset: "USDC", Value: value, Status: models.RefundAwaitingApproval,
		Destination: &toSender, CreatedAt: t0,
	})
	require.NoError(t, err)
	return r
}

func dec(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

// Refunds are approved automatically while the day's approved value stays
// within the maximum, at it included; beyond it, or of unknown value,
// they wait.
func TestApproveRefundWithinDailyMax(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		max := decimal.RequireFromString("10")
		day := t0
		now := t0.Add(time.Hour)
		r4, r6, r1 := approvable(t, st, "r4", dec("4")), approvable(t, st, "r6", dec("6")), approvable(t, st, "r1", dec("1"))
		r5, unknown := approvable(t, st, "r5", dec("5")), approvable(t, st, "unknown", nil)

		got, ok, err := st.ApproveRefundWithinDailyMax(ctx, r4.ID, now, day, max)
		require.NoError(t, err)
		assert.True(t, ok, "4 of 10")
		assert.Equal(t, models.RefundSending, got.Status)
		require.NotNil(t, got.ApprovedAt)
		assert.True(t, now.Equal(*got.ApprovedAt))
		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, r6.ID, now, day, max)
		require.NoError(t, err)
		assert.True(t, ok, "4 + 6: at the maximum")
		got, ok, err = st.ApproveRefundWithinDailyMax(ctx, r1.ID, now, day, max)
		require.NoError(t, err)
		assert.False(t, ok, "4 + 6 + 1: over")
		assert.Equal(t, models.RefundAwaitingApproval, got.Status)
		stored, err := st.Refund(ctx, r1.ID)
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingApproval, stored.Status, "not written")
		assert.Nil(t, stored.ApprovedAt)

		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, unknown.ID, now, day, max)
		require.NoError(t, err)
		assert.False(t, ok, "a refund of unknown value waits for an operator")
		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, r1.ID, now, now.Add(time.Second), decimal.Zero)
		require.NoError(t, err)
		assert.False(t, ok, "a zero maximum approves nothing")
		got, ok, err = st.ApproveRefundWithinDailyMax(ctx, r4.ID, now.Add(time.Minute), day, max)
		require.NoError(t, err)
		assert.True(t, ok, "approving an approved refund again (a retry) reports it approved")
		assert.True(t, now.Equal(*got.ApprovedAt), "and changes nothing")

		// A refund whose payout failed sent nothing: it no longer counts.
		_, err = st.UpdateRefund(ctx, r6.ID, now, func(r models.Refund) (models.Refund, error) { return models.FailRefund(r, "no trustline", now) })
		require.NoError(t, err)
		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, r5.ID, now, day, max)
		require.NoError(t, err)
		assert.True(t, ok, "4 + 5: the failed 6 does not count")
		// Approvals before since do not count.
		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, r1.ID, now.Add(2*time.Hour), now.Add(time.Second), decimal.RequireFromString("1"))
		require.NoError(t, err)
		assert.True(t, ok, "a new day: 1 of 1")

		noDestination, _, err := st.CreateRefund(ctx, models.Refund{Key: "nodest", Mode: models.ModeTest, Reason: models.RefundLatePayment,
			Amount: decimal.RequireFromString("1"), Asset: "USDC", Value: dec("1"), Status: models.RefundAwaitingDestination, CreatedAt: t0})
		require.NoError(t, err)
		_, ok, err = st.ApproveRefundWithinDailyMax(ctx, noDestination.ID, now.Add(3*time.Hour), now.Add(3*time.Hour), max)
		assert.Equal(t, models.CodeInvalidRefundState, models.CodeOf(err), "models.ApproveRefund's refusal: %v", err)
		assert.False(t, ok)
	})
}

// Two approvals at once that together exceed the maximum approve one:
// each sums what the other approved.
func TestApproveRefundWithinDailyMaxConcurrently(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		max := decimal.RequireFromString("10")
		for round := range 5 {
			day := t0.Add(time.Duration(round) * 24 * time.Hour) // each round a new day
			ids := []string{
				approvable(t, st, fmt.Sprintf("a%d", round), dec("8")).ID,
				approvable(t, st, fmt.Sprintf("b%d", round), dec("8")).ID,
			}
			var (
				wg       sync.WaitGroup
				approved [2]bool
				errs     [2]error
				start    = make(chan struct{})
			)
			for i, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, approved[i], errs[i] = st.ApproveRefundWithinDailyMax(ctx, id, day, day, max)
				}()
			}
			close(start)
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			assert.True(t, approved[0] != approved[1], "round %d: exactly one of 8 + 8 within 10 (%v)", round, approved)
		}
	})
}

// The outbox of refund workflows: a refund is listed until its workflow
// is marked started, and keeps its first mark.
func TestRefundWorkflowsToStart(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		r1, r2 := refundAt(t, st, a.ID, models.ModeTest, "", 1), refundAt(t, st, a.ID, models.ModeTest, "", 2)
		refundAt(t, st, a.ID, models.ModeTest, "", 3) // after the cutoff
		cutoff := t0.Add(2*time.Minute + 30*time.Second)

		todo, err := st.RefundWorkflowsToStart(ctx, cutoff, 10)
		require.NoError(t, err)
		assert.Equal(t, []string{r1.ID, r2.ID}, refundIDs(todo), "created before the cutoff, oldest first")
		todo, err = st.RefundWorkflowsToStart(ctx, cutoff, 1)
		require.NoError(t, err)
		assert.Equal(t, []string{r1.ID}, refundIDs(todo), "at most limit")

		first := t0.Add(time.Hour)
		require.NoError(t, st.MarkRefundWorkflowStarted(ctx, r1.ID, first))
		require.NoError(t, st.MarkRefundWorkflowStarted(ctx, r1.ID, first.Add(time.Hour)), "marked again")
		_, started, err := st.RefundRowTimes(ctx, r1.ID)
		require.NoError(t, err)
		require.NotNil(t, started)
		assert.True(t, first.Equal(*started), "the first mark is kept: %v", started)
		todo, err = st.RefundWorkflowsToStart(ctx, cutoff, 10)
		require.NoError(t, err)
		assert.Equal(t, []string{r2.ID}, refundIDs(todo))

		assert.ErrorIs(t, st.MarkRefundWorkflowStarted(ctx, "rfd_missing", first), models.ErrRefundNotFound)
	})
}

// An order's refund destination is stored when the order is created and
// read back by every read of the order; it can be set and cleared later
// by its own account only.
func TestOrderRefundDestinationRoundTrips(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		b := newAccount(t, st, "b")
		with := newOrder(t, st, a.ID, "crt_with", &toAccount)
		without := newOrder(t, st, a.ID, "crt_without", nil)
		require.NotNil(t, with.RefundDestination, "CreateOrder returns it")
		assert.Equal(t, toAccount, *with.RefundDestination)
		assert.Nil(t, without.RefundDestination)

		reads := func(id string) map[string]*models.RefundDestination {
			out := map[string]*models.RefundDestination{}
			o, err := st.Order(ctx, id)
			require.NoError(t, err)
			out["Order"] = o.RefundDestination
			o, err = st.OrderForAccount(ctx, a.ID, models.ModeTest, id) // Postgres: the one-query client read
			require.NoError(t, err)
			out["OrderForAccount"] = o.RefundDestination
			page, _, err := st.ListOrders(ctx, models.OrderListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 10})
			require.NoError(t, err)
			for _, o := range page {
				if o.ID == id {
					out["ListOrders"] = o.RefundDestination
				}
			}
			require.Contains(t, out, "ListOrders")
			return out
		}
		for read, d := range reads(with.ID) {
			if assert.NotNil(t, d, read) {
				assert.Equal(t, toAccount, *d, read)
			}
		}
		for read, d := range reads(without.ID) {
			assert.Nil(t, d, read)
		}

		require.NoError(t, st.SetOrderRefundDestination(ctx, a.ID, models.ModeTest, without.ID, &toSender, time.Now()))
		for read, d := range reads(without.ID) {
			if assert.NotNil(t, d, read) {
				assert.Equal(t, toSender, *d, read)
			}
		}
		require.NoError(t, st.SetOrderRefundDestination(ctx, a.ID, models.ModeTest, with.ID, nil, time.Now()))
		for read, d := range reads(with.ID) {
			assert.Nil(t, d, "cleared: %s", read)
		}

		assert.ErrorIs(t, st.SetOrderRefundDestination(ctx, b.ID, models.ModeTest, with.ID, &toSender, time.Now()), models.ErrOrderNotFound)
		assert.ErrorIs(t, st.SetOrderRefundDestination(ctx, a.ID, models.ModeLive, with.ID, &toSender, time.Now()), models.ErrOrderNotFound)
		assert.ErrorIs(t, st.SetOrderRefundDestination(ctx, a.ID, models.ModeTest, "ord_missing", &toSender, time.Now()), models.ErrOrderNotFound)
		o, err := st.Order(ctx, with.ID)
		require.NoError(t, err)
		assert.Nil(t, o.RefundDestination, "another account's write changed nothing")
	})
}
