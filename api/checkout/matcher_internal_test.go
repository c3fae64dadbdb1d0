package checkout

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// fakeStore is an in-memory Store.
type fakeStore struct {
	payments  map[string]models.Payment
	late      map[string]bool
	unmatched map[string]bool
	acked     map[string]bool   // recorded by the workflow
	orders    map[string]string // number -> order id (test mode)
	failSave  error
	// redeliveries and redeliverAfter: each payment's claims by Redeliver.
	redeliveries   map[string]int
	redeliverAfter map[string]time.Time
}

func newFakeStore() *fakeStore {
	return &fakeStore{payments: map[string]models.Payment{}, late: map[string]bool{}, unmatched: map[string]bool{}, acked: map[string]bool{}, orders: map[string]string{},
		redeliveries: map[string]int{}, redeliverAfter: map[string]time.Time{}}
}

func (f *fakeStore) SaveMatch(_ context.Context, p models.Payment, orderID string, _ time.Time) error {
	if f.failSave != nil {
		return f.failSave
	}
	if prev, ok := f.payments[p.ID]; ok {
		if prev.OrderID != "" || f.late[p.ID] {
			return nil // attached or late: kept
		}
		p = prev
	}
	p.OrderID = orderID
	f.payments[p.ID] = p
	f.unmatched[p.ID] = orderID == ""
	return nil
}

func (f *fakeStore) OrderIDByNumber(_ context.Context, mode models.Mode, number string) (string, error) {
	if id, ok := f.orders[number]; ok && mode == models.ModeTest {
		return id, nil
	}
	return "", models.ErrOrderNotFound
}

func (f *fakeStore) PaymentsToMatch(context.Context, time.Time, int) ([]models.Payment, error) {
	var out []models.Payment
	for _, p := range f.payments {
		if p.OrderID == "" && !f.unmatched[p.ID] {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeStore) AttachUnmatched(_ context.Context, paymentID, orderNumber string) (models.Payment, error) {
	p, ok := f.payments[paymentID]
	if !ok || !f.unmatched[paymentID] {
		return models.Payment{}, errors.New("not an unmatched payment")
	}
	id, ok := f.orders[orderNumber]
	if !ok {
		return models.Payment{}, models.ErrOrderNotFound
	}
	p.OrderID = id
	f.payments[paymentID] = p
	delete(f.unmatched, paymentID)
	return p, nil
}

func (f *fakeStore) MarkPaymentLate(_ context.Context, paymentID string, _ time.Time) (bool, error) {
	if f.acked[paymentID] {
		return false, nil
	}
	f.late[paymentID] = true
	return true, nil
}

func (f *fakeStore) ClaimPaymentRedeliveries(_ context.Context, _, now time.Time, wait func(int) time.Duration, _ int) ([]models.Payment, error) {
	var out []models.Payment
	for _, p := range f.payments {
		if p.OrderID != "" && !f.late[p.ID] && !f.acked[p.ID] && !now.Before(f.redeliverAfter[p.ID]) {
			f.redeliveries[p.ID]++
			f.redeliverAfter[p.ID] = now.Add(wait(f.redeliveries[p.ID]))
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeStore) ReleasePaymentRedelivery(_ context.Context, id string) error {
	f.redeliveries[id]--
	delete(f.redeliverAfter, id)
	return nil
}

// fakeSignaler records signals and can answer closed or fail.
type fakeSignaler struct {
	signals []string
	closed  map[string]bool
	err     error
}

func (f *fakeSignaler) PaymentMatched(_ context.Context, orderID string, p models.Payment) error {
	if f.err != nil {
		return f.err
	}
	if f.closed[orderID] {
		return models.ErrOrderClosed
	}
	f.signals = append(f.signals, orderID+"/"+p.ID)
	return nil
}

// validNumber is a valid order number: ten digits and their check digit.
var validNumber = func() string {
	for c := '0'; c <= '9'; c++ {
		if s := "1234567890" + string(c); models.ValidOrderNumber(s) {
			return s
		}
	}
	panic("no check digit makes 1234567890 valid")
}()

func payment(id, memo string) models.Payment {
	return models.Payment{ID: id, Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("10"), Memo: memo, ReceivedAt: time.Unix(0, 0)}
}

func TestMatcherHandle(t *testing.T) {
	spaced := validNumber[:4] + "-" + validNumber[4:8] + " " + validNumber[8:]
	tests := []struct {
		name    string
		memo    string
		closed  bool
		want    models.PaymentOutcome
		signals []string
	}{
		{name: "exact memo", memo: validNumber, want: models.PaymentOutcomeMatched, signals: []string{"ord_1/p1"}},
		{name: "memo typed with dashes and spaces", memo: spaced, want: models.PaymentOutcomeMatched, signals: []string{"ord_1/p1"}},
		{name: "no memo", memo: "", want: models.PaymentOutcomeUnmatched},
		{name: "memo not an order number", memo: "hello", want: models.PaymentOutcomeUnmatched},
		{name: "valid number of no order", memo: func() string {
			for c := '0'; c <= '9'; c++ {
				if s := "2" + validNumber[1:10] + string(c); models.ValidOrderNumber(s) {
					return s
				}
			}
			return ""
		}(), want: models.PaymentOutcomeUnmatched},
		{name: "order already closed", memo: validNumber, closed: true, want: models.PaymentOutcomeLate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore()
			st.orders[validNumber] = "ord_1"
			sig := &fakeSignaler{closed: map[string]bool{"ord_1": tt.closed}}
			m := mustMatcher(st, sig, nil)
			got, err := m.Handle(context.Background(), payment("p1", tt.memo))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.signals, sig.signals)
			assert.Contains(t, st.payments, "p1", "every payment is kept, matched or not")
			assert.Equal(t, tt.closed, st.late["p1"])
		})
	}
}

// TestMatcherHandleAgainAfterTheWorkflowCountedIt: a payment handled
// again once its workflow recorded it and closed (a source replaying, a
// test payment retried under its key) stays counted, not late.
func TestMatcherHandleAgainAfterTheWorkflowCountedIt(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{closed: map[string]bool{"ord_1": true}}
	m := mustMatcher(st, sig, nil)
	st.acked["p1"] = true
	got, err := m.Handle(context.Background(), payment("p1", validNumber))
	require.NoError(t, err)
	assert.Equal(t, models.PaymentOutcomeMatched, got)
	assert.False(t, st.late["p1"])
}

func TestMatcherRedeliveryIsSafe(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{err: errors.New("temporal unavailable")}
	m := mustMatcher(st, sig, nil)

	_, err := m.Handle(context.Background(), payment("p1", validNumber))
	require.Error(t, err, "a failed signal is reported so the source re-delivers")
	assert.Equal(t, "ord_1", st.payments["p1"].OrderID, "but the payment is stored and matched already")

	sig.err = nil
	n, err := m.Redeliver(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// The source re-delivering the same payment signals again; the
	// workflow de-duplicates by payment id.
	got, err := m.Handle(context.Background(), payment("p1", validNumber))
	require.NoError(t, err)
	assert.Equal(t, models.PaymentOutcomeMatched, got)
	assert.Equal(t, []string{"ord_1/p1", "ord_1/p1"}, sig.signals)
	assert.Len(t, st.payments, 1, "stored once")

	sig.closed = map[string]bool{"ord_1": true}
	_, err = m.Redeliver(context.Background(), 0)
	require.NoError(t, err)
	assert.True(t, st.late["p1"], "an unacknowledged payment whose order closed is due back")
}

func TestMatcherRejectsPaymentsWithoutIdentity(t *testing.T) {
	m := mustMatcher(newFakeStore(), &fakeSignaler{}, nil)
	_, err := m.Handle(context.Background(), models.Payment{Mode: models.ModeTest})
	assert.Error(t, err)
	_, err = m.Handle(context.Background(), models.Payment{ID: "x"})
	assert.Error(t, err)
}

func TestMatcherStoreFailure(t *testing.T) {
	st := newFakeStore()
	st.failSave = errors.New("db down")
	sig := &fakeSignaler{}
	_, err := mustMatcher(st, sig, nil).Handle(context.Background(), payment("p1", validNumber))
	assert.Error(t, err)
	assert.Empty(t, sig.signals, "nothing is signalled before the payment is stored")
}

func TestMatcherMemoTypes(t *testing.T) {
	tests := []struct {
		memoType, memo string
		want           models.PaymentOutcome
	}{
		{"text", validNumber, models.PaymentOutcomeMatched},
		{"id", validNumber, models.PaymentOutcomeMatched},
		{"hash", validNumber, models.PaymentOutcomeUnmatched},
		{"return", validNumber, models.PaymentOutcomeUnmatched},
		{"none", "", models.PaymentOutcomeUnmatched},
	}
	for _, tt := range tests {
		t.Run(tt.memoType, func(t *testing.T) {
			st := newFakeStore()
			st.orders[validNumber] = "ord_1"
			p := payment("p1", tt.memo)
			p.MemoType = tt.memoType
			got, err := mustMatcher(st, &fakeSignaler{}, nil).Handle(context.Background(), p)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want == models.PaymentOutcomeUnmatched, st.unmatched["p1"], "unmatched payments are marked for operators")
		})
	}
}

func TestMatcherRedeliverMatchesStoredPayments(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	// A watcher stored these, then the process died before matching.
	st.payments["p1"] = payment("p1", validNumber)
	st.payments["p2"] = payment("p2", "not-a-number")
	sig := &fakeSignaler{}
	m := mustMatcher(st, sig, nil)
	_, err := m.Redeliver(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, "ord_1", st.payments["p1"].OrderID)
	assert.True(t, st.unmatched["p2"])
	assert.Contains(t, sig.signals, "ord_1/p1")
}

func TestMatcherOperatorAttach(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{}
	m := mustMatcher(st, sig, nil)
	got, err := m.Handle(context.Background(), payment("p1", "order 1234"))
	require.NoError(t, err)
	require.Equal(t, models.PaymentOutcomeUnmatched, got)

	got, err = m.Attach(context.Background(), "p1", validNumber)
	require.NoError(t, err)
	assert.Equal(t, models.PaymentOutcomeMatched, got)
	assert.Equal(t, []string{"ord_1/p1"}, sig.signals)

	_, err = m.Attach(context.Background(), "p1", validNumber)
	assert.Error(t, err, "only an unmatched payment can be attached")
}

// TestMatcherTellsOutcomes: every completed delivery is told its outcome,
// failed ones are not, and a redelivery is told again.
func TestMatcherTellsOutcomes(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{}
	m := mustMatcher(st, sig, nil)
	var told []models.PaymentOutcome
	m.OnOutcome(func(o models.PaymentOutcome) { told = append(told, o) })
	ctx := context.Background()

	_, err := m.Handle(ctx, payment("p1", validNumber))
	require.NoError(t, err)
	_, err = m.Handle(ctx, payment("p2", "no order here"))
	require.NoError(t, err)
	sig.err = errors.New("temporal unavailable")
	_, err = m.Handle(ctx, payment("p3", validNumber))
	require.Error(t, err)
	assert.Equal(t, []models.PaymentOutcome{models.PaymentOutcomeMatched, models.PaymentOutcomeUnmatched}, told, "a failed delivery is not an outcome")

	// p1 and p3 are unacknowledged; the order has closed meanwhile.
	sig.err, sig.closed = nil, map[string]bool{"ord_1": true}
	n, err := m.Redeliver(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []models.PaymentOutcome{models.PaymentOutcomeMatched, models.PaymentOutcomeUnmatched, models.PaymentOutcomeLate, models.PaymentOutcomeLate}, told)
}

// A payment its workflow does not record is signalled again less and less
// often, not once per round: a workflow that is behind is not flooded.
func TestMatcherRedeliveryBacksOff(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{}
	m := mustMatcher(st, sig, nil)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	_, err := m.Handle(context.Background(), payment("p1", validNumber))
	require.NoError(t, err)
	require.Len(t, sig.signals, 1)

	const grace = 30 * time.Second
	// Rounds every 10 s for 10 minutes, the workflow never recording it.
	var at []time.Duration
	start := now
	for range 60 {
		now = now.Add(10 * time.Second)
		before := len(sig.signals)
		_, err := m.Redeliver(context.Background(), grace)
		require.NoError(t, err)
		if len(sig.signals) > before {
			at = append(at, now.Sub(start))
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i]-at[i-1])
	}
	assert.Equal(t, []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second, 120 * time.Second, 120 * time.Second, 120 * time.Second}, gaps,
		"again after 30 s, 60 s, then every 2 minutes (MaxRedeliveryWait)")

	st.acked["p1"] = true
	now = now.Add(time.Hour)
	before := len(sig.signals)
	_, err = m.Redeliver(context.Background(), grace)
	require.NoError(t, err)
	assert.Len(t, sig.signals, before, "a recorded payment is not signalled again")
}

// A redelivery that could not be signalled (Temporal down) is due again at
// the next round: an outage does not stretch the waits.
func TestMatcherRedeliveryRetriesAFailedSignalNextRound(t *testing.T) {
	st := newFakeStore()
	st.orders[validNumber] = "ord_1"
	sig := &fakeSignaler{err: errors.New("temporal unavailable")}
	m := mustMatcher(st, sig, nil)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	_, err := m.Handle(context.Background(), payment("p1", validNumber))
	require.Error(t, err)

	for range 5 {
		now = now.Add(10 * time.Second)
		_, err := m.Redeliver(context.Background(), 30*time.Second)
		require.Error(t, err, "Temporal is still down")
	}
	assert.Zero(t, st.redeliveries["p1"], "failed redeliveries do not count")
	sig.err = nil
	now = now.Add(10 * time.Second)
	n, err := m.Redeliver(context.Background(), 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "delivered at the first round after the outage")
	assert.Equal(t, []string{"ord_1/p1"}, sig.signals)
}

// mustMatcher is NewMatcher for a test that gives every part.
func mustMatcher(store PaymentStore, signal Signaler, log *slog.Logger) *Matcher {
	m, err := NewMatcher(store, signal, log)
	if err != nil {
		panic(err)
	}
	return m
}
