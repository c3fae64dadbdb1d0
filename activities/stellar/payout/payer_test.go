package payout_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/clocktest"
)

// key returns a stable key pair for name.
func key(name string) *keypair.Full {
	kp, err := keypair.FromRawSeed(sha256.Sum256([]byte("payout test key " + name)))
	if err != nil {
		panic(err)
	}
	return kp
}

var (
	payoutKey = key("payout")
	issuerKey = key("usdc issuer")
)

// payoutSequence is the payout account's sequence number at the start of
// every test.
const payoutSequence = 5000

type harness struct {
	s   *horizontest.Server
	p   *payout.Payer
	cfg payout.Config // p's
	// clock is the one clock the payer and the server share, so a test
	// passes a transaction's time bounds without sleeping.
	clock *clocktest.Clock
	logs  *upstreamtest.LogBuffer
}

// newHarness starts a Horizon test server holding a funded payout account
// (1000 XLM, 1000 USDC) and the given accounts, and a Payer on it signing
// with a FileSigner; edit adjusts the Payer's config.
func newHarness(t *testing.T, edit func(*payout.Config), accounts ...horizontest.Account) *harness {
	t.Helper()
	s := horizontest.New(payoutKey.Address())
	t.Cleanup(s.Close)
	s.SetUSDCIssuer(issuerKey.Address())
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	s.SetClock(clk.Now)
	require.NoError(t, s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1000", USDC: "1000", Sequence: payoutSequence}))
	for _, a := range accounts {
		require.NoError(t, s.SetAccount(a))
	}
	logs := &upstreamtest.LogBuffer{}
	cfg := payout.Config{
		HorizonURL:        s.URL,
		HTTPClient:        &http.Client{},
		NetworkPassphrase: network.TestNetworkPassphrase,
		USDCIssuer:        issuerKey.Address(),
		Signer:            fileSigner(t, payoutKey),
		Now:               clk.Now,
		Logger:            slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := payout.NewPayer(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NotContains(t, logs.String(), payoutKey.Seed(), "the seed is never logged")
	})
	return &harness{s: s, p: p, cfg: cfg, clock: clk, logs: logs}
}

// fileSigner writes kp's seed to a private file and loads it.
func fileSigner(t *testing.T, kp *keypair.Full) *payout.FileSigner {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payout.seed")
	require.NoError(t, os.WriteFile(path, []byte(kp.Seed()+"\n"), 0o600))
	s, err := payout.NewFileSigner(path)
	require.NoError(t, err)
	return s
}

// recorder is the record function: it keeps every transaction recorded,
// runs hook (with the call's number, from 1) and answers fail.
type recorder struct {
	mu    sync.Mutex
	calls []models.PayoutPrior
	hook  func(n int)
	fail  error
}

func (r *recorder) record(_ context.Context, hash, envelope string) error {
	r.mu.Lock()
	r.calls = append(r.calls, models.PayoutPrior{Hash: hash, Envelope: envelope})
	n, hook := len(r.calls), r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return r.fail
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) last() models.PayoutPrior {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return models.PayoutPrior{}
	}
	return r.calls[len(r.calls)-1]
}

func (r *recorder) all() []models.PayoutPrior {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]models.PayoutPrior(nil), r.calls...)
}

// paidTo returns the successful payments in the ledger to account (its G
// address, muxed or not).
func paidTo(s *horizontest.Server, account string) []horizontest.Payment {
	var out []horizontest.Payment
	for _, p := range s.LedgerPayments() {
		if p.To == account && *p.Successful {
			out = append(out, p)
		}
	}
	return out
}

// refund is a payout request to address without a memo.
func refund(id, address, asset, amount string) models.PayoutRequest {
	return models.PayoutRequest{
		RefundID:    id,
		Destination: models.RefundDestination{Address: address},
		Asset:       asset,
		Amount:      decimal.RequireFromString(amount),
	}
}

// submitByHand POSTs an envelope as a client would and returns the status
// and body.
func submitByHand(t *testing.T, s *horizontest.Server, envelope string) (int, string) {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/transactions", url.Values{"tx": {envelope}})
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestPay(t *testing.T) {
	dest := key("destination").Address()
	memoHash := sha256.Sum256([]byte("an exchange's deposit reference"))
	cases := []struct {
		name             string
		trust            bool
		address          string // default dest
		asset, amount    string
		memoType, memo   string
		wantMemoType     string
		wantMemo         string // as Horizon shows it
		wantMuxed        bool
		wantAsset        string // Horizon's asset_type
		wantAmount       string // as Horizon shows it
		wantSubmissionOK bool
	}{
		{name: "XLM without memo", asset: "XLM", amount: "12.5",
			wantMemoType: "none", wantAsset: "native", wantAmount: "12.5000000"},
		{name: "USDC with a trustline, text memo", trust: true, asset: "USDC", amount: "7.1234567",
			memoType: "text", memo: "deposit 42", wantMemoType: "text", wantMemo: "deposit 42",
			wantAsset: "credit_alphanum4", wantAmount: "7.1234567"},
		{name: "XLM to a muxed account, id memo", asset: "XLM", amount: "1",
			memoType: "id", memo: "18446744073709551615", wantMemoType: "id", wantMemo: "18446744073709551615",
			wantMuxed: true, wantAsset: "native", wantAmount: "1.0000000"},
		{name: "USDC, hash memo in hex", trust: true, asset: "USDC", amount: "0.0000001",
			memoType: "hash", memo: hex.EncodeToString(memoHash[:]),
			wantMemoType: "hash", wantMemo: base64.StdEncoding.EncodeToString(memoHash[:]),
			wantAsset: "credit_alphanum4", wantAmount: "0.0000001"},
		{name: "XLM, return memo in base64", asset: "XLM", amount: "3",
			memoType: "return", memo: base64.StdEncoding.EncodeToString(memoHash[:]),
			wantMemoType: "return", wantMemo: base64.StdEncoding.EncodeToString(memoHash[:]),
			wantAsset: "native", wantAmount: "3.0000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5", TrustUSDC: tc.trust})
			address := dest
			if tc.wantMuxed {
				address = horizontest.MuxedAccountID(dest, 7)
			}
			req := refund("rfd_1", address, tc.asset, tc.amount)
			req.Destination.MemoType, req.Destination.Memo = tc.memoType, tc.memo
			rec := &recorder{}

			res, err := h.p.Pay(t.Context(), req, rec.record)
			require.NoError(t, err)
			require.Equal(t, 1, rec.count(), "recorded once")
			recorded := rec.last()
			assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: recorded.Hash}, res)
			assert.Equal(t, 1, h.s.Submissions())

			paid := paidTo(h.s, dest)
			require.Len(t, paid, 1, "paid once")
			got := paid[0]
			assert.Equal(t, res.Hash, got.TxHash)
			assert.Equal(t, payoutKey.Address(), got.From)
			assert.Equal(t, tc.wantAmount, got.Amount)
			assert.Equal(t, tc.wantAsset, got.AssetType)
			if tc.asset == "USDC" {
				assert.Equal(t, []string{"USDC", issuerKey.Address()}, []string{got.AssetCode, got.AssetIssuer})
			}
			assert.Equal(t, tc.wantMemoType, got.MemoType)
			assert.Equal(t, tc.wantMemo, got.Memo)
			if tc.wantMuxed {
				assert.Equal(t, address, got.ToMuxed)
				assert.Equal(t, "7", got.ToMuxedID)
			} else {
				assert.Empty(t, got.ToMuxed)
			}

			// The recorded envelope is the transaction that paid, bounded
			// in time and from the payout account's next sequence number.
			var env xdr.TransactionEnvelope
			require.NoError(t, xdr.SafeUnmarshalBase64(recorded.Envelope, &env))
			sum, err := network.HashTransactionInEnvelope(env, network.TestNetworkPassphrase)
			require.NoError(t, err)
			assert.Equal(t, res.Hash, hex.EncodeToString(sum[:]))
			assert.Equal(t, int64(payoutSequence+1), env.SeqNum())
			require.NotNil(t, env.TimeBounds())
			assert.Equal(t, h.clock.Now().Add(payout.DefaultWindow).Unix(), int64(env.TimeBounds().MaxTime))
			assert.NotContains(t, h.logs.String(), recorded.Envelope, "envelopes are never logged")
		})
	}
}

func TestPayResolvesA504AfterApplying(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5", TrustUSDC: true})
	h.s.TimeoutAfterApply(1)
	rec := &recorder{}

	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "USDC", "25"), rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Len(t, paidTo(h.s, dest), 1)
	assert.Equal(t, 1, h.s.Submissions(), "found by its hash, not submitted again")
	assert.Equal(t, "25.0000000", mustAccount(t, h.s, dest).USDC, "the money moved once")
	assert.Equal(t, "975.0000000", mustAccount(t, h.s, payoutKey.Address()).USDC)
}

func mustAccount(t *testing.T, s *horizontest.Server, id string) horizontest.Account {
	t.Helper()
	a, ok := s.Account(id)
	require.True(t, ok)
	return a
}

func TestPayResolvesALostConnection(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, func(c *payout.Config) { c.SubmitTimeout = 100 * time.Millisecond },
		horizontest.Account{ID: dest, XLM: "5"})
	// Held past the client's timeout, then applied: the answer is lost.
	h.s.DelaySubmissions(1, 500*time.Millisecond)
	rec := &recorder{}

	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Len(t, paidTo(h.s, dest), 1)
	assert.Equal(t, 1, h.s.Submissions())
	assert.Contains(t, h.logs.String(), "answer lost")
}

func TestPayUnknownOutcomeIsSettledByTheNextAttempt(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, func(c *payout.Config) {
		c.SubmitTimeout, c.Await = 50*time.Millisecond, 200*time.Millisecond
	}, horizontest.Account{ID: dest, XLM: "5"})
	h.s.DelaySubmissions(1, 700*time.Millisecond)
	rec := &recorder{}
	req := refund("rfd_1", dest, "XLM", "2")

	_, err := h.p.Pay(t.Context(), req, rec.record)
	require.ErrorIs(t, err, models.ErrPayoutOutcomeUnknown)
	assert.Equal(t, 1, rec.count())
	require.Eventually(t, func() bool { return len(paidTo(h.s, dest)) == 1 }, 3*time.Second, 20*time.Millisecond,
		"the held submission applies")

	req.Prior = rec.last()
	res, err := h.p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: req.Prior.Hash}, res)
	assert.Equal(t, 1, rec.count(), "nothing new built")
	assert.Len(t, paidTo(h.s, dest), 1)
}

func TestPayPriorAlreadyApplied(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	first := &recorder{}
	req := refund("rfd_1", dest, "XLM", "2")
	res, err := h.p.Pay(t.Context(), req, first.record)
	require.NoError(t, err)

	// The process died after submitting, before the outcome was saved:
	// the retry comes back with what was recorded.
	for _, prior := range []models.PayoutPrior{first.last(), {Hash: first.last().Hash}} {
		again := &recorder{}
		req.Prior = prior
		res2, err := h.p.Pay(t.Context(), req, again.record)
		require.NoError(t, err)
		assert.Equal(t, res, res2)
		assert.Zero(t, again.count(), "nothing new built")
	}
	assert.Equal(t, 1, h.s.Submissions(), "not submitted again")
	assert.Len(t, paidTo(h.s, dest), 1)
}

func TestPayPriorNotAppliedIsSubmittedAgain(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			dest := key("destination").Address()
			h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
			h.s.SetRetryAfter(7)
			rec := &recorder{hook: func(n int) {
				if n == 1 {
					h.s.FailNext(status, 1) // the submission fails before Horizon takes it
				}
			}}
			req := refund("rfd_1", dest, "XLM", "2")

			_, err := h.p.Pay(t.Context(), req, rec.record)
			var herr *payout.HorizonError
			require.ErrorAs(t, err, &herr)
			assert.Equal(t, status, herr.Status)
			if status != http.StatusInternalServerError {
				assert.Equal(t, 7*time.Second, herr.RetryAfter, "Retry-After is passed on")
				var delay activities.RetryDelayer
				require.ErrorAs(t, err, &delay, "the port's retry hint")
				assert.Equal(t, 7*time.Second, delay.RetryDelay())
			}
			assert.Equal(t, models.CodeInternal, models.CodeOf(err), "a plain, retryable error")
			assert.Empty(t, paidTo(h.s, dest))

			req.Prior = rec.last()
			res, err := h.p.Pay(t.Context(), req, rec.record)
			require.NoError(t, err)
			assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: req.Prior.Hash}, res, "the same transaction")
			assert.Equal(t, 1, rec.count(), "nothing new built")
			assert.Len(t, paidTo(h.s, dest), 1)
		})
	}
}

// priorNeverSubmitted records a transaction whose submission fails before
// Horizon takes it, as if the process died between recording and
// submitting.
func priorNeverSubmitted(t *testing.T, h *harness, req models.PayoutRequest) (*recorder, models.PayoutPrior) {
	t.Helper()
	rec := &recorder{hook: func(n int) {
		if n == 1 {
			h.s.FailNext(http.StatusServiceUnavailable, 1)
		}
	}}
	_, err := h.p.Pay(t.Context(), req, rec.record)
	require.Error(t, err)
	require.Equal(t, 0, h.s.Submissions())
	return rec, rec.last()
}

// refundNeverSubmitted is a refund of 2 XLM to a destination holding 5
// whose transaction was recorded but never reached Horizon
// (priorNeverSubmitted).
func refundNeverSubmitted(t *testing.T) (*harness, string, models.PayoutRequest, *recorder, models.PayoutPrior) {
	t.Helper()
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	req := refund("rfd_1", dest, "XLM", "2")
	rec, prior := priorNeverSubmitted(t, h, req)
	return h, dest, req, rec, prior
}

func TestPayPriorExpiredIsRebuilt(t *testing.T) {
	h, dest, req, rec, prior := refundNeverSubmitted(t)

	h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
	req.Prior = prior
	res, err := h.p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	require.Equal(t, 2, rec.count(), "a new transaction was recorded")
	assert.NotEqual(t, prior.Hash, res.Hash)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Equal(t, 1, h.s.Submissions(), "the expired one was not submitted")
	assert.Len(t, paidTo(h.s, dest), 1)

	// The old one can indeed never apply.
	status, body := submitByHand(t, h.s, prior.Envelope)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"tx_too_late"`)
	assert.Len(t, paidTo(h.s, dest), 1)
}

func TestPayPriorExpiredWhileHorizonLagsIsNotRebuilt(t *testing.T) {
	h, dest, req, rec, prior := refundNeverSubmitted(t)

	// By the clock the old transaction has expired, but Horizon has not
	// ingested a ledger that closed after its time bounds: it may yet
	// show it.
	h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
	h.s.SetInstances(1000)
	req.Prior = prior
	_, err := h.p.Pay(t.Context(), req, rec.record)
	require.ErrorIs(t, err, models.ErrPayoutOutcomeUnknown)
	assert.Equal(t, 1, rec.count(), "nothing new built")
	assert.Empty(t, paidTo(h.s, dest))

	h.s.SetInstances()
	res, err := h.p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, 2, rec.count())
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Len(t, paidTo(h.s, dest), 1)
}

// TestPayPriorAppliedIsFoundBehindALoadBalancer: a payout applied and its
// answer lost is retried after its time bounds, while Horizon answers
// from two instances, one of them lagBehind ledgers behind the network,
// in turn (in both orders). However the answers fall, it is never judged
// absent and paid again.
func TestPayPriorAppliedIsFoundBehindALoadBalancer(t *testing.T) {
	const lagBehind = 10 // about 50 seconds of the real network
	for _, lags := range [][]int64{{0, lagBehind}, {lagBehind, 0}} {
		t.Run(fmt.Sprint(lags), func(t *testing.T) {
			dest := key("destination").Address()
			h := newHarness(t, func(c *payout.Config) { c.Await = 200 * time.Millisecond },
				horizontest.Account{ID: dest, XLM: "5"})
			rec := &recorder{hook: func(n int) {
				if n == 1 {
					// Applied, answered 504, and looked up only on the
					// lagging instance: the outcome stays unknown.
					h.s.TimeoutAfterApply(1)
					h.s.SetInstances(lagBehind)
				}
			}}
			req := refund("rfd_1", dest, "XLM", "2")
			_, err := h.p.Pay(t.Context(), req, rec.record)
			require.ErrorIs(t, err, models.ErrPayoutOutcomeUnknown)
			require.Len(t, paidTo(h.s, dest), 1, "applied")

			h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
			h.s.SetInstances(lags...)
			req.Prior = rec.last()
			var res models.PayoutResult
			for range 5 {
				res, err = h.p.Pay(t.Context(), req, rec.record)
				if !errors.Is(err, models.ErrPayoutOutcomeUnknown) {
					break
				}
			}
			require.NoError(t, err)
			assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: req.Prior.Hash}, res)
			assert.Equal(t, 1, rec.count(), "nothing new built")
			assert.Len(t, paidTo(h.s, dest), 1, "paid once")
		})
	}
}

func TestPayRebuildsAfterBadSequence(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	rec := &recorder{hook: func(n int) {
		if n == 1 {
			// Another process takes the sequence number meanwhile.
			require.NoError(t, h.s.StealSequence(payoutKey.Address()))
		}
	}}

	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.NoError(t, err)
	calls := rec.all()
	require.Len(t, calls, 2, "rebuilt and recorded again")
	assert.NotEqual(t, calls[0].Hash, calls[1].Hash)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: calls[1].Hash}, res)
	assert.Equal(t, 2, h.s.Submissions())
	paid := paidTo(h.s, dest)
	require.Len(t, paid, 1)
	assert.Equal(t, calls[1].Hash, paid[0].TxHash)
	assert.Equal(t, int64(payoutSequence+2), mustAccount(t, h.s, payoutKey.Address()).Sequence)
}

func TestPayGivesUpAfterRepeatedBadSequences(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	rec := &recorder{hook: func(int) { require.NoError(t, h.s.StealSequence(payoutKey.Address())) }}

	_, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.Error(t, err)
	assert.Equal(t, models.CodeInternal, models.CodeOf(err), "retryable")
	assert.Equal(t, 3, rec.count(), "a bounded number of transactions")
	assert.Empty(t, paidTo(h.s, dest))
}

func TestPayRefused(t *testing.T) {
	dest := key("destination").Address()
	cases := []struct {
		name       string
		accounts   []horizontest.Account
		asset      string
		prepare    func(*horizontest.Server)
		code       string
		reason     []string // fragments of the reason
		inLedger   bool
		submitted2 int // submissions after the retry with Prior
	}{
		{name: "USDC without a trustline", accounts: []horizontest.Account{{ID: dest, XLM: "5"}}, asset: "USDC",
			code: "op_no_trust", reason: []string{"does not trust USDC", "add a USDC trustline"}, inLedger: true, submitted2: 1},
		{name: "no such account", asset: "XLM",
			code: "op_no_destination", reason: []string{"does not exist"}, inLedger: true, submitted2: 1},
		{name: "signed for another network", accounts: []horizontest.Account{{ID: dest, XLM: "5"}}, asset: "XLM",
			prepare: func(s *horizontest.Server) { s.SetNetworkPassphrase(network.PublicNetworkPassphrase) },
			code:    "tx_bad_auth", reason: []string{"tx_bad_auth", "an operator"}, submitted2: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.accounts...)
			if tc.prepare != nil {
				tc.prepare(h.s)
			}
			rec := &recorder{}
			req := refund("rfd_1", dest, tc.asset, "2")

			res, err := h.p.Pay(t.Context(), req, rec.record)
			require.NoError(t, err)
			assert.Equal(t, models.PayoutRefused, res.Outcome)
			assert.Equal(t, tc.code, res.Code)
			assert.Equal(t, rec.last().Hash, res.Hash)
			for _, f := range tc.reason {
				assert.Contains(t, res.Reason, f)
			}
			assert.Empty(t, paidTo(h.s, dest), "nothing paid")
			if tc.inLedger {
				assert.Equal(t, int64(payoutSequence+1), mustAccount(t, h.s, payoutKey.Address()).Sequence,
					"a failed transaction is in the ledger")
			}

			// A retry with the refused transaction answers the same.
			req.Prior = rec.last()
			res2, err := h.p.Pay(t.Context(), req, rec.record)
			require.NoError(t, err)
			assert.Equal(t, res, res2)
			assert.Equal(t, 1, rec.count(), "nothing new built")
			assert.Equal(t, tc.submitted2, h.s.Submissions())
			assert.Empty(t, paidTo(h.s, dest))
		})
	}
}

func TestPayUnderfunded(t *testing.T) {
	dest := key("destination").Address()
	t.Run("op_underfunded fails in the ledger, the retry builds anew", func(t *testing.T) {
		h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5", TrustUSDC: true})
		require.NoError(t, h.s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1000", USDC: "1"}))
		rec := &recorder{}
		req := refund("rfd_1", dest, "USDC", "5")

		_, err := h.p.Pay(t.Context(), req, rec.record)
		require.ErrorIs(t, err, models.ErrPayoutUnderfunded)
		assert.Contains(t, err.Error(), "op_underfunded")
		assert.Equal(t, models.CodeInternal, models.CodeOf(err), "not a models error: the caller retries")
		assert.Empty(t, paidTo(h.s, dest))

		// Still underfunded: the same again, with the failed one as Prior.
		req.Prior = rec.last()
		_, err = h.p.Pay(t.Context(), req, rec.record)
		require.ErrorIs(t, err, models.ErrPayoutUnderfunded)

		require.NoError(t, h.s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1000", USDC: "100"}))
		req.Prior = rec.last()
		res, err := h.p.Pay(t.Context(), req, rec.record)
		require.NoError(t, err)
		assert.Equal(t, 3, rec.count(), "each failed transaction was final; a new one each time")
		assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
		assert.Len(t, paidTo(h.s, dest), 1)
	})
	t.Run("no XLM for the fee: the same envelope applies once topped up", func(t *testing.T) {
		h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
		// Exactly the reserve (two base reserves and one for the trustline).
		require.NoError(t, h.s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1.5", TrustUSDC: true}))
		rec := &recorder{}
		req := refund("rfd_1", dest, "XLM", "0.5")

		_, err := h.p.Pay(t.Context(), req, rec.record)
		require.ErrorIs(t, err, models.ErrPayoutUnderfunded)
		assert.Contains(t, err.Error(), "tx_insufficient_balance")

		require.NoError(t, h.s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "10", TrustUSDC: true}))
		req.Prior = rec.last()
		res, err := h.p.Pay(t.Context(), req, rec.record)
		require.NoError(t, err)
		assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: req.Prior.Hash}, res, "never in a ledger, still valid: sent again")
		assert.Equal(t, 1, rec.count())
		assert.Len(t, paidTo(h.s, dest), 1)
	})
	t.Run("no payout account", func(t *testing.T) {
		s := horizontest.New(payoutKey.Address())
		t.Cleanup(s.Close)
		s.SetUSDCIssuer(issuerKey.Address())
		p, err := payout.NewPayer(payout.Config{HorizonURL: s.URL, NetworkPassphrase: network.TestNetworkPassphrase,
			USDCIssuer: issuerKey.Address(), Signer: fileSigner(t, payoutKey)})
		require.NoError(t, err)
		rec := &recorder{}
		_, err = p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "1"), rec.record)
		require.ErrorIs(t, err, models.ErrPayoutUnderfunded)
		assert.Zero(t, rec.count())
	})
}

func TestPayRecordFailsNothingSubmitted(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	dbDown := errors.New("database is down")
	rec := &recorder{fail: dbDown}

	_, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.ErrorIs(t, err, dbDown)
	assert.Equal(t, 1, rec.count())
	assert.Zero(t, h.s.Submissions(), "nothing submitted")
	assert.Empty(t, paidTo(h.s, dest))
}

func TestPayRateLimitedBeforeBuilding(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	h.s.SetRetryAfter(3)
	h.s.FailNext(http.StatusTooManyRequests, 1)
	rec := &recorder{}

	_, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	var herr *payout.HorizonError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusTooManyRequests, herr.Status)
	assert.Equal(t, 3*time.Second, herr.RetryAfter)
	assert.Zero(t, rec.count())
	assert.Zero(t, h.s.Submissions())
}

func TestPayRefusesInvalidRequests(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil)
	cases := []struct {
		name string
		edit func(*models.PayoutRequest)
		code models.Code
	}{
		{"to_sender unresolved", func(r *models.PayoutRequest) { r.Destination = models.RefundDestination{ToSender: true} }, models.CodeInvalidRequest},
		{"bad address", func(r *models.PayoutRequest) { r.Destination.Address = "GABC" }, models.CodeInvalidRefundDestination},
		{"memo too long", func(r *models.PayoutRequest) {
			r.Destination.MemoType, r.Destination.Memo = "text", strings.Repeat("x", 29)
		}, models.CodeInvalidRefundDestination},
		{"other asset", func(r *models.PayoutRequest) { r.Asset = "BTC" }, models.CodeInvalidRequest},
		{"8 decimals", func(r *models.PayoutRequest) { r.Amount = decimal.RequireFromString("1.00000001") }, models.CodeInvalidRequest},
		{"zero", func(r *models.PayoutRequest) { r.Amount = decimal.Zero }, models.CodeInvalidRequest},
		{"beyond int64 stroops", func(r *models.PayoutRequest) { r.Amount = decimal.RequireFromString("922337203686") }, models.CodeInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := refund("rfd_1", dest, "XLM", "2")
			tc.edit(&req)
			rec := &recorder{}
			_, err := h.p.Pay(t.Context(), req, rec.record)
			require.Error(t, err)
			assert.Equal(t, tc.code, models.CodeOf(err))
			assert.Zero(t, rec.count())
		})
	}
	assert.Empty(t, h.s.Requests(), "refused before asking Horizon")
}

// destinations are n destination accounts holding 5 XLM, trusting USDC
// or not.
func destinations(n int, trustUSDC bool) ([]string, []horizontest.Account) {
	dests := make([]string, n)
	accounts := make([]horizontest.Account, n)
	for i := range n {
		dests[i] = key(fmt.Sprintf("destination %d", i)).Address()
		accounts[i] = horizontest.Account{ID: dests[i], XLM: "5", TrustUSDC: trustUSDC}
	}
	return dests, accounts
}

func TestPayConcurrentRefundsAreSerialised(t *testing.T) {
	const n = 8
	dests, accounts := destinations(n, true)
	h := newHarness(t, nil, accounts...)
	results := make([]models.PayoutResult, n)
	errs := make([]error, n)
	recs := make([]*recorder, n)
	var wg sync.WaitGroup
	for i := range n {
		recs[i] = &recorder{}
		asset := []string{"XLM", "USDC"}[i%2]
		wg.Go(func() {
			results[i], errs[i] = h.p.Pay(t.Context(), refund(fmt.Sprintf("rfd_%d", i), dests[i], asset, "1.25"), recs[i].record)
		})
	}
	wg.Wait()

	hashes := map[string]bool{}
	for i := range n {
		require.NoError(t, errs[i], "refund %d", i)
		assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: recs[i].last().Hash}, results[i])
		assert.Len(t, paidTo(h.s, dests[i]), 1, "refund %d paid once", i)
		hashes[results[i].Hash] = true
	}
	assert.Len(t, hashes, n)
	assert.Equal(t, n, h.s.Submissions(), "one submission each: no sequence number was contended")
	assert.Equal(t, int64(payoutSequence+n), mustAccount(t, h.s, payoutKey.Address()).Sequence)
}

// sharedLock is the lock the worker processes paying from one account
// share (the database's, in production): here a one-slot channel that
// counts its holders.
type sharedLock struct {
	slot      chan struct{}
	mu        sync.Mutex
	held, max int
}

func (l *sharedLock) LockAccount(ctx context.Context, _ string) (func(), error) {
	select {
	case l.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	l.held++
	l.max = max(l.max, l.held)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.held--
		l.mu.Unlock()
		<-l.slot
	}, nil
}

// refundRecords is the refunds' recorded transactions, written as
// SendRefund does: a compare-and-set on the last one the attempt knows.
type refundRecords struct {
	mu       sync.Mutex
	recorded map[string]string // refund id → hash
	records  int
}

func (r *refundRecords) recordFor(id, prior string) payout.RecordFunc {
	last := prior
	return func(_ context.Context, hash, _ string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.recorded[id] != last {
			return errors.New("another attempt recorded a payout transaction meanwhile")
		}
		r.recorded[id], last = hash, hash
		r.records++
		return nil
	}
}

// TestPayTwoWorkersShareTheAccount: two Payers (two worker processes,
// each with its own turns) pay 20 refunds at once from one account. With
// the lock they share, each refund is built, recorded and submitted once:
// no submission meets another's sequence number (tx_bad_seq).
func TestPayTwoWorkersShareTheAccount(t *testing.T) {
	const n = 20
	dests, accounts := destinations(n, false)
	h := newHarness(t, nil, accounts...)
	lock := &sharedLock{slot: make(chan struct{}, 1)}
	var workers [2]*payout.Payer
	for w := range workers {
		cfg := h.cfg
		cfg.Lock = lock
		p, err := payout.NewPayer(cfg)
		require.NoError(t, err)
		workers[w] = p
	}
	// Every submission waits for its ledger, as on the network, so that
	// the workers' payouts overlap.
	h.s.DelaySubmissions(n, 20*time.Millisecond)
	records := &refundRecords{recorded: map[string]string{}}
	results := make([]models.PayoutResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("rfd_%d", i)
		wg.Go(func() {
			results[i], errs[i] = workers[i%2].Pay(t.Context(), refund(id, dests[i], "XLM", "1"), records.recordFor(id, ""))
		})
	}
	wg.Wait()

	for i := range n {
		require.NoError(t, errs[i], "refund %d", i)
		assert.Equal(t, models.PayoutSent, results[i].Outcome)
		assert.Len(t, paidTo(h.s, dests[i]), 1, "refund %d paid once", i)
	}
	assert.Equal(t, n, records.records, "one transaction built and recorded each")
	assert.Equal(t, n, h.s.Submissions(), "one submission each: no sequence number was contended")
	assert.Equal(t, 1, lock.max, "one payout at a time from the account")
	assert.Equal(t, int64(payoutSequence+n), mustAccount(t, h.s, payoutKey.Address()).Sequence)
}

func TestCheckDestination(t *testing.T) {
	plain := key("plain").Address()
	trusting := key("trusting").Address()
	missing := key("missing").Address()
	// An exchange's pooled account (SEP-29), and one whose data entry
	// says it needs no memo.
	pooled := key("pooled").Address()
	optional := key("optional").Address()
	h := newHarness(t, nil,
		horizontest.Account{ID: plain, XLM: "5"},
		horizontest.Account{ID: trusting, XLM: "5", TrustUSDC: true},
		horizontest.Account{ID: pooled, XLM: "5", TrustUSDC: true, Data: map[string]string{"config.memo_required": "1"}},
		horizontest.Account{ID: optional, XLM: "5", Data: map[string]string{"config.memo_required": "0"}},
	)
	cases := []struct {
		name    string
		address string
		memo    string // an id memo, if any
		asset   string
		fail    int      // status Horizon answers, 0 for none
		field   string   // the refusal's field, default the address
		code    string   // models code of the refusal
		message []string // fragments of the refusal
	}{
		{name: "XLM to an account", address: plain, asset: "XLM"},
		{name: "XLM to a muxed account", address: horizontest.MuxedAccountID(plain, 3), asset: "XLM"},
		{name: "USDC to a trustline", address: trusting, asset: "USDC"},
		{name: "USDC to a muxed trustline", address: horizontest.MuxedAccountID(trusting, 3), asset: "USDC"},
		{name: "no such account", address: missing, asset: "XLM",
			code: string(models.CodeInvalidRefundDestination), message: []string{"does not exist"}},
		{name: "USDC without a trustline", address: plain, asset: "USDC",
			code: string(models.CodeInvalidRefundDestination), message: []string{"does not trust USDC", "trustline"}},
		{name: "malformed address", address: "GABC", asset: "XLM", code: string(models.CodeInvalidRefundDestination)},
		{name: "Horizon unavailable", address: plain, asset: "XLM", fail: http.StatusServiceUnavailable},
		{name: "XLM to a memo-requiring account without a memo", address: pooled, asset: "XLM",
			code: string(models.CodeInvalidRefundDestination), field: "refund_destination.memo", message: []string{"requires a memo"}},
		{name: "USDC to a memo-requiring account without a memo", address: pooled, asset: "USDC",
			code: string(models.CodeInvalidRefundDestination), field: "refund_destination.memo", message: []string{"requires a memo"}},
		{name: "to a memo-requiring account with a memo", address: pooled, memo: "1234", asset: "USDC"},
		{name: "to a muxed form of a memo-requiring account", address: horizontest.MuxedAccountID(pooled, 1234), asset: "XLM"},
		{name: "to an account whose memo is not required", address: optional, asset: "XLM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail != 0 {
				h.s.FailNext(tc.fail, 1)
			}
			d := models.RefundDestination{Address: tc.address}
			if tc.memo != "" {
				d.MemoType, d.Memo = "id", tc.memo
			}
			err := h.p.CheckDestination(t.Context(), d, tc.asset)
			switch {
			case tc.fail != 0:
				var herr *payout.HorizonError
				require.ErrorAs(t, err, &herr)
				assert.Equal(t, tc.fail, herr.Status)
				assert.Equal(t, models.CodeInternal, models.CodeOf(err), "a plain error: retry")
			case tc.code != "":
				var merr *models.Error
				require.ErrorAs(t, err, &merr)
				assert.Equal(t, tc.code, string(merr.Code))
				field := tc.field
				if field == "" {
					field = "refund_destination.address"
				}
				assert.Equal(t, field, merr.Field)
				for _, f := range tc.message {
					assert.Contains(t, merr.Message, f)
				}
				assert.NotContains(t, merr.Message, tc.address, "messages never repeat the address")
			default:
				require.NoError(t, err)
			}
		})
	}
}

func TestNewPayerChecksItsConfig(t *testing.T) {
	good := payout.Config{
		HorizonURL:        "https://horizon-testnet.stellar.org",
		NetworkPassphrase: network.TestNetworkPassphrase,
		USDCIssuer:        issuerKey.Address(),
		Signer:            fileSigner(t, payoutKey),
	}
	p, err := payout.NewPayer(good)
	require.NoError(t, err)
	assert.Equal(t, payoutKey.Address(), p.Address())

	cases := map[string]func(*payout.Config){
		"no URL":          func(c *payout.Config) { c.HorizonURL = "" },
		"not http":        func(c *payout.Config) { c.HorizonURL = "ftp://horizon" },
		"no passphrase":   func(c *payout.Config) { c.NetworkPassphrase = "" },
		"bad issuer":      func(c *payout.Config) { c.USDCIssuer = "GABC" },
		"no signer":       func(c *payout.Config) { c.Signer = nil },
		"keyless signer":  func(c *payout.Config) { c.Signer = payout.FileSigner{} },
		"fee below 100":   func(c *payout.Config) { c.BaseFee = 99 },
		"max below base":  func(c *payout.Config) { c.BaseFee, c.MaxFee = 500, 400 },
		"negative await":  func(c *payout.Config) { c.Await = -time.Second },
		"sub-second time": func(c *payout.Config) { c.Window = time.Millisecond },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := good
			edit(&cfg)
			_, err := payout.NewPayer(cfg)
			require.Error(t, err)
		})
	}
}

// TestPayPriorFromAnEarlierPayoutKey: the payout key was rotated while a
// refund's recorded transaction was from the old account. It is settled
// by its own account's sequence number and history, never submitted
// again; only once it provably never applies is another built, from the
// new account.
func TestPayPriorFromAnEarlierPayoutKey(t *testing.T) {
	oldKey := key("old payout")
	dest := key("destination").Address()
	// setup returns a harness paying from payoutKey and a Payer on the
	// same server paying from the old account, as before the rotation.
	setup := func(t *testing.T) (*harness, *payout.Payer) {
		h := newHarness(t, func(c *payout.Config) { c.Await = 200 * time.Millisecond },
			horizontest.Account{ID: dest, XLM: "5"},
			horizontest.Account{ID: oldKey.Address(), XLM: "1000", Sequence: 9000})
		cfg := h.cfg
		cfg.Signer = fileSigner(t, oldKey)
		old, err := payout.NewPayer(cfg)
		require.NoError(t, err)
		return h, old
	}
	req := refund("rfd_1", dest, "XLM", "2")

	t.Run("applied: sent, not paid again", func(t *testing.T) {
		h, old := setup(t)
		first := &recorder{}
		res, err := old.Pay(t.Context(), req, first.record)
		require.NoError(t, err)
		require.Len(t, paidTo(h.s, dest), 1)

		h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
		for _, prior := range []models.PayoutPrior{first.last(), {Hash: first.last().Hash}} {
			rec := &recorder{}
			r := req
			r.Prior = prior
			got, err := h.p.Pay(t.Context(), r, rec.record)
			require.NoError(t, err)
			assert.Equal(t, res, got)
			assert.Zero(t, rec.count(), "nothing new built")
		}
		assert.Equal(t, 1, h.s.Submissions())
		assert.Len(t, paidTo(h.s, dest), 1, "paid once")
	})

	t.Run("never submitted: not submitted again; built anew from the new account once expired", func(t *testing.T) {
		h, old := setup(t)
		first := &recorder{hook: func(n int) { h.s.FailNext(http.StatusServiceUnavailable, 1) }}
		_, err := old.Pay(t.Context(), req, first.record)
		require.Error(t, err)
		require.Zero(t, h.s.Submissions())

		r := req
		r.Prior = first.last()
		rec := &recorder{}
		_, err = h.p.Pay(t.Context(), r, rec.record)
		require.ErrorIs(t, err, models.ErrPayoutOutcomeUnknown, "still within its time bounds: it may yet apply")
		assert.Zero(t, rec.count(), "nothing new built")
		assert.Zero(t, h.s.Submissions(), "the old account's envelope is not submitted by the new key's payer")

		h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
		res, err := h.p.Pay(t.Context(), r, rec.record)
		require.NoError(t, err)
		require.Equal(t, 1, rec.count())
		assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
		assert.Equal(t, 1, h.s.Submissions())
		paid := paidTo(h.s, dest)
		require.Len(t, paid, 1, "paid once")
		assert.Equal(t, payoutKey.Address(), paid[0].From, "from the new account")
		assert.Equal(t, int64(9000), mustAccount(t, h.s, oldKey.Address()).Sequence, "the old account untouched")

		status, body := submitByHand(t, h.s, first.last().Envelope)
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, body, `"tx_too_late"`, "the old one can indeed never apply")
	})

	t.Run("its number used by another transaction of the old account: built anew", func(t *testing.T) {
		h, old := setup(t)
		first := &recorder{hook: func(n int) { h.s.FailNext(http.StatusServiceUnavailable, 1) }}
		_, err := old.Pay(t.Context(), req, first.record)
		require.Error(t, err)
		require.NoError(t, h.s.StealSequence(oldKey.Address()))

		r := req
		r.Prior = first.last()
		rec := &recorder{}
		res, err := h.p.Pay(t.Context(), r, rec.record)
		require.NoError(t, err)
		assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
		assert.Equal(t, 1, h.s.Submissions())
		assert.Len(t, paidTo(h.s, dest), 1, "paid once")
	})
}

// envelopeFee is the fee a recorded envelope bids, in stroops.
func envelopeFee(t *testing.T, envelope string) int64 {
	t.Helper()
	var env xdr.TransactionEnvelope
	require.NoError(t, xdr.SafeUnmarshalBase64(envelope, &env))
	require.False(t, env.IsFeeBump(), "what is recorded is the payment, never a fee bump")
	return int64(env.Fee())
}

// TestPayBidsFromTheFeeStatistics: under surge pricing a new transaction
// bids Horizon's fee statistics, within MaxFee; above MaxFee the payout
// waits (models.ErrPayoutFeeTooLow) with the same transaction, which applies once the
// fee drops.
func TestPayBidsFromTheFeeStatistics(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, func(c *payout.Config) { c.MaxFee = 1000 }, horizontest.Account{ID: dest, XLM: "5"})
	h.s.SetBaseFee(300)
	rec := &recorder{}
	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Equal(t, int64(300), envelopeFee(t, rec.last().Envelope), "the statistics' bid")
	assert.Equal(t, 1, h.s.Submissions())

	h.s.SetBaseFee(5000)
	rec = &recorder{}
	req := refund("rfd_2", dest, "XLM", "3")
	_, err = h.p.Pay(t.Context(), req, rec.record)
	require.ErrorIs(t, err, models.ErrPayoutFeeTooLow)
	assert.Equal(t, models.CodeInternal, models.CodeOf(err), "retryable")
	require.Equal(t, 1, rec.count())
	assert.Equal(t, int64(1000), envelopeFee(t, rec.last().Envelope), "MaxFee")
	assert.Len(t, paidTo(h.s, dest), 1)

	h.s.SetBaseFee(800)
	req.Prior = rec.last()
	res, err = h.p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: req.Prior.Hash}, res, "the same transaction")
	assert.Equal(t, 1, rec.count(), "nothing new built")
	assert.Len(t, paidTo(h.s, dest), 2)
}

// TestPayBumpsATransactionRefusedForItsFee: fees rise between building
// and submitting; the recorded transaction, refused with
// tx_insufficient_fee, is submitted again inside a fee bump and applies:
// one payment, under the recorded hash.
func TestPayBumpsATransactionRefusedForItsFee(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, nil, horizontest.Account{ID: dest, XLM: "5"})
	rec := &recorder{hook: func(int) { h.s.SetBaseFee(400) }}
	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res, "under the recorded hash")
	assert.Equal(t, 1, rec.count(), "nothing new built")
	assert.Equal(t, int64(100), envelopeFee(t, rec.last().Envelope))
	assert.Equal(t, 2, h.s.Submissions(), "the transaction, then its fee bump")
	assert.Len(t, paidTo(h.s, dest), 1)
	assert.Equal(t, int64(payoutSequence+1), mustAccount(t, h.s, payoutKey.Address()).Sequence)
	assert.Equal(t, "997.9999200", mustAccount(t, h.s, payoutKey.Address()).XLM, "2 XLM and the base fee for two operations")
	assert.Contains(t, h.logs.String(), "fee bump")
}

// bumpByHand submits a fee bump of the recorded envelope at baseFee, as
// an attempt that died before reading the answer did.
func bumpByHand(t *testing.T, h *harness, envelope string, baseFee int64) {
	t.Helper()
	generic, err := txnbuild.TransactionFromXDR(envelope)
	require.NoError(t, err)
	inner, ok := generic.Transaction()
	require.True(t, ok)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payoutKey.Address(), BaseFee: baseFee})
	require.NoError(t, err)
	fb, err = fb.Sign(network.TestNetworkPassphrase, payoutKey)
	require.NoError(t, err)
	b64, err := fb.Base64()
	require.NoError(t, err)
	status, body := submitByHand(t, h.s, b64)
	require.Equal(t, http.StatusOK, status, body)
}

// TestPayPriorAppliedInAFeeBumpIsFoundInTheHistory: the recorded
// transaction applied inside a fee bump, and its retry, past its time
// bounds, misses it by hash on a lagging instance: the account's history,
// which lists the fee bump under its own hash, shows that the recorded
// one used the sequence number. It is sent, not paid again.
func TestPayPriorAppliedInAFeeBumpIsFoundInTheHistory(t *testing.T) {
	const lagBehind = 10
	h, dest, req, rec, prior := refundNeverSubmitted(t)
	h.s.SetBaseFee(400)
	bumpByHand(t, h, prior.Envelope, 400)
	require.Len(t, paidTo(h.s, dest), 1)

	h.clock.Advance(payout.DefaultWindow + payout.DefaultMargin + time.Second)
	// The lookup by hash asks the lagging instance; the account, its
	// history and whatever comes next, caught-up ones.
	h.s.SetInstances(lagBehind, 0, 0, 0, 0, 0, 0, 0)
	req.Prior = prior
	res, err := h.p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: prior.Hash}, res)
	assert.Equal(t, 1, rec.count(), "nothing new built")
	assert.Len(t, paidTo(h.s, dest), 1, "paid once")
}

// TestPayBumpsToMaxFeeWhenTheStatisticsTrail: the fee statistics still
// show the fee before a surge; the fee bump at their rate is refused
// too, and one bidding MaxFee applies. Above MaxFee, the payout waits.
func TestPayBumpsToMaxFeeWhenTheStatisticsTrail(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, func(c *payout.Config) { c.MaxFee = 2000 }, horizontest.Account{ID: dest, XLM: "5"})
	rec := &recorder{hook: func(int) {
		h.s.SetBaseFee(1500)
		h.s.SetFeeStats(300)
	}}
	res, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.last().Hash}, res)
	assert.Equal(t, 1, rec.count())
	assert.Equal(t, 3, h.s.Submissions(), "the transaction, a bump at the statistics' rate, one at MaxFee")
	assert.Len(t, paidTo(h.s, dest), 1)

	h.s.SetBaseFee(2500)
	rec = &recorder{}
	_, err = h.p.Pay(t.Context(), refund("rfd_2", dest, "XLM", "2"), rec.record)
	require.ErrorIs(t, err, models.ErrPayoutFeeTooLow)
	assert.Len(t, paidTo(h.s, dest), 1)
}

// unsigningSigner returns transactions as given, unsigned: a signer that
// failed without saying so.
type unsigningSigner struct{ payout.Signer }

func (unsigningSigner) Sign(tx *txnbuild.Transaction, _ string) (*txnbuild.Transaction, error) {
	return tx, nil
}

// TestPayRefusesAnUnsignedTransaction: what the signer returns must be the
// transaction built, signed; anything else is neither recorded nor sent.
func TestPayRefusesAnUnsignedTransaction(t *testing.T) {
	dest := key("destination").Address()
	h := newHarness(t, func(c *payout.Config) { c.Signer = unsigningSigner{c.Signer} }, horizontest.Account{ID: dest, XLM: "5"})
	rec := &recorder{}
	_, err := h.p.Pay(t.Context(), refund("rfd_1", dest, "XLM", "2"), rec.record)
	require.ErrorContains(t, err, "the signer did not return the transaction signed and unchanged")
	assert.Zero(t, rec.count())
	assert.Zero(t, h.s.Submissions())
}

// Balances reads the payout account's XLM and USDC (of the configured
// issuer) from Horizon; a USDC of another issuer is not the one paid out.
func TestBalances(t *testing.T) {
	h := newHarness(t, nil)
	got, err := h.p.Balances(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"XLM": "1000", "USDC": "1000"}, map[string]string{"XLM": got["XLM"].String(), "USDC": got["USDC"].String()})

	require.NoError(t, h.s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "12.5"}))
	got, err = h.p.Balances(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "12.5", got["XLM"].String())
	assert.NotContains(t, got, "USDC", "no trustline: no USDC to pay out")

	other := newHarness(t, func(c *payout.Config) { c.USDCIssuer = payoutKey.Address() })
	got, err = other.p.Balances(t.Context())
	require.NoError(t, err)
	assert.NotContains(t, got, "USDC", "USDC of another issuer")
}
