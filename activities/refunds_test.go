package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// refundsStore is an in-memory RefundStore: moves apply as the real
// store applies them; err fails every write, failSent the writes of sent
// (the payout's transaction is still recorded).
type refundsStore struct {
	mu       sync.Mutex
	refunds  map[string]models.Refund
	senders  map[string]string // payment id → sender
	err      error
	failSent bool
}

func (s *refundsStore) Refund(_ context.Context, id string) (models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refunds[id]
	if !ok {
		return models.Refund{}, models.ErrRefundNotFound
	}
	return r, nil
}

func (s *refundsStore) UpdateRefund(_ context.Context, id string, _ time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return models.Refund{}, s.err
	}
	r, ok := s.refunds[id]
	if !ok {
		return models.Refund{}, models.ErrRefundNotFound
	}
	next, err := move(r)
	if err != nil {
		return models.Refund{}, err
	}
	if s.failSent && next.Status == models.RefundSent {
		return models.Refund{}, errors.New("connection reset")
	}
	s.refunds[id] = next
	return next, nil
}

// UpdateRefundByClaim moves as UpdateRefund does: no test here moves a
// refund through its claim.
func (s *refundsStore) UpdateRefundByClaim(ctx context.Context, id, _ string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	return s.UpdateRefund(ctx, id, now, move)
}

func (s *refundsStore) ApproveRefundWithinDailyMax(context.Context, string, time.Time, time.Time, decimal.Decimal) (models.Refund, bool, error) {
	return models.Refund{}, false, errors.New("not used")
}

func (s *refundsStore) CreateOwedRefunds(_ context.Context, orderID string, _ time.Time) ([]models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	var out []models.Refund
	for _, r := range s.refunds {
		if r.OrderID == orderID {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *refundsStore) MarkRefundWorkflowStarted(context.Context, string, time.Time) error {
	return nil
}

func (s *refundsStore) PaymentSenders(_ context.Context, ids []string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, id := range ids {
		if from, ok := s.senders[id]; ok {
			out[id] = from
		}
	}
	return out, nil
}

func (s *refundsStore) fail(err error, sent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.failSent = err, sent
}

// scriptedPayer pays, or refuses every payout while refuse is set.
type scriptedPayer struct{ refuse string }

func (scriptedPayer) CheckDestination(context.Context, models.RefundDestination, string) error {
	return nil
}

func (scriptedPayer) VerifyPayment(context.Context, string, models.RefundPayment) error { return nil }

func (p scriptedPayer) Pay(ctx context.Context, _ models.PayoutRequest, record func(context.Context, string, string) error) (models.PayoutResult, error) {
	hash := strings.Repeat("cd", 32)
	if err := record(ctx, hash, ""); err != nil {
		return models.PayoutResult{}, err
	}
	if p.refuse != "" {
		return models.PayoutResult{Outcome: models.PayoutRefused, Hash: hash, Code: "op_no_trust", Reason: p.refuse}, nil
	}
	return models.PayoutResult{Outcome: models.PayoutSent, Hash: hash}, nil
}

// TestRefundActivitiesDispatchTheirEvents: the refund activities' writes
// record refund events in the store; each such write hands its order's
// events to their delivery workflows once it has committed, so delivery
// does not wait for the outbox sweep. A refund of no order, or a write
// that did not commit, dispatches nothing.
func TestRefundActivitiesDispatchTheirEvents(t *testing.T) {
	dest := models.RefundDestination{Address: "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}
	refund := func(id, orderID string) models.Refund {
		return models.Refund{ID: id, OrderID: orderID, Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"),
			Status: models.RefundSending, Destination: &dest}
	}
	store := &refundsStore{refunds: map[string]models.Refund{
		"rfd_sent":      refund("rfd_sent", "ord_1"),
		"rfd_failed":    refund("rfd_failed", "ord_2"),
		"rfd_manual":    refund("rfd_manual", "ord_3"),
		"rfd_unmatched": refund("rfd_unmatched", ""),
	}}
	disp := &recordingDispatcher{}
	payers := map[models.Mode]Payer{models.ModeTest: scriptedPayer{}}
	start := func(context.Context, models.Refund, string) error { return nil }
	a := parts{Events: disp, Payouts: &RefundPayouts{Store: store, Payers: payers, Start: start}}.build()
	env := newEnv(t, a)
	send := func(id string) models.Refund {
		t.Helper()
		v, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: id})
		require.NoError(t, err)
		var r models.Refund
		require.NoError(t, v.Get(&r))
		return r
	}

	assert.Equal(t, models.RefundSent, send("rfd_sent").Status)
	assert.Equal(t, []string{"ord_1"}, disp.calls(), "refund.sent: dispatched")
	payers[models.ModeTest] = scriptedPayer{refuse: "no trustline"}
	assert.Equal(t, models.RefundFailed, send("rfd_failed").Status)
	assert.Equal(t, []string{"ord_1", "ord_2"}, disp.calls(), "refund.failed: dispatched")

	_, err := env.ExecuteActivity(allActs{}.MarkRefundSent, RefundMove{RefundID: "rfd_manual", TxHash: strings.Repeat("ef", 32), By: "ops"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ord_1", "ord_2", "ord_3"}, disp.calls(), "an operator's mark-sent: dispatched")

	_, err = env.ExecuteActivity(allActs{}.CreateRefunds, CreateRefundsInput{OrderID: "ord_1", OrderNumber: "1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ord_1", "ord_2", "ord_3", "ord_1"}, disp.calls(), "refund.created: dispatched")

	send("rfd_unmatched")
	assert.Len(t, disp.calls(), 4, "an unmatched payment's refund has no order, and no events")

	// A dispatcher failing does not fail the write: the sweep dispatches.
	disp.mu.Lock()
	disp.err = errors.New("temporal unavailable")
	disp.mu.Unlock()
	store.mu.Lock()
	store.refunds["rfd_again"] = refund("rfd_again", "ord_4")
	store.mu.Unlock()
	payers[models.ModeTest] = scriptedPayer{}
	assert.Equal(t, models.RefundSent, send("rfd_again").Status)
	assert.Len(t, disp.calls(), 5)

	// A write that did not commit dispatches nothing.
	store.mu.Lock()
	store.refunds["rfd_lost"] = refund("rfd_lost", "ord_5")
	store.mu.Unlock()
	store.fail(nil, true)
	_, err = env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_lost"})
	require.Error(t, err, "paid, but sent not written: the retry looks the payout up")
	store.fail(errors.New("connection reset"), false)
	_, err = env.ExecuteActivity(allActs{}.CreateRefunds, CreateRefundsInput{OrderID: "ord_5", OrderNumber: "5"})
	require.Error(t, err)
	_, err = env.ExecuteActivity(allActs{}.CancelRefund, RefundMove{RefundID: "rfd_lost", By: "ops"})
	require.Error(t, err)
	assert.Len(t, disp.calls(), 5, "nothing is dispatched for a write that did not commit")
}

// rebuildingPayer records two transactions in one call, as Pay does when
// the first was refused for good and proved never to apply; with
// meddle set, another attempt records its own before this one's first.
type rebuildingPayer struct{ meddle func() }

func (rebuildingPayer) CheckDestination(context.Context, models.RefundDestination, string) error {
	return nil
}

func (rebuildingPayer) VerifyPayment(context.Context, string, models.RefundPayment) error { return nil }

func (p rebuildingPayer) Pay(ctx context.Context, _ models.PayoutRequest, record func(context.Context, string, string) error) (models.PayoutResult, error) {
	if p.meddle != nil {
		p.meddle()
	}
	var hash string
	for _, hash = range []string{strings.Repeat("a1", 32), strings.Repeat("b2", 32)} {
		if err := record(ctx, hash, "envelope"); err != nil {
			return models.PayoutResult{}, err
		}
	}
	return models.PayoutResult{Outcome: models.PayoutSent, Hash: hash}, nil
}

// TestSendRefundRecordsEachTransactionItBuilds: the record function
// compares and sets on the last transaction the attempt knows, so an
// attempt may record a second transaction after its first, while an
// attempt another one overtook records nothing.
func TestSendRefundRecordsEachTransactionItBuilds(t *testing.T) {
	dest := models.RefundDestination{Address: "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}
	store := &refundsStore{refunds: map[string]models.Refund{
		"rfd_1": {ID: "rfd_1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"),
			Status: models.RefundSending, Destination: &dest},
	}}
	payers := map[models.Mode]Payer{models.ModeTest: rebuildingPayer{}}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{Store: store, Payers: payers}}.build()
	env := newEnv(t, a)
	v, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_1"})
	require.NoError(t, err)
	var r models.Refund
	require.NoError(t, v.Get(&r))
	assert.Equal(t, models.RefundSent, r.Status)
	assert.Equal(t, strings.Repeat("b2", 32), r.TransactionHash)

	store.mu.Lock()
	store.refunds["rfd_2"] = models.Refund{ID: "rfd_2", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"),
		Status: models.RefundSending, Destination: &dest}
	store.mu.Unlock()
	payers[models.ModeTest] = rebuildingPayer{meddle: func() {
		_, err := store.UpdateRefund(t.Context(), "rfd_2", time.Now(), func(r models.Refund) (models.Refund, error) {
			return models.RecordRefundTransaction(r, strings.Repeat("cc", 32), "envelope")
		})
		require.NoError(t, err)
	}}
	_, err = env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_2"})
	require.ErrorContains(t, err, errPayoutRaced.Error())
	got, err := store.Refund(t.Context(), "rfd_2")
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("cc", 32), got.TransactionHash, "the other attempt's stays recorded")
}

// countingPayer pays every payout, and counts them.
type countingPayer struct {
	mu   sync.Mutex
	paid []string
}

func (*countingPayer) CheckDestination(context.Context, models.RefundDestination, string) error {
	return nil
}

func (*countingPayer) VerifyPayment(context.Context, string, models.RefundPayment) error { return nil }

func (p *countingPayer) Pay(ctx context.Context, req models.PayoutRequest, record func(context.Context, string, string) error) (models.PayoutResult, error) {
	p.mu.Lock()
	p.paid = append(p.paid, req.Destination.Address)
	p.mu.Unlock()
	hash := strings.Repeat("ab", 32)
	if err := record(ctx, hash, ""); err != nil {
		return models.PayoutResult{}, err
	}
	return models.PayoutResult{Outcome: models.PayoutSent, Hash: hash}, nil
}

// TestNoRefundToTheServiceItself: a refund is never paid to one of the
// service's own accounts (the receiving account, the payout account) or a
// muxed form of one, nor to_sender when the sender is one: a refund paid
// to the receiving account comes back as a payment whose refund goes
// there again. Setting such a destination is refused; a payout to one
// (a destination stored before the rule) fails with the reason, unpaid.
func TestNoRefundToTheServiceItself(t *testing.T) {
	const (
		receiving = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
		muxed     = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK" // receiving, id 2^63
	)
	payoutAccount := models.StellarAccountID([32]byte{9})
	payer := models.StellarAccountID([32]byte{7})
	refund := func(id string, d models.RefundDestination, status models.RefundStatus) models.Refund {
		return models.Refund{ID: id, Mode: models.ModeLive, Asset: "XLM", Amount: decimal.RequireFromString("1"),
			Status: status, Destination: &d, PaymentIDs: []string{"pay_" + id}}
	}
	store := &refundsStore{refunds: map[string]models.Refund{}, senders: map[string]string{}}
	for id, d := range map[string]models.RefundDestination{
		"rfd_receiving": {Address: receiving},
		"rfd_muxed":     {Address: muxed},
		"rfd_payout":    {Address: payoutAccount},
		"rfd_sender":    {ToSender: true},
	} {
		store.refunds[id] = refund(id, d, models.RefundSending)
	}
	store.senders["pay_rfd_sender"] = payoutAccount
	store.refunds["rfd_payer"] = refund("rfd_payer", models.RefundDestination{ToSender: true}, models.RefundSending)
	store.senders["pay_rfd_payer"] = payer
	store.refunds["rfd_waiting"] = models.Refund{ID: "rfd_waiting", Mode: models.ModeLive, Asset: "XLM",
		Amount: decimal.RequireFromString("1"), Status: models.RefundAwaitingDestination}
	pays := &countingPayer{}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{
		Store: store, Payers: map[models.Mode]Payer{models.ModeLive: pays},
		ServiceAccounts: []string{receiving, payoutAccount},
		Start:           func(context.Context, models.Refund, string) error { return nil },
	}}.build()
	env := newEnv(t, a)

	for _, id := range []string{"rfd_receiving", "rfd_muxed", "rfd_payout", "rfd_sender"} {
		v, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: id})
		require.NoError(t, err, id)
		var r models.Refund
		require.NoError(t, v.Get(&r))
		assert.Equal(t, models.RefundFailed, r.Status, id)
		assert.Contains(t, r.FailureReason, "account of this service", id)
	}
	v, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_payer"})
	require.NoError(t, err)
	var sent models.Refund
	require.NoError(t, v.Get(&sent))
	assert.Equal(t, models.RefundSent, sent.Status, "a payer's own account is paid")
	assert.Equal(t, []string{payer}, pays.paid, "nothing is paid to the service's own accounts")

	for _, addr := range []string{receiving, muxed, payoutAccount} {
		_, err := env.ExecuteActivity(allActs{}.SetRefundDestination,
			RefundMove{RefundID: "rfd_waiting", Destination: &models.RefundDestination{Address: addr}, By: "api"})
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae, addr)
		assert.Equal(t, string(models.CodeInvalidRefundDestination), ae.Type(), addr)
	}
	assert.Equal(t, models.RefundAwaitingDestination, store.refunds["rfd_waiting"].Status)
}

// erringPayer fails every payout with err, recording nothing.
type erringPayer struct{ err error }

func (erringPayer) CheckDestination(context.Context, models.RefundDestination, string) error {
	return nil
}

func (p erringPayer) VerifyPayment(context.Context, string, models.RefundPayment) error { return p.err }

func (p erringPayer) Pay(context.Context, models.PayoutRequest, func(context.Context, string, string) error) (models.PayoutResult, error) {
	return models.PayoutResult{}, p.err
}

// alertLog keeps the alerts raised.
type alertLog struct {
	mu    sync.Mutex
	kinds []string
}

func (l *alertLog) Alert(_ context.Context, kind, _ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, kind)
}

// TestSendRefundAlertsWhenThePayoutWaitsOnFees: a payout whose fee the
// network wants above the configured maximum is retried, and an operator
// is alerted that it waits on fees.
func TestSendRefundAlertsWhenThePayoutWaitsOnFees(t *testing.T) {
	dest := models.RefundDestination{Address: "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}
	store := &refundsStore{refunds: map[string]models.Refund{
		"rfd_1": {ID: "rfd_1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"),
			Status: models.RefundSending, Destination: &dest},
	}}
	alerts := &alertLog{}
	payers := map[models.Mode]Payer{models.ModeTest: erringPayer{err: fmt.Errorf("payout: transaction ab: %w", models.ErrPayoutFeeTooLow)}}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{Store: store, Payers: payers, Alerts: alerts}}.build()
	env := newEnv(t, a)
	_, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_1"})
	require.Error(t, err)
	assert.Equal(t, []string{AlertPayoutFeeTooLow}, alerts.kinds)
	got, err := store.Refund(t.Context(), "rfd_1")
	require.NoError(t, err)
	assert.Equal(t, models.RefundSending, got.Status, "still being sent: retried")
}

// busyRail is a payout rail's answer that names its retry's delay.
type busyRail struct{ after time.Duration }

func (e busyRail) Error() string             { return "rail busy" }
func (e busyRail) RetryDelay() time.Duration { return e.after }

// TestSendRefundWaitsAsTheRailAsks: a payer's error that names when to
// come back (the port's RetryDelayer, Horizon's Retry-After) sets the
// retry's delay, whatever the rail; the refund is still being sent.
func TestSendRefundWaitsAsTheRailAsks(t *testing.T) {
	dest := models.RefundDestination{Address: "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}
	store := &refundsStore{refunds: map[string]models.Refund{
		"rfd_1": {ID: "rfd_1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"),
			Status: models.RefundSending, Destination: &dest},
	}}
	payers := map[models.Mode]Payer{models.ModeTest: erringPayer{err: fmt.Errorf("payout: %w", busyRail{after: 7 * time.Second})}}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{Store: store, Payers: payers}}.build()
	env := newEnv(t, a)
	_, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_1"})
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.False(t, ae.NonRetryable())
	assert.Equal(t, 7*time.Second, ae.NextRetryDelay())
	assert.Equal(t, models.RefundSending, store.refunds["rfd_1"].Status)
}

// verifyingPayer answers VerifyPayment with err, keeping what it was
// asked.
type verifyingPayer struct {
	erringPayer
	mu    sync.Mutex
	asked []models.RefundPayment
}

func (p *verifyingPayer) VerifyPayment(_ context.Context, _ string, want models.RefundPayment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, want)
	return p.err
}

// TestMarkRefundSentAsksThePayer: an operator's mark-sent is written only
// once the refund's payer says the transaction paid it: its destination
// (the paying account for to_sender; any account but the service's own
// when it has none yet), amount and asset. A refusal is final and writes
// nothing; a failure to ask is retried; a retried mark of the same hash
// asks nothing; a live refund on a worker with no live payer is refused.
func TestMarkRefundSentAsksThePayer(t *testing.T) {
	const receiving = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
	dest := models.RefundDestination{Address: models.StellarAccountID([32]byte{3}), MemoType: "text", Memo: "x"}
	sender := models.StellarAccountID([32]byte{4})
	refund := func(id string, d *models.RefundDestination) models.Refund {
		r := models.Refund{ID: id, OrderID: "ord_" + id, Mode: models.ModeLive, Asset: "USDC", Amount: decimal.RequireFromString("7.5"),
			Status: models.RefundAwaitingDestination, PaymentIDs: []string{"pay_" + id}}
		if d != nil {
			r.Status, r.Destination = models.RefundAwaitingApproval, d
		}
		return r
	}
	store := &refundsStore{refunds: map[string]models.Refund{
		"rfd_dest":   refund("rfd_dest", &dest),
		"rfd_sender": refund("rfd_sender", &models.RefundDestination{ToSender: true}),
		"rfd_none":   refund("rfd_none", nil),
	}, senders: map[string]string{"pay_rfd_sender": sender}}
	payer := &verifyingPayer{}
	payers := map[models.Mode]Payer{models.ModeLive: payer}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{Store: store, Payers: payers, ServiceAccounts: []string{receiving}}}.build()
	env := newEnv(t, a)
	hash := strings.Repeat("ef", 32)
	mark := func(id string) (models.Refund, error) {
		v, err := env.ExecuteActivity(allActs{}.MarkRefundSent, RefundMove{RefundID: id, TxHash: hash, By: "ops"})
		var r models.Refund
		if err == nil {
			require.NoError(t, v.Get(&r))
		}
		return r, err
	}
	ask := func() models.RefundPayment {
		payer.mu.Lock()
		defer payer.mu.Unlock()
		require.NotEmpty(t, payer.asked)
		return payer.asked[len(payer.asked)-1]
	}

	payer.err = models.FieldError(models.CodeInvalidRequest, "transaction_hash", "Transaction %s does not pay the refund", hash)
	_, err := mark("rfd_dest")
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, string(models.CodeInvalidRequest), ae.Type())
	assert.True(t, ae.NonRetryable(), "a refusal is final")
	assert.Equal(t, models.RefundAwaitingApproval, store.refunds["rfd_dest"].Status, "nothing written")
	assert.Equal(t, models.RefundPayment{To: dest, Asset: "USDC", Amount: decimal.RequireFromString("7.5"), NotTo: []string{receiving}}, ask())

	payer.err = errors.New("payout: horizon answered 503 Service Unavailable")
	_, err = mark("rfd_dest")
	require.ErrorAs(t, err, &ae)
	assert.False(t, ae.NonRetryable(), "Horizon unavailable: retried")
	assert.Equal(t, models.RefundAwaitingApproval, store.refunds["rfd_dest"].Status)

	payer.err = nil
	r, err := mark("rfd_dest")
	require.NoError(t, err)
	assert.Equal(t, models.RefundSent, r.Status)
	assert.Equal(t, hash, r.TransactionHash)
	n := len(payer.asked)
	_, err = mark("rfd_dest")
	require.NoError(t, err, "a retried mark of the same hash")
	assert.Len(t, payer.asked, n, "is not asked again")

	_, err = mark("rfd_sender")
	require.NoError(t, err)
	assert.Equal(t, sender, ask().To.Address, "to_sender: the paying account")
	_, err = mark("rfd_none")
	require.NoError(t, err)
	assert.Equal(t, models.RefundDestination{}, ask().To, "no destination yet: any account but the service's")
	assert.Equal(t, []string{receiving}, ask().NotTo)

	delete(payers, models.ModeLive)
	store.refunds["rfd_nopayer"] = refund("rfd_nopayer", &dest)
	_, err = mark("rfd_nopayer")
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, string(models.CodeInvalidRefundState), ae.Type())
	assert.Equal(t, models.RefundAwaitingApproval, store.refunds["rfd_nopayer"].Status)
}

// askedPayer keeps the payout requests it was asked, and fails them.
type askedPayer struct {
	erringPayer
	mu    sync.Mutex
	asked []models.PayoutRequest
}

func (p *askedPayer) Pay(_ context.Context, req models.PayoutRequest, _ func(context.Context, string, string) error) (models.PayoutResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req)
	return models.PayoutResult{}, p.err
}

// TestSendRefundPassesATestRefusalForTestRefundsOnly: the test helper's
// refusal reaches the payer of a test refund; a live refund's payer never
// sees one, whatever the input says.
func TestSendRefundPassesATestRefusalForTestRefundsOnly(t *testing.T) {
	dest := models.RefundDestination{Address: "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"}
	for _, mode := range []models.Mode{models.ModeTest, models.ModeLive} {
		store := &refundsStore{refunds: map[string]models.Refund{
			"rfd_1": {ID: "rfd_1", Mode: mode, Asset: "USDC", Amount: decimal.RequireFromString("1"),
				Status: models.RefundSending, Destination: &dest},
		}}
		payer := &askedPayer{erringPayer: erringPayer{err: models.Errorf(models.CodeInvalidRefundState, "stop")}}
		a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{Store: store, Payers: map[models.Mode]Payer{mode: payer}}}.build()
		_, err := newEnv(t, a).ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: "rfd_1", TestRefusal: "no_trust"})
		require.Error(t, err)
		require.Len(t, payer.asked, 1, mode)
		want := map[models.Mode]string{models.ModeTest: "no_trust", models.ModeLive: ""}[mode]
		assert.Equal(t, want, payer.asked[0].TestRefusal, mode)
	}
}
