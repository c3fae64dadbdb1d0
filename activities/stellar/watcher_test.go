package stellar

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

// memStore is an in-memory Store that records every save atomically.
type memStore struct {
	mu        sync.Mutex
	cursor    string
	payments  map[string]models.Payment
	saves     []saveCall
	failSaves int
	// afterSave runs after a successful save, outside the lock.
	afterSave func()
}

type saveCall struct {
	ids    []string
	cursor string
}

func newStore(cursor string) *memStore {
	return &memStore{cursor: cursor, payments: map[string]models.Payment{}}
}

func (s *memStore) StellarCursor(_ context.Context, network, acct string) (string, error) {
	if network != "testnet" || acct != account {
		return "", errors.New("wrong network or account")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor, nil
}

func (s *memStore) SaveStellarPayments(_ context.Context, network, acct string, ps []models.Payment, cursor string, _ time.Time) error {
	if network != "testnet" || acct != account {
		return errors.New("wrong network or account")
	}
	s.mu.Lock()
	if s.failSaves > 0 {
		s.failSaves--
		s.mu.Unlock()
		return errors.New("database unavailable")
	}
	call := saveCall{cursor: cursor}
	for _, p := range ps {
		call.ids = append(call.ids, p.ID)
		if _, ok := s.payments[p.ID]; !ok {
			s.payments[p.ID] = p
		}
	}
	s.cursor = cursor
	s.saves = append(s.saves, call)
	after := s.afterSave
	s.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

func (s *memStore) Cursor() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

func (s *memStore) Saves() []saveCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.saves)
}

func (s *memStore) Payment(id string) (models.Payment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	return p, ok
}

func (s *memStore) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.payments)
}

// savesContaining counts the save calls that carried id.
func (s *memStore) savesContaining(id string) int {
	n := 0
	for _, c := range s.Saves() {
		if slices.Contains(c.ids, id) {
			n++
		}
	}
	return n
}

// assertStoredOnce checks that each token's payment is stored, and was
// carried by exactly one save.
func assertStoredOnce(t *testing.T, s *memStore, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		id := paymentID(tok)
		_, ok := s.Payment(id)
		assert.True(t, ok, "%s stored", id)
		assert.Equal(t, 1, s.savesContaining(id), "%s saved once", id)
	}
}

// recorder is a PaymentHandler that records calls and fails for payments
// whose memo is "fail".
type recorder struct {
	mu  sync.Mutex
	ids []string
}

func (h *recorder) handle(_ context.Context, p models.Payment) (models.PaymentOutcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, p.ID)
	if p.Memo == "fail" {
		return "", errors.New("workflow unavailable")
	}
	return models.PaymentOutcomeMatched, nil
}

func (h *recorder) IDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ids)
}

type alertRecorder struct {
	mu      sync.Mutex
	kinds   []string
	details []string
}

func (a *alertRecorder) Alert(_ context.Context, kind, detail string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kinds = append(a.kinds, kind)
	a.details = append(a.details, detail)
}

func (a *alertRecorder) Details() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.details)
}

func (a *alertRecorder) Kinds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.kinds)
}

func paymentID(token string) string { return "stellar:testnet:" + token }

func paymentIDs(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = paymentID(tok)
	}
	return out
}

func incoming(amount string) horizontest.Payment {
	return horizontest.Payment{From: sender, To: account, Amount: amount, MemoType: "text", Memo: "12345678901"}
}

func newHorizon(t *testing.T) *horizontest.Server {
	t.Helper()
	srv := horizontest.New(account)
	srv.SetKeepAlive(25 * time.Millisecond)
	t.Cleanup(srv.Close)
	return srv
}

// testConfig has short timings so failures and recoveries take
// milliseconds.
func testConfig(srv *horizontest.Server) Config {
	return Config{
		HorizonURL:    srv.URL,
		Network:       "testnet",
		Account:       account,
		USDCIssuer:    usdcIssuer,
		PageLimit:     3,
		SweepEvery:    time.Minute,
		StreamIdle:    500 * time.Millisecond,
		MinBackoff:    5 * time.Millisecond,
		MaxBackoff:    50 * time.Millisecond,
		ProgressEvery: 20 * time.Millisecond,
	}
}

type harness struct {
	srv    *horizontest.Server
	store  *memStore
	rec    *recorder
	alerts *alertRecorder
	logs   *upstreamtest.LogBuffer
}

func newHarness(t *testing.T, cursor string) *harness {
	return &harness{srv: newHorizon(t), store: newStore(cursor), rec: &recorder{}, alerts: &alertRecorder{}, logs: &upstreamtest.LogBuffer{}}
}

// start runs a watcher until the test ends, or until the returned cancel;
// done yields Run's result.
func (h *harness) start(t *testing.T, cfg Config, store Store, hc *http.Client) (cancel func(), done <-chan error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := NewWatcher(cfg, hc, store, h.rec.handle, h.alerts, log)
	require.NoError(t, err)
	ctx, cancelRun := context.WithCancel(context.Background())
	result := make(chan error, 1) // for the test
	finished := make(chan struct{})
	go func() {
		result <- w.Run(ctx, nil)
		close(finished)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancelRun()
			select {
			case <-finished:
			case <-time.After(2 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop, result
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 5*time.Second, what, cond)
}

func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting: "+what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) waitStream(t *testing.T) {
	t.Helper()
	waitFor(t, "stream open", func() bool { return h.srv.OpenStreams() > 0 })
}

func (h *harness) waitStored(t *testing.T, tokens ...string) {
	t.Helper()
	waitFor(t, "payments stored", func() bool {
		for _, tok := range tokens {
			if _, ok := h.store.Payment(paymentID(tok)); !ok {
				return false
			}
		}
		return true
	})
}

// streamRequests counts stream requests: pages always carry an order.
func streamRequests(srv *horizontest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if !strings.Contains(r, "order=") {
			n++
		}
	}
	return n
}

func TestFirstStartWithHistory(t *testing.T) {
	h := newHarness(t, "")
	h.srv.AddPayment(incoming("1.0000000"))
	h.srv.AddPayment(incoming("2.0000000"))
	newest := h.srv.AddPayment(horizontest.Payment{From: account, To: sender, Amount: "3.0000000"}) // any payment type counts
	h.start(t, testConfig(h.srv), h.store, nil)

	h.waitStream(t)
	saves := h.store.Saves()
	require.NotEmpty(t, saves)
	assert.Equal(t, saveCall{cursor: newest}, saves[0], "the starting cursor is saved at once, with no payments")
	assert.Contains(t, h.srv.Requests()[0], "order=desc")
	assert.Contains(t, h.srv.Requests()[0], "limit=1")
	assert.Zero(t, h.store.Count(), "existing payments are not delivered")

	live := h.srv.AddPayment(incoming("4.0000000"))
	h.waitStored(t, live)
	assert.Equal(t, []string{paymentID(live)}, h.rec.IDs())
	assert.Equal(t, live, h.store.Cursor())
}

func TestFirstStartEmptyAccount(t *testing.T) {
	h := newHarness(t, "")
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	assert.Equal(t, []saveCall{{cursor: "0"}}, h.store.Saves(), "an empty account starts from the beginning")

	first := h.srv.AddPayment(incoming("1.0000000"))
	h.waitStored(t, first)
	assert.Equal(t, []string{paymentID(first)}, h.rec.IDs())
}

func TestCatchUpThenStream(t *testing.T) {
	h := newHarness(t, "0")
	var tokens []string
	for range 7 {
		tokens = append(tokens, h.srv.AddPayment(incoming("1.0000000")))
	}
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	for range 2 {
		tokens = append(tokens, h.srv.AddPayment(incoming("2.0000000")))
	}
	h.waitStored(t, tokens...)

	assert.Equal(t, paymentIDs(tokens), h.rec.IDs(), "delivered in order")
	assert.Equal(t, tokens[8], h.store.Cursor())
	ids := paymentIDs(tokens)
	assert.Equal(t, []saveCall{
		{ids: ids[0:3], cursor: tokens[2]}, // full pages of PageLimit
		{ids: ids[3:6], cursor: tokens[5]},
		{ids: ids[6:7], cursor: tokens[6]}, // the short last page ends the catch-up
		{ids: ids[7:8], cursor: tokens[7]}, // streamed one by one
		{ids: ids[8:9], cursor: tokens[8]},
	}, h.store.Saves())

	var reqs []string
	for _, r := range h.srv.Requests() {
		if !strings.HasPrefix(r, "/claimable_balances") {
			reqs = append(reqs, r)
		}
	}
	for i, cursor := range []string{"0", tokens[2], tokens[5]} {
		assert.Contains(t, reqs[i], "cursor="+cursor)
		assert.Contains(t, reqs[i], "join=transactions")
		assert.Contains(t, reqs[i], "limit=3")
		assert.Contains(t, reqs[i], "order=asc")
	}
	assert.Contains(t, reqs[3], "cursor="+tokens[6], "the stream starts at the saved cursor")
}

func TestWhichRecordsCount(t *testing.T) {
	h := newHarness(t, "0")
	other := horizontest.AccountID("someone else")
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	tests := []struct {
		name    string
		payment horizontest.Payment
		want    *models.Payment // nil: not stored
	}{
		{"native is XLM",
			horizontest.Payment{From: sender, To: account, Amount: "12.5000000", MemoType: "text", Memo: "12345678901", TxHash: "t1", CreatedAt: at},
			&models.Payment{Asset: "XLM", Amount: decimal.RequireFromString("12.5"), MemoType: "text", Memo: "12345678901", Sender: sender, TxHash: "t1", ReceivedAt: at}},
		{"USDC of the accepted issuer",
			horizontest.Payment{From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "0.0000001", MemoType: "id", Memo: "12345678901", TxHash: "t2", CreatedAt: at},
			&models.Payment{Asset: "USDC", Amount: decimal.New(1, -7), MemoType: "id", Memo: "12345678901", Sender: sender, TxHash: "t2", ReceivedAt: at}},
		{"USDC of another issuer",
			horizontest.Payment{From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: fakeIssuer, Amount: "5.0000000", MemoType: "hash", Memo: "q83vEjRWeJA=", TxHash: "t3", CreatedAt: at},
			&models.Payment{Asset: "USDC:" + fakeIssuer, Amount: decimal.RequireFromString("5"), MemoType: "hash", Memo: "q83vEjRWeJA=", Sender: sender, TxHash: "t3", ReceivedAt: at}},
		{"strict receive credits amount, not source_amount",
			horizontest.Payment{Type: "path_payment_strict_receive", From: sender, To: account, Amount: "10.0000000", SourceAmount: "55.1234567", TxHash: "t4", CreatedAt: at},
			&models.Payment{Asset: "XLM", Amount: decimal.RequireFromString("10"), MemoType: "none", Sender: sender, TxHash: "t4", ReceivedAt: at}},
		{"strict send credits amount, not source_amount",
			horizontest.Payment{Type: "path_payment_strict_send", From: sender, To: account, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "9.9900000", SourceAmount: "100.0000000", MemoType: "return", Memo: "AAAA", TxHash: "t5", CreatedAt: at},
			&models.Payment{Asset: "USDC", Amount: decimal.RequireFromString("9.99"), MemoType: "return", Memo: "AAAA", Sender: sender, TxHash: "t5", ReceivedAt: at}},
		{"outgoing", horizontest.Payment{From: account, To: other, Amount: "1.0000000"}, nil},
		{"self payment", horizontest.Payment{From: account, To: account, Amount: "1.0000000"}, nil},
		{"failed transaction", horizontest.Payment{From: sender, To: account, Amount: "1.0000000", Successful: ptr(false)}, nil},
		{"between other accounts", horizontest.Payment{From: sender, To: other, Amount: "1.0000000"}, nil},
		{"account_merge", horizontest.Payment{Type: "account_merge", From: other, To: account}, nil},
		// Last, so the watcher is done only once the cursor moved past a
		// record it skips.
		{"create_account", horizontest.Payment{Type: "create_account", From: sender, To: account, Amount: "100.0000000"}, nil},
	}
	tokens := make([]string, len(tests))
	for i, tc := range tests {
		tokens[i] = h.srv.AddPayment(tc.payment)
	}
	h.start(t, testConfig(h.srv), h.store, nil)
	last := tokens[len(tokens)-1]
	waitFor(t, "cursor past every record", func() bool { return h.store.Cursor() == last })

	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := h.store.Payment(paymentID(tokens[i]))
			if tc.want == nil {
				assert.False(t, ok, "not stored")
				return
			}
			require.True(t, ok, "stored")
			want := *tc.want
			want.ID, want.Mode = paymentID(tokens[i]), models.ModeLive
			assert.True(t, want.Amount.Equal(got.Amount), "amount %s, want %s", got.Amount, want.Amount)
			want.Amount, got.Amount = decimal.Zero, decimal.Zero
			assert.Equal(t, want, got)
		})
	}
}

func TestStreamDropMidway(t *testing.T) {
	h := newHarness(t, "0")
	cfg := testConfig(h.srv)
	cfg.PageLimit = 50 // no graceful closes: the drop is the only reconnection
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)

	h.srv.DropStreamAfter(2)
	var tokens []string
	for range 6 {
		tokens = append(tokens, h.srv.AddPayment(incoming("1.0000000")))
	}
	h.waitStored(t, tokens...)
	assertStoredOnce(t, h.store, tokens...)
	assert.Equal(t, tokens[5], h.store.Cursor())
	waitFor(t, "reconnected", func() bool { return h.srv.StreamsOpened() >= 2 })
}

func TestGracefulStreamClose(t *testing.T) {
	h := newHarness(t, "0")
	cfg := testConfig(h.srv)
	cfg.PageLimit = 2 // horizontest, like Horizon, ends a stream after limit records
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)

	var tokens []string
	for range 7 {
		tokens = append(tokens, h.srv.AddPayment(incoming("1.0000000")))
	}
	h.waitStored(t, tokens...)
	assertStoredOnce(t, h.store, tokens...)
	waitFor(t, "reconnected after byebye", func() bool { return h.srv.StreamsOpened() >= 2 })
}

func TestDuplicatesStoredOnce(t *testing.T) {
	h := newHarness(t, "0")
	h.srv.DuplicateNext(2)
	tokens := []string{h.srv.AddPayment(incoming("1.0000000")), h.srv.AddPayment(incoming("2.0000000"))}
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	h.srv.DuplicateNext(2)
	tokens = append(tokens, h.srv.AddPayment(incoming("3.0000000")), h.srv.AddPayment(incoming("4.0000000")))

	h.waitStored(t, tokens...)
	assertStoredOnce(t, h.store, tokens...)
	assert.Equal(t, paymentIDs(tokens), h.rec.IDs(), "each handed on once, in order")
}

// timedTransport records when each response came back, and its status.
type timedTransport struct {
	mu        sync.Mutex
	responses []timedResponse
}

type timedResponse struct {
	at     time.Time
	status int
}

func (tt *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		tt.mu.Lock()
		tt.responses = append(tt.responses, timedResponse{time.Now(), resp.StatusCode})
		tt.mu.Unlock()
	}
	return resp, err
}

func (tt *timedTransport) Responses() []timedResponse {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return slices.Clone(tt.responses)
}

func TestRetriesServerErrors(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		n         int
		minSpacer time.Duration // at least this between a failure and the next try
	}{
		{"500s back off and retry", http.StatusInternalServerError, 3, 0},
		{"429 honours Retry-After", http.StatusTooManyRequests, 1, time.Second},
		{"503 honours Retry-After", http.StatusServiceUnavailable, 1, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "0")
			p := h.srv.AddPayment(incoming("1.0000000"))
			h.srv.FailNext(tc.status, tc.n)
			tt := &timedTransport{}
			h.start(t, testConfig(h.srv), h.store, &http.Client{Transport: tt})

			h.waitStored(t, p)
			assertStoredOnce(t, h.store, p)
			rs := tt.Responses()
			require.Greater(t, len(rs), tc.n)
			for i := range tc.n {
				assert.Equal(t, tc.status, rs[i].status)
			}
			assert.Equal(t, http.StatusOK, rs[tc.n].status)
			for i := range tc.n {
				gap := rs[i+1].at.Sub(rs[i].at)
				assert.GreaterOrEqual(t, gap, max(tc.minSpacer, testConfig(h.srv).MinBackoff/2), "wait after failure %d", i)
			}
		})
	}
}

func TestBackoffResetsAfterAnEvent(t *testing.T) {
	h := newHarness(t, "0")
	cfg := testConfig(h.srv)
	cfg.MinBackoff, cfg.MaxBackoff = 10*time.Millisecond, 5*time.Second
	// Six failures grow the backoff to 640ms: the next wait would be at
	// least 320ms unless an event reset it.
	h.srv.FailNext(http.StatusInternalServerError, 6)
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)
	p := h.srv.AddPayment(incoming("1.0000000"))
	h.waitStored(t, p)

	before := len(h.srv.Requests())
	h.srv.DropStreamAfter(0)
	waitWithin(t, 250*time.Millisecond, "quick reconnection", func() bool { return len(h.srv.Requests()) > before })
}

func TestBeforeHistory(t *testing.T) {
	h := newHarness(t, "0")
	p := h.srv.AddPayment(incoming("1.0000000"))
	h.srv.GoneNext(5)
	h.start(t, testConfig(h.srv), h.store, nil)

	waitFor(t, "alert", func() bool { return len(h.alerts.Kinds()) > 0 })
	h.waitStored(t, p)
	assert.Equal(t, []string{AlertBeforeHistory}, h.alerts.Kinds(), "alerted once for the streak")
	assert.Contains(t, h.logs.String(), "level=ERROR")
	assert.Equal(t, []saveCall{{ids: []string{paymentID(p)}, cursor: p}}, h.store.Saves(), "nothing skipped while Horizon answered 410")
	gone := 0
	for _, r := range h.srv.Requests() {
		if strings.Contains(r, "cursor=0") {
			gone++
		}
	}
	assert.Equal(t, 6, gone, "kept asking from the saved cursor")
}

func TestSilentStreamReconnects(t *testing.T) {
	h := newHarness(t, "0")
	cfg := testConfig(h.srv)
	cfg.StreamIdle = 150 * time.Millisecond
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)
	before := streamRequests(h.srv)

	h.srv.SilenceStream(4 * time.Second)
	p := h.srv.AddPayment(incoming("1.0000000"))
	// Only a reconnection (which pages first) can deliver p before the
	// silence ends.
	waitWithin(t, 2*time.Second, "payment delivered during the silence", func() bool {
		_, ok := h.store.Payment(paymentID(p))
		return ok
	})
	assert.Contains(t, h.logs.String(), "silent too long")
	// The reconnection pages before it streams again.
	waitFor(t, "stream requested again", func() bool { return streamRequests(h.srv) > before })
}

// cancellingStore cancels the watcher right after its nth successful save.
type cancellingStore struct {
	*memStore
	n      int
	saves  int
	cancel func()
}

func (s *cancellingStore) SaveStellarPayments(ctx context.Context, network, acct string, ps []models.Payment, cursor string, now time.Time) error {
	if err := s.memStore.SaveStellarPayments(ctx, network, acct, ps, cursor, now); err != nil {
		return err
	}
	s.saves++
	if s.saves == s.n {
		s.cancel()
	}
	return nil
}

func TestRestartResumesFromSavedCursor(t *testing.T) {
	h := newHarness(t, "0")
	var tokens []string
	for range 7 {
		tokens = append(tokens, h.srv.AddPayment(incoming("1.0000000")))
	}

	// Watcher A stops between two pages: right after saving the second.
	store := &cancellingStore{memStore: h.store, n: 2}
	w, err := NewWatcher(testConfig(h.srv), nil, store, h.rec.handle, h.alerts, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	store.cancel = cancel
	require.ErrorIs(t, w.Run(ctx, nil), context.Canceled)
	assert.Equal(t, tokens[5], h.store.Cursor(), "A saved two pages")
	seenByA := len(h.srv.Requests())

	// Payments arrive while nothing runs.
	tokens = append(tokens, h.srv.AddPayment(incoming("2.0000000")), h.srv.AddPayment(incoming("3.0000000")))

	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStored(t, tokens...)
	assertStoredOnce(t, h.store, tokens...)
	assert.Equal(t, tokens[8], h.store.Cursor())
	assert.Contains(t, h.srv.Requests()[seenByA], "cursor="+tokens[5], "B starts at A's saved cursor")
}

func TestSweepCatchesWhatTheStreamSkipped(t *testing.T) {
	t.Run("a reconnection pages over the stretch the stream covered", func(t *testing.T) {
		h := newHarness(t, "0")
		cfg := testConfig(h.srv)
		cfg.PageLimit = 50
		h.start(t, cfg, h.store, nil)
		h.waitStream(t)

		h.srv.WithholdNext(1)
		skipped := h.srv.AddPayment(incoming("1.0000000"))
		streamed := h.srv.AddPayment(incoming("2.0000000"))
		h.waitStored(t, streamed)
		_, ok := h.store.Payment(paymentID(skipped))
		require.False(t, ok, "the stream skipped it and the cursor moved past it")

		h.srv.DropStreamAfter(0)
		h.waitStored(t, skipped)
		assertStoredOnce(t, h.store, skipped, streamed)
		assert.Equal(t, streamed, h.store.Cursor(), "the cursor does not move back")
	})

	t.Run("the periodic sweep", func(t *testing.T) {
		h := newHarness(t, "0")
		cfg := testConfig(h.srv)
		cfg.PageLimit = 50
		cfg.SweepEvery = 200 * time.Millisecond
		h.start(t, cfg, h.store, nil)
		h.waitStream(t)

		h.srv.WithholdNext(1)
		skipped := h.srv.AddPayment(incoming("1.0000000"))
		streamed := h.srv.AddPayment(incoming("2.0000000"))
		h.srv.WithholdNext(1)
		tail := h.srv.AddPayment(incoming("3.0000000"))
		h.waitStored(t, skipped, streamed, tail)
		assertStoredOnce(t, h.store, skipped, streamed, tail)
		assert.Equal(t, tail, h.store.Cursor())
	})
}

func TestHandlerErrorsDoNotStopTheWatcher(t *testing.T) {
	h := newHarness(t, "0")
	fail := incoming("1.0000000")
	fail.Memo = "fail"
	tokens := []string{h.srv.AddPayment(fail), h.srv.AddPayment(incoming("2.0000000"))}
	_, done := h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	tokens = append(tokens, h.srv.AddPayment(fail), h.srv.AddPayment(incoming("3.0000000")))

	h.waitStored(t, tokens...)
	assertStoredOnce(t, h.store, tokens...)
	assert.Equal(t, paymentIDs(tokens), h.rec.IDs(), "every payment handed on once, failures included")
	assert.Equal(t, tokens[3], h.store.Cursor(), "the cursor is not rewound")
	assert.Contains(t, h.logs.String(), "reconciler will retry")
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
}

func TestStoreFailuresAreRetried(t *testing.T) {
	h := newHarness(t, "0")
	h.store.failSaves = 2
	p := h.srv.AddPayment(incoming("1.0000000"))
	h.start(t, testConfig(h.srv), h.store, nil)

	h.waitStored(t, p)
	assertStoredOnce(t, h.store, p)
	assert.Equal(t, []string{paymentID(p)}, h.rec.IDs(), "handed on only once saved")
}

func TestBadRecordIsNotSkipped(t *testing.T) {
	h := newHarness(t, "0")
	h.srv.AddPayment(incoming("1e3"))
	later := h.srv.AddPayment(incoming("1.0000000"))
	h.start(t, testConfig(h.srv), h.store, nil)

	waitFor(t, "alert", func() bool { return len(h.alerts.Kinds()) > 0 })
	time.Sleep(150 * time.Millisecond) // several retries at MaxBackoff
	assert.Equal(t, []string{AlertBadRecord}, h.alerts.Kinds())
	assert.Equal(t, "0", h.store.Cursor(), "the cursor stays before the unreadable payment")
	_, ok := h.store.Payment(paymentID(later))
	assert.False(t, ok, "nothing after it is taken either")
	assert.Greater(t, len(h.srv.Requests()), 2, "kept retrying")
}

func TestRejectedRequestEndsRun(t *testing.T) {
	h := newHarness(t, "0")
	h.srv.FailNext(http.StatusBadRequest, 1)
	_, done := h.start(t, testConfig(h.srv), h.store, nil)
	select {
	case err := <-done:
		var he *httpError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusBadRequest, he.Status)
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return")
	}
	assert.Equal(t, []string{AlertRequestRejected}, h.alerts.Kinds())
}

func TestUnknownAccountAlertsAndRetries(t *testing.T) {
	h := newHarness(t, "0")
	cfg := testConfig(h.srv)
	cfg.Account = horizontest.AccountID("not on this server")
	w, err := NewWatcher(cfg, nil, newStoreFor(cfg.Account), h.rec.handle, h.alerts, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, w.Run(ctx, nil), context.DeadlineExceeded, "a 404 is retried, not fatal")
	assert.Equal(t, []string{AlertAccountNotFound}, h.alerts.Kinds())
	assert.Greater(t, len(h.srv.Requests()), 2)
}

// anyStore accepts any account, for the unknown-account test.
type anyStore struct{ cursor string }

func newStoreFor(string) *anyStore { return &anyStore{cursor: "0"} }

func (s *anyStore) StellarCursor(context.Context, string, string) (string, error) {
	return s.cursor, nil
}

func (s *anyStore) SaveStellarPayments(context.Context, string, string, []models.Payment, string, time.Time) error {
	return nil
}

func TestRunReturnsPromptlyOnCancel(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness, cfg *Config)
		ready func(h *harness) bool
	}{
		{"while streaming", func(*harness, *Config) {}, func(h *harness) bool { return h.srv.OpenStreams() > 0 }},
		{"while backing off", func(h *harness, cfg *Config) {
			cfg.MinBackoff, cfg.MaxBackoff = time.Minute, time.Minute
			h.srv.FailNext(http.StatusInternalServerError, 100)
		}, func(h *harness) bool { return len(h.srv.Requests()) > 0 }},
		{"while waiting for a silent server", func(h *harness, cfg *Config) {
			cfg.StreamIdle = time.Minute
			h.srv.SilenceStream(time.Minute)
		}, func(h *harness) bool { return streamRequests(h.srv) > 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "0")
			cfg := testConfig(h.srv)
			tc.setup(h, &cfg)
			cancel, done := h.start(t, cfg, h.store, nil)
			waitFor(t, "ready", func() bool { return tc.ready(h) })
			time.Sleep(20 * time.Millisecond)

			start := time.Now()
			go cancel()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
				assert.Less(t, time.Since(start), 500*time.Millisecond)
			case <-time.After(2 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

func TestProgress(t *testing.T) {
	h := newHarness(t, "0")
	w, err := NewWatcher(testConfig(h.srv), nil, h.store, h.rec.handle, h.alerts, nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var reports []string
	progress := func(c string) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, c)
	}
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reports)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, progress) }()
	defer func() {
		cancel()
		<-done
	}()

	h.waitStream(t)
	p := h.srv.AddPayment(incoming("1.0000000"))
	waitFor(t, "progress reports the new cursor", func() bool { return slices.Contains(snapshot(), p) })
	n := len(snapshot())
	time.Sleep(150 * time.Millisecond)
	idle := snapshot()[n:]
	assert.GreaterOrEqual(t, len(idle), 3, "reports keep coming while idle")
	for _, c := range idle {
		assert.Equal(t, p, c)
	}
}

func TestNewWatcherValidates(t *testing.T) {
	valid := Config{HorizonURL: "https://horizon.stellar.org/", Network: "pubnet", Account: account, USDCIssuer: usdcIssuer}
	store := newStore("")
	handle := (&recorder{}).handle
	tests := []struct {
		name    string
		change  func(c *Config)
		hc      *http.Client
		wantErr string
	}{
		{"valid", func(*Config) {}, nil, ""},
		{"no URL", func(c *Config) { c.HorizonURL = "" }, nil, "HorizonURL"},
		{"not http", func(c *Config) { c.HorizonURL = "ftp://horizon" }, nil, "HorizonURL"},
		{"query in URL", func(c *Config) { c.HorizonURL = "https://horizon?x=1" }, nil, "HorizonURL"},
		{"unknown network", func(c *Config) { c.Network = "mainnet" }, nil, "Network"},
		{"account checksum", func(c *Config) { c.Account = account[:55] + "A" }, nil, "Account"},
		{"no USDC issuer", func(c *Config) { c.USDCIssuer = "" }, nil, "USDCIssuer"},
		{"page limit over Horizon's", func(c *Config) { c.PageLimit = 201 }, nil, "PageLimit"},
		{"negative duration", func(c *Config) { c.StreamIdle = -time.Second }, nil, "StreamIdle"},
		{"backoff bounds", func(c *Config) { c.MinBackoff, c.MaxBackoff = time.Minute, time.Second }, nil, "MinBackoff"},
		{"client timeout", func(*Config) {}, &http.Client{Timeout: time.Second}, "Timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			tc.change(&cfg)
			w, err := NewWatcher(cfg, tc.hc, store, handle, nil, nil)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, DefaultPageLimit, w.cfg.PageLimit)
				assert.Equal(t, DefaultSweepEvery, w.cfg.SweepEvery)
				assert.Equal(t, DefaultStreamIdle, w.cfg.StreamIdle)
				assert.Equal(t, DefaultMinBackoff, w.cfg.MinBackoff)
				assert.Equal(t, DefaultMaxBackoff, w.cfg.MaxBackoff)
				assert.Equal(t, "https://horizon.stellar.org", w.base)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}

	_, err := NewWatcher(valid, nil, nil, nil, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Store")
	assert.Contains(t, err.Error(), "PaymentHandler")
}

// TestConcurrentHandling hands saved payments to the matcher from a pool:
// every payment is saved once and handed on once, in any order, and a
// handler failure still leaves the payment saved.
func TestConcurrentHandling(t *testing.T) {
	h := newHarness(t, "0")
	var tokens []string
	for i := range 40 {
		p := incoming("1.0000000")
		if i == 7 {
			p.Memo = "fail"
		}
		tokens = append(tokens, h.srv.AddPayment(p))
	}
	cfg := testConfig(h.srv)
	cfg.HandleConcurrency = 8
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)
	for range 20 {
		tokens = append(tokens, h.srv.AddPayment(incoming("2.0000000")))
	}
	h.waitStored(t, tokens...)
	waitFor(t, "all handed on", func() bool { return len(h.rec.IDs()) == len(tokens) })

	got := h.rec.IDs()
	slices.Sort(got)
	want := paymentIDs(tokens)
	slices.Sort(want)
	assert.Equal(t, want, got, "each payment handed on exactly once")
	assertStoredOnce(t, h.store, tokens...)
	assert.Equal(t, tokens[len(tokens)-1], h.store.Cursor())
}

// lagObserver records what the watcher tells its Observer.
type lagObserver struct {
	mu       sync.Mutex
	lags     []time.Duration
	caughtUp int
}

func (o *lagObserver) PaymentSaved(lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lags = append(o.lags, lag)
}

func (o *lagObserver) CaughtUp() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.caughtUp++
}

func (o *lagObserver) seen() ([]time.Duration, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.lags...), o.caughtUp
}

// TestObserverSeesLagAndCatchUp: payments found by a catch-up report how
// long after their ledger closed they were saved; a completed scan reports
// the watcher caught up; a payment seen again is not reported twice.
func TestObserverSeesLagAndCatchUp(t *testing.T) {
	h := newHarness(t, "0")
	closed := time.Now().Add(-time.Hour)
	var tokens []string
	for range 4 {
		p := incoming("1.0000000")
		p.CreatedAt = closed
		tokens = append(tokens, h.srv.AddPayment(p))
	}
	obs := &lagObserver{}
	cfg := testConfig(h.srv)
	cfg.Observer = obs
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)
	h.waitStored(t, tokens...)

	lags, caughtUp := obs.seen()
	require.Len(t, lags, 4, "one per new payment")
	for _, l := range lags {
		assert.GreaterOrEqual(t, l, 59*time.Minute, "the hour since the ledger closed")
	}
	assert.Equal(t, 1, caughtUp, "the catch-up scan reached the newest payment")

	live := h.srv.AddPayment(incoming("2.0000000"))
	h.waitStored(t, live)
	lags, _ = obs.seen()
	require.Len(t, lags, 5)
	assert.Less(t, lags[4], 59*time.Minute, "a streamed payment is saved soon after its ledger closed")
}

// A payment from the payout account (a refund paid to the receiving
// account) is not a payer's: it is raised as an alert and never saved or
// handed to the matcher, so it is never matched to an order nor refunded,
// which would pay the same money out again. The cursor moves past it, and
// payments around it are saved as usual.
func TestPaymentFromPayoutAccountIsAnAlert(t *testing.T) {
	h := newHarness(t, "0")
	payoutAccount := horizontest.AccountID("payout")
	before := h.srv.AddPayment(incoming("1.0000000"))
	loop := h.srv.AddPayment(horizontest.Payment{From: payoutAccount, To: account, Amount: "5.0000000", MemoType: "text", Memo: "12345678901"})
	cfg := testConfig(h.srv)
	cfg.PayoutAccount = payoutAccount
	h.start(t, cfg, h.store, nil)
	h.waitStream(t)
	streamed := h.srv.AddPayment(horizontest.Payment{From: payoutAccount, To: account, Amount: "2.0000000", MemoType: "text", Memo: "12345678901"})
	// The sender kept is the muxed account, which is still the payout
	// account's money.
	viaMuxed := h.srv.AddPayment(horizontest.Payment{From: payoutAccount, FromMuxed: muxedAddress(t, payoutAccount, 5), FromMuxedID: "5",
		To: account, Amount: "2.0000000", MemoType: "text", Memo: "12345678901"})
	after := h.srv.AddPayment(incoming("3.0000000"))
	h.waitStored(t, before, after)

	for _, tok := range []string{loop, streamed, viaMuxed} {
		_, saved := h.store.Payment(paymentID(tok))
		assert.False(t, saved, "a payment from the payout account is not saved")
		assert.NotContains(t, h.rec.IDs(), paymentID(tok), "nor matched")
	}
	assert.Equal(t, []string{paymentID(before), paymentID(after)}, h.rec.IDs())
	assert.Equal(t, after, h.store.Cursor())
	assert.Equal(t, []string{AlertPaymentFromPayoutAccount, AlertPaymentFromPayoutAccount, AlertPaymentFromPayoutAccount}, h.alerts.Kinds(), "one alert per payment")
}

// TestMuxedSenderIsKept: a payment from a muxed account (a custodian's
// customer) is stored with the M… address as its sender, so a refund to
// the sender reaches that customer, not the custodian's pooled account. A
// from_muxed that is not a form of from is not believed.
func TestMuxedSenderIsKept(t *testing.T) {
	h := newHarness(t, "0")
	customer := muxedAddress(t, sender, 9007199254740993)
	p := incoming("1.0000000")
	p.FromMuxed, p.FromMuxedID = customer, "9007199254740993"
	muxedTok := h.srv.AddPayment(p)
	p.FromMuxed, p.FromMuxedID = muxedAddress(t, horizontest.AccountID("someone else"), 1), "1"
	forgedTok := h.srv.AddPayment(p)
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStored(t, muxedTok, forgedTok)

	got, ok := h.store.Payment(paymentID(muxedTok))
	require.True(t, ok)
	assert.Equal(t, customer, got.Sender)
	assert.Equal(t, sender, models.RefundAccount(got.Sender))
	got, ok = h.store.Payment(paymentID(forgedTok))
	require.True(t, ok)
	assert.Equal(t, sender, got.Sender, "from_muxed of another account: the G… from is kept")
}

// TestAccountMergeIsRecorded: an account merged into the receiving
// account, found by the catch-up or streamed, is recorded as an unmatched
// payment of the XLM its effects credit, from the merged account, and
// raised as an alert naming the operation. A merge into another account
// is nothing to the watcher.
func TestAccountMergeIsRecorded(t *testing.T) {
	h := newHarness(t, "0")
	merged := horizontest.AccountID("merged")
	elsewhere := h.srv.AddPayment(horizontest.Payment{Type: "account_merge", From: merged, To: horizontest.AccountID("other"), Amount: "9.0000000"})
	caught := h.srv.AddPayment(horizontest.Payment{Type: "account_merge", From: merged, To: account, Amount: "12.3456789"})
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	streamed := h.srv.AddPayment(horizontest.Payment{Type: "account_merge", From: horizontest.AccountID("merged 2"), To: account, Amount: "0.5000000"})
	h.waitStored(t, caught, streamed)

	for tok, want := range map[string]struct{ amount, sender string }{
		caught: {"12.3456789", merged}, streamed: {"0.5", horizontest.AccountID("merged 2")},
	} {
		p, _ := h.store.Payment(paymentID(tok))
		assert.Equal(t, "XLM", p.Asset)
		assert.True(t, decimal.RequireFromString(want.amount).Equal(p.Amount), "amount %s, want %s", p.Amount, want.amount)
		assert.Equal(t, want.sender, p.Sender)
		assert.Equal(t, "none", p.MemoType, "no memo: never matched to an order")
		assert.Empty(t, p.Memo)
	}
	_, ok := h.store.Payment(paymentID(elsewhere))
	assert.False(t, ok)
	assert.Equal(t, 2, h.store.Count())
	waitFor(t, "alerts", func() bool { return len(h.alerts.Kinds()) == 2 })
	assert.Equal(t, []string{AlertAccountMerge, AlertAccountMerge}, h.alerts.Kinds())
	assert.Contains(t, h.alerts.Details()[0], "12.3456789")
	assert.Contains(t, h.alerts.Details()[0], caught, "the alert names the operation")
	assert.Contains(t, h.alerts.Details()[1], streamed)
}

// TestClaimableBalancesAreRaised: each claimable balance naming the
// receiving account as a claimant is raised once, with its id, asset and
// amount, by the scans; one naming another account is not, nor is
// anything recorded as a payment.
func TestClaimableBalancesAreRaised(t *testing.T) {
	h := newHarness(t, "0")
	h.srv.SetUSDCIssuer(usdcIssuer)
	xlm := h.srv.AddClaimableBalance(horizontest.ClaimableBalance{Amount: "50.0000000", Sponsor: sender})
	usdc := h.srv.AddClaimableBalance(horizontest.ClaimableBalance{Asset: "USDC:" + usdcIssuer, Amount: "7.2500000", Sponsor: sender})
	h.srv.AddClaimableBalance(horizontest.ClaimableBalance{Amount: "1.0000000", Sponsor: sender, Claimants: []string{sender}})
	cfg := testConfig(h.srv)
	cfg.SweepEvery = 20 * time.Millisecond
	h.start(t, cfg, h.store, nil)
	claimableRequests := func() int {
		n := 0
		for _, r := range h.srv.Requests() {
			if strings.HasPrefix(r, "/claimable_balances") {
				n++
			}
		}
		return n
	}
	waitFor(t, "three scans", func() bool { return claimableRequests() >= 3 })

	assert.Equal(t, []string{AlertClaimableBalance, AlertClaimableBalance}, h.alerts.Kinds(), "once each")
	details := h.alerts.Details()
	assert.Contains(t, details[0], xlm)
	assert.Contains(t, details[0], "50.0000000 XLM")
	assert.Contains(t, details[1], usdc)
	assert.Contains(t, details[1], "7.2500000 USDC:"+usdcIssuer)
	assert.Zero(t, h.store.Count(), "not recorded as a payment")
}

// TestAccountMergeOfUnknownOperationIsNotSkipped: Horizon answering 404
// for a merge's effects (an instance that has not ingested it yet) is not
// taken as "no amount": the watcher stays on the merge, raising
// stellar_bad_record, and records it once the effects are there.
func TestAccountMergeOfUnknownOperationIsNotSkipped(t *testing.T) {
	h := newHarness(t, "0")
	h.start(t, testConfig(h.srv), h.store, nil)
	h.waitStream(t)
	h.srv.FailNext(http.StatusNotFound, 1) // the effects request the merge makes
	merge := h.srv.AddPayment(horizontest.Payment{Type: "account_merge", From: horizontest.AccountID("merged"), To: account, Amount: "3.0000000"})
	h.waitStored(t, merge)
	p, _ := h.store.Payment(paymentID(merge))
	assert.True(t, decimal.RequireFromString("3").Equal(p.Amount))
	waitFor(t, "alerts", func() bool { return len(h.alerts.Kinds()) == 2 })
	assert.Equal(t, []string{AlertBadRecord, AlertAccountMerge}, h.alerts.Kinds())
}
