package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

const (
	refundAccount  = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	refundAccount2 = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"
)

// StartRefund and MoveRefund make recordingWorkflows the refunds'
// workflows: a move is written to the store as the Refund workflow's
// activities write it, and a destination in refuseDestinations is refused
// as Horizon would refuse an account that does not exist.
func (w *recordingWorkflows) StartRefund(_ context.Context, r models.Refund, number string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refundStarts = append(w.refundStarts, r.ID+"@"+number)
	return nil
}

func (w *recordingWorkflows) MoveRefund(ctx context.Context, id string, m workflows.RefundMove) (models.Refund, error) {
	now := w.now()
	move := func(r models.Refund) (models.Refund, error) { return m.Rule(r, now) }
	switch m := m.(type) {
	case workflows.SetRefundDestination:
		if w.refuseDestinations[m.Destination.Address] {
			return models.Refund{}, models.FieldError(models.CodeInvalidRefundDestination, "refund_destination.address", "No such account on the network")
		}
		if m.Claim != "" {
			return w.store.UpdateRefundByClaim(ctx, id, m.Claim, now, move)
		}
	case workflows.CancelRefund:
	case workflows.FailTestPayout:
		// Accepted for the next payout, which this fake never makes.
		r, err := w.store.Refund(ctx, id)
		if err != nil {
			return models.Refund{}, err
		}
		return m.Rule(r, now)
	default:
		return models.Refund{}, models.ErrRefundClosed
	}
	return w.store.UpdateRefund(ctx, id, now, move)
}

// newFailedOrder is failedWithRefund of an order for a new cart, its
// request body edited as orderBody edits it.
func (e *ordersEnv) newFailedOrder(t *testing.T, key string, edits ...func(body, addr map[string]any)) string {
	t.Helper()
	cartID, _ := e.newCart(t, key)
	return e.failedWithRefund(t, key, orderBody(cartID, edits...))
}

// newFailedStoredOrder is newFailedOrder's order as the store holds it.
func (e *ordersEnv) newFailedStoredOrder(t *testing.T, key string) models.Order {
	t.Helper()
	o, err := e.st.Order(t.Context(), e.newFailedOrder(t, key))
	require.NoError(t, err)
	return o
}

// withRefundDestination sets the order request's refund_destination.
func withRefundDestination(dest map[string]any) func(body, addr map[string]any) {
	return func(body, _ map[string]any) { body["refund_destination"] = dest }
}

// failedWithRefund creates an order through the API, pays it, fails it
// and creates its refunds, as its workflow would; it returns the order's
// id.
func (e *ordersEnv) failedWithRefund(t *testing.T, key string, body string) string {
	t.Helper()
	r := e.postOrder(t, key, body, nil)
	require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
	o := decodeCreated(t, r)
	ctx := context.Background()
	stored, err := e.st.Order(ctx, o.ID)
	require.NoError(t, err)
	now := e.clock.Now()
	require.NoError(t, e.st.RecordPayment(ctx, o.ID, models.Payment{
		ID: "sandbox:" + o.ID, Mode: stored.Mode, Asset: stored.PaymentAsset, Amount: stored.PaymentAmount,
		Memo: o.Number, Sender: refundAccount2, ReceivedAt: now, OrderID: o.ID,
	}, time.Now()))
	require.NoError(t, e.st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: now, AmountReceived: stored.PaymentAmount}, time.Now()))
	require.NoError(t, e.st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderFailed, PaymentStatus: models.PaymentRefundDue, At: now, AmountReceived: stored.PaymentAmount, Reason: "out of stock"}, time.Now()))
	_, err = e.st.CreateOwedRefunds(ctx, o.ID, now)
	require.NoError(t, err)
	return o.ID
}

func (e *ordersEnv) setDestination(t *testing.T, key, ref, body string) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: "/v1/orders/" + url.PathEscape(ref) + "/refund_destination", auth: "Bearer " + key, body: body})
}

// TestRefunds: a failed order's refund shows in the order, in the refund
// list and by id, to its own account only; the client sets where it
// goes, on the order and on its refunds; bad destinations and bad list
// queries are refused in the contract's envelope.
func TestRefunds(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		otherKey, _ := e.accountKey(t, "other", models.ModeTest, models.TierFree)
		liveKey, _ := e.accountKey(t, "acme-live", models.ModeLive, models.TierFree)
		_ = accountID

		// A destination on the order request is checked like any other.
		cartID, _ := e.newCart(t, key)
		bad := e.postOrder(t, key, orderBody(cartID, withRefundDestination(map[string]any{"address": "GNOTANACCOUNT"})), nil)
		requireError(t, bad, http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.address")
		withDest := e.postOrder(t, key, orderBody(cartID, withRefundDestination(map[string]any{"address": refundAccount, "memo_type": "id", "memo": "42"})), nil)
		require.Equalf(t, http.StatusCreated, withDest.status, "body %s", withDest.body)
		created := decodeCreated(t, withDest)
		require.NotNil(t, created.RefundDestination)
		assert.Equal(t, refundAccount, *created.RefundDestination.Address)
		assert.Equal(t, "42", *created.RefundDestination.Memo)

		// An order without one: its refund waits for it.
		orderID := e.newFailedOrder(t, key)
		v := decodeOrderView(t, e.get(t, "/v1/orders/"+orderID, key))
		assert.Nil(t, v.RefundDestination)
		require.Len(t, v.Refunds, 1)
		r := v.Refunds[0]
		assert.Equal(t, "awaiting_destination", r.Status)
		assert.Equal(t, "order_failed", r.Reason)
		assert.Equal(t, v.Payment.AmountReceived, r.Amount)
		assert.Equal(t, orderID, *r.OrderID)
		assert.Nil(t, r.Destination)
		assert.Nil(t, r.TransactionHash)

		// By id and in the list, for its own account and mode only.
		got := e.get(t, "/v1/refunds/"+r.ID, key)
		require.Equalf(t, http.StatusOK, got.status, "body %s", got.body)
		assert.Contains(t, string(got.body), `"id":"`+r.ID+`"`)
		requireError(t, e.get(t, "/v1/refunds/"+r.ID, otherKey), http.StatusNotFound, models.CodeRefundNotFound, "")
		requireError(t, e.get(t, "/v1/refunds/"+r.ID, liveKey), http.StatusNotFound, models.CodeRefundNotFound, "")
		requireError(t, e.get(t, "/v1/refunds/rfd_nope", key), http.StatusNotFound, models.CodeRefundNotFound, "")
		list := e.get(t, "/v1/refunds?order_id="+orderID+"&status=awaiting_destination", key)
		require.Equalf(t, http.StatusOK, list.status, "body %s", list.body)
		assert.Equal(t, 1, strings.Count(string(list.body), `"id":"rfd_`), "body %s", list.body)
		assert.NotContains(t, string(e.get(t, "/v1/refunds", otherKey).body), r.ID)
		requireError(t, e.get(t, "/v1/refunds?status=lost", key), http.StatusBadRequest, models.CodeInvalidRequest, "status")
		requireError(t, e.get(t, "/v1/refunds?order=x", key), http.StatusBadRequest, models.CodeInvalidRequest, "order")
		requireError(t, e.get(t, "/v1/refunds?starting_after="+r.ID, otherKey), http.StatusBadRequest, models.CodeInvalidRequest, "starting_after")

		// The client sets the destination: checked, then given to the
		// order and its refund.
		requireError(t, e.setDestination(t, key, orderID, `{"address":"`+refundAccount+`","memo_type":"id","memo":"x"}`),
			http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.memo")
		requireError(t, e.setDestination(t, key, orderID, `{"address":"`+refundAccount+`","to_sender":true}`),
			http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.address")
		requireError(t, e.setDestination(t, otherKey, orderID, `{"to_sender":true}`), http.StatusNotFound, models.CodeOrderNotFound, "")
		e.wf.refuseDestinations = map[string]bool{refundAccount2: true}
		requireError(t, e.setDestination(t, key, orderID, `{"address":"`+refundAccount2+`"}`),
			http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.address")
		assert.Nil(t, decodeOrderView(t, e.get(t, "/v1/orders/"+orderID, key)).RefundDestination, "a refused destination is not kept")

		set := e.setDestination(t, key, orderID, `{"address":"`+refundAccount+`","memo_type":"text","memo":"exchange 7"}`)
		require.Equalf(t, http.StatusOK, set.status, "body %s", set.body)
		after := decodeOrderView(t, set)
		require.NotNil(t, after.RefundDestination)
		assert.Equal(t, refundAccount, *after.RefundDestination.Address)
		require.Len(t, after.Refunds, 1)
		assert.Equal(t, "awaiting_approval", after.Refunds[0].Status)
		require.NotNil(t, after.Refunds[0].Destination)
		assert.Equal(t, "exchange 7", *after.Refunds[0].Destination.Memo)

		// A refund created after the destination starts with it.
		withDestID := e.newFailedOrder(t, key, withRefundDestination(map[string]any{"to_sender": true}))
		v3 := e.getOrder(t, key, withDestID)
		require.Len(t, v3.Refunds, 1)
		assert.Equal(t, "awaiting_approval", v3.Refunds[0].Status)
		assert.True(t, v3.Refunds[0].Destination.ToSender)

		// A refund's list leaves nothing of another order in.
		page := e.get(t, "/v1/refunds?limit=1", key)
		require.Equal(t, http.StatusOK, page.status)
		assert.Contains(t, string(page.body), `"has_more":true`)
		_ = time.Second
	})
}

// TestOrderReadsShowEveryRefund: an order's reads show its refunds
// whatever its payment status says now, and the refunds are the one ledger
// of what it owes back: an operator's hand-sent record of money a refund
// covers is refused, and a payment whose refund was sent reads refunded.
func TestOrderReadsShowEveryRefund(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		o := e.newFailedStoredOrder(t, key)
		ctx := context.Background()

		err := e.st.MarkOrderRefunded(ctx, o.Number, strings.Repeat("cd", 32), e.clock.Now())
		assert.Equal(t, models.CodeInvalidRefundState, models.CodeOf(err), "the refund covers the order's money: %v", err)

		// An order that expired unpaid, then a payment after it closed:
		// that payment's own refund, sent, is all the order ever owed.
		expired := e.newOrder(t, key)
		orderID := expired.ID
		require.NoError(t, e.st.RecordTransition(ctx, orderID, models.Transition{Status: models.OrderCancelled,
			PaymentStatus: models.PaymentExpired, At: e.clock.Now(), Cancellation: models.CancellationPaymentWindowExpired}, time.Now()))
		late := models.Payment{ID: "stellar:testnet:late", Mode: o.Mode, Asset: o.PaymentAsset, Amount: o.PaymentAmount,
			Memo: expired.Number, Sender: refundAccount2, ReceivedAt: e.clock.Now()}
		require.NoError(t, e.st.SaveMatch(ctx, late, orderID, time.Now()))
		_, err = e.st.MarkPaymentLate(ctx, late.ID, e.clock.Now())
		require.NoError(t, err)
		lateRefund := models.RefundID(models.PaymentRefundKey(late.ID))
		hash := strings.Repeat("ef", 32)
		for _, mv := range []func(models.Refund, time.Time) (models.Refund, error){
			func(r models.Refund, _ time.Time) (models.Refund, error) {
				return models.SetRefundDestination(r, models.RefundDestination{ToSender: true})
			},
			func(r models.Refund, now time.Time) (models.Refund, error) { return models.ApproveRefund(r, now) },
			func(r models.Refund, now time.Time) (models.Refund, error) {
				return models.MarkRefundSent(r, hash, now)
			},
		} {
			e.moveRefund(t, lateRefund, mv)
		}

		v := decodeOrderView(t, e.get(t, "/v1/orders/"+orderID, key))
		assert.Equal(t, "refunded", v.PaymentStatus)
		require.Len(t, v.Refunds, 1, "the late payment's refund, settled")
		var sent refundView
		for _, r := range v.Refunds {
			if r.ID == lateRefund {
				sent = r
			}
		}
		assert.Equal(t, "sent", sent.Status)
		var paid orderPaymentView
		for _, p := range v.Payments {
			if p.ID == late.ID {
				paid = p
			}
		}
		assert.Equal(t, "refunded", paid.Outcome, "the payment its refund returned")
		assert.NotNil(t, paid.RefundedAt)
		if assert.NotNil(t, paid.RefundTransactionHash) {
			assert.Equal(t, hash, *paid.RefundTransactionHash)
		}
	})
}

// muxedOf is a muxed account (M…) of the account g, with id.
func muxedOf(t *testing.T, g string, id uint64) string {
	t.Helper()
	plain, err := xdr.AddressToMuxedAccount(g)
	require.NoError(t, err)
	m, err := xdr.NewMuxedAccount(xdr.CryptoKeyTypeKeyTypeMuxedEd25519,
		xdr.MuxedAccountMed25519{Id: xdr.Uint64(id), Ed25519: plain.MustEd25519()})
	require.NoError(t, err)
	return m.Address()
}

// TestServiceAccountsAreNotRefundDestinations: the service's own accounts
// (where payers pay, in either mode, and the payout account), and muxed
// forms of them, are refused as a refund's destination wherever one is
// set: on the order request, on the order later, and by the payer on the
// claim page. A refund paid to the receiving account would come back as a
// late payment of a closed order, refunded to the same destination again.
func TestServiceAccountsAreNotRefundDestinations(t *testing.T) {
	payoutAccount := refundAccount2
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect, withLivePayments(), func(s *ordersSetup) {
			s.uses.PayoutAccount = payoutAccount
		})
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		own := map[string]string{
			"the live receiving account": livePayTo,
			"its muxed form":             muxedOf(t, livePayTo, 42),
			"the test receiving account": sandboxPayTo,
			"the payout account":         payoutAccount,
			"the payout account, muxed":  muxedOf(t, payoutAccount, 1),
		}
		c := e.newClaimRefund(t, key)
		for name, addr := range own {
			t.Run(name, func(t *testing.T) {
				cartID, _ := e.newCart(t, key)
				r := e.postOrder(t, key, orderBody(cartID, withRefundDestination(map[string]any{"address": addr})), nil)
				requireError(t, r, http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.address")
				assert.NotContains(t, string(r.body), addr, "the error never repeats the address")

				requireError(t, e.setDestination(t, key, c.orderID, `{"address":"`+addr+`"}`),
					http.StatusUnprocessableEntity, models.CodeInvalidRefundDestination, "refund_destination.address")

				claim := e.postClaim(t, c.token, url.Values{"address": {addr}})
				require.Equal(t, http.StatusUnprocessableEntity, claim.status)
				body := string(claim.body)
				assert.Contains(t, body, "account of this service")
				assert.Regexp(t, `id="address"[^>]* aria-invalid="true"`, body)
			})
		}
		r := e.readRefund(t, key, c.refundID)
		assert.Equal(t, "awaiting_destination", r.Status, "nothing was set")
		assert.Nil(t, decodeOrderView(t, e.get(t, "/v1/orders/"+c.orderID, key)).RefundDestination)

		// Another account is taken as before.
		set := e.setDestination(t, key, c.orderID, `{"address":"`+refundAccount+`"}`)
		require.Equalf(t, http.StatusOK, set.status, "body %s", set.body)
	})
}

// POST /v1/test_helpers/refunds/{id}/fail: a test refund with no payout
// on its way takes the refusal of its next payout and is answered as it
// stands; an unknown reason is 400 on its field, a settled refund 409
// invalid_refund_state, a live key 403, another account's refund 404.
// (The workflow's part is the fake's here; TestE2EAdvanceAndFail runs the
// real one.)
func TestFailTestRefundHelper(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		orderID := e.newFailedOrder(t, key)
		refund := decodeOrderView(t, e.get(t, "/v1/orders/"+orderID, key)).Refunds[0]
		fail := func(key, id, body string) response {
			return e.send(t, request{method: http.MethodPost, path: "/v1/test_helpers/refunds/" + id + "/fail", auth: "Bearer " + key, body: body})
		}

		for _, body := range []string{"", `{"reason":"no_trust"}`} {
			r := fail(key, refund.ID, body)
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			assert.Contains(t, string(r.body), `"status":"awaiting_destination"`, "answered as it stands")
		}
		requireError(t, fail(key, refund.ID, `{"reason":"bored"}`), http.StatusBadRequest, models.CodeInvalidRequest, "reason")

		other, _ := e.accountKey(t, "rival", models.ModeTest, models.TierFree)
		requireError(t, fail(other, refund.ID, ""), http.StatusNotFound, models.CodeRefundNotFound, "")
		live, _ := e.accountKey(t, "acme-live", models.ModeLive, models.TierFree)
		requireError(t, fail(live, refund.ID, ""), http.StatusForbidden, models.CodeTestModeOnly, "")
		requireError(t, fail(key, "rfd_nope", ""), http.StatusNotFound, models.CodeRefundNotFound, "")

		_, err := e.st.UpdateRefund(t.Context(), refund.ID, e.clock.Now(), func(r models.Refund) (models.Refund, error) {
			return models.CancelRefund(r, e.clock.Now())
		})
		require.NoError(t, err)
		refused := requireError(t, fail(key, refund.ID, ""), http.StatusConflict, models.CodeInvalidRefundState, "")
		assert.Contains(t, refused.Message, "cancelled")
	})
}
