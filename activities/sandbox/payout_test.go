package sandbox

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
)

// The refund activities' payer port: the sandbox and the live payer are
// both adapters of it.
var (
	_ activities.Payer = (*Payer)(nil)
	_ activities.Payer = (*payout.Payer)(nil)
)

// A well-formed account and one of its muxed addresses.
const (
	payoutDest  = "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"
	payoutMuxed = "MA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KAAAAAAAAAAAFJOYK"
)

type records struct{ hashes, envelopes []string }

func (r *records) record(_ context.Context, hash, envelope string) error {
	r.hashes = append(r.hashes, hash)
	r.envelopes = append(r.envelopes, envelope)
	return nil
}

func sandboxRefund(memo string) models.PayoutRequest {
	r := models.PayoutRequest{
		RefundID:    "rfd_1",
		Destination: models.RefundDestination{Address: payoutDest},
		Asset:       payout.AssetUSDC,
		Amount:      decimal.RequireFromString("12.5"),
	}
	if memo != "" {
		r.Destination.MemoType, r.Destination.Memo = "text", memo
	}
	return r
}

func TestSandboxPayerSends(t *testing.T) {
	p := NewPayer()
	rec := &records{}
	req := sandboxRefund("")

	res, err := p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	require.Len(t, rec.hashes, 1, "recorded before sending")
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.hashes[0]}, res)
	assert.Equal(t, []string{""}, rec.envelopes, "no chain, no envelope")
	_, err = models.RecordRefundTransaction(models.Refund{Status: models.RefundSending}, res.Hash, "")
	require.NoError(t, err, "the hash has a Stellar hash's shape")
	// Pinned: client developers may script against sandbox hashes.
	assert.Equal(t, "13c52c018ccd57658921d9db33d4a4304239cdf406fe1f943d84535a4e4c59e6", res.Hash)

	// The same request has the same hash; with it as Prior nothing is
	// recorded again.
	again, err := p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, res, again)
	req.Prior = models.PayoutPrior{Hash: res.Hash}
	again, err = p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, res, again)
	assert.Len(t, rec.hashes, 2)

	// Anything that changes the payment changes the hash.
	base := sandboxRefund("")
	for name, edit := range map[string]func(*models.PayoutRequest){
		"refund":   func(r *models.PayoutRequest) { r.RefundID = "rfd_2" },
		"address":  func(r *models.PayoutRequest) { r.Destination.Address = payoutMuxed },
		"memo":     func(r *models.PayoutRequest) { r.Destination.MemoType, r.Destination.Memo = "id", "1" },
		"asset":    func(r *models.PayoutRequest) { r.Asset = payout.AssetXLM },
		"amount":   func(r *models.PayoutRequest) { r.Amount = decimal.RequireFromString("12.5000001") },
		"same sum": func(r *models.PayoutRequest) { r.Amount = decimal.RequireFromString("12.50") },
	} {
		r := base
		edit(&r)
		other, err := p.Pay(t.Context(), r, (&records{}).record)
		require.NoError(t, err)
		if name == "same sum" {
			assert.Equal(t, res.Hash, other.Hash, "12.50 is 12.5")
			continue
		}
		assert.NotEqual(t, res.Hash, other.Hash, name)
	}
}

func TestSandboxPayerFailures(t *testing.T) {
	cases := []struct {
		memo    string
		code    string
		reason  string
		wantErr error
	}{
		{memo: PayoutMemoNoTrust, code: "op_no_trust", reason: "does not trust USDC: add a USDC trustline"},
		{memo: PayoutMemoNoAccount, code: "op_no_destination", reason: "does not exist"},
		{memo: PayoutMemoUnderfunded, wantErr: models.ErrPayoutUnderfunded},
	}
	for _, tc := range cases {
		t.Run(tc.memo, func(t *testing.T) {
			p := NewPayer()
			rec := &records{}
			req := sandboxRefund(tc.memo)
			for attempt := range 2 {
				res, err := p.Pay(t.Context(), req, rec.record)
				require.Len(t, rec.hashes, 1, "recorded once, before the first submission")
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
					assert.Equal(t, models.PayoutRefused, res.Outcome)
					assert.Equal(t, tc.code, res.Code)
					assert.Equal(t, rec.hashes[0], res.Hash)
					assert.Contains(t, res.Reason, tc.reason)
				}
				if attempt == 0 {
					req.Prior = models.PayoutPrior{Hash: rec.hashes[0]}
				}
			}
		})
	}
}

func TestSandboxPayerTimeout(t *testing.T) {
	p := NewPayer()
	rec := &records{}
	req := sandboxRefund(PayoutMemoTimeout)

	_, err := p.Pay(t.Context(), req, rec.record)
	require.ErrorIs(t, err, models.ErrPayoutOutcomeUnknown)
	assert.Equal(t, models.CodeInternal, models.CodeOf(err), "a plain, retryable error")
	require.Len(t, rec.hashes, 1, "recorded before the lost answer")

	req.Prior = models.PayoutPrior{Hash: rec.hashes[0]}
	res, err := p.Pay(t.Context(), req, rec.record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutResult{Outcome: models.PayoutSent, Hash: rec.hashes[0]}, res, "the same transaction")
	assert.Len(t, rec.hashes, 1)
}

func TestSandboxPayerRecordFailsNothingSent(t *testing.T) {
	dbDown := errors.New("database is down")
	for _, memo := range []string{"", PayoutMemoNoTrust, PayoutMemoTimeout} {
		res, err := NewPayer().Pay(t.Context(), sandboxRefund(memo),
			func(context.Context, string, string) error { return dbDown })
		require.ErrorIs(t, err, dbDown, "memo %q", memo)
		assert.Zero(t, res)
	}
}

func TestSandboxPayerRefusesWhatTheLivePayerRefuses(t *testing.T) {
	p := NewPayer()
	req := sandboxRefund("")
	req.Amount = decimal.RequireFromString("0.00000001")
	called := false
	_, err := p.Pay(t.Context(), req, func(context.Context, string, string) error { called = true; return nil })
	assert.Equal(t, models.CodeInvalidRequest, models.CodeOf(err))
	assert.False(t, called)

	assert.NoError(t, p.CheckDestination(t.Context(), models.RefundDestination{Address: payoutDest}, payout.AssetUSDC))
	assert.NoError(t, p.CheckDestination(t.Context(), models.RefundDestination{Address: payoutMuxed}, payout.AssetXLM))
	err = p.CheckDestination(t.Context(), models.RefundDestination{Address: "GABC"}, payout.AssetXLM)
	assert.Equal(t, models.CodeInvalidRefundDestination, models.CodeOf(err))
	err = p.CheckDestination(t.Context(), models.RefundDestination{Address: payoutDest}, "BTC")
	assert.Equal(t, models.CodeInvalidRequest, models.CodeOf(err))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, p.CheckDestination(ctx, models.RefundDestination{Address: payoutDest}, payout.AssetXLM), context.Canceled)
	_, err = p.Pay(ctx, sandboxRefund(""), func(context.Context, string, string) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)
}

// A test helper's refusal takes the memo's place, for every refusal the
// helper offers; without one, the same destination is paid.
func TestSandboxPayerTestRefusal(t *testing.T) {
	want := map[string]string{PayoutMemoNoTrust: "op_no_trust", PayoutMemoNoAccount: "op_no_destination"}
	for _, reason := range models.TestPayoutRefusals() {
		req := sandboxRefund("")
		req.TestRefusal = reason
		res, err := NewPayer().Pay(t.Context(), req, (&records{}).record)
		require.NoError(t, err)
		assert.Equal(t, models.PayoutRefused, res.Outcome, reason)
		assert.Equal(t, want[reason], res.Code, "%s is a refusal the sandbox gives", reason)
	}
	res, err := NewPayer().Pay(t.Context(), sandboxRefund(""), (&records{}).record)
	require.NoError(t, err)
	assert.Equal(t, models.PayoutSent, res.Outcome)
}
