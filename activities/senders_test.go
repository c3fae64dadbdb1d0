package activities

import (
	"context"
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
)

// destinationsPayer is a live payer that notes where each payout goes.
type destinationsPayer struct {
	*payout.Payer
	mu    sync.Mutex
	dests []string
}

func (p *destinationsPayer) Pay(ctx context.Context, req models.PayoutRequest, record func(context.Context, string, string) error) (models.PayoutResult, error) {
	p.mu.Lock()
	p.dests = append(p.dests, req.Destination.Address)
	p.mu.Unlock()
	return p.Payer.Pay(ctx, req, record)
}

// TestToSenderOfACustodian: a refund to_sender of a payment from an
// exchange's customer, who paid from a muxed account, goes to that muxed
// account (the same customer at the exchange); one of a payment from the
// exchange's pooled account itself, which requires a memo (SEP-29) that
// to_sender cannot give, fails with the reason, nothing paid, rather than
// land in the pool credited to no one. The payer is the live one, against
// horizontest.
func TestToSenderOfACustodian(t *testing.T) {
	seed := sha256.Sum256([]byte("senders test payout key"))
	payoutKey, err := keypair.FromRawSeed(seed)
	require.NoError(t, err)
	pooled := horizontest.AccountID("exchange pool")
	s := horizontest.New(payoutKey.Address())
	t.Cleanup(s.Close)
	issuer := horizontest.AccountID("usdc issuer")
	s.SetUSDCIssuer(issuer)
	require.NoError(t, s.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "1000"}))
	require.NoError(t, s.SetAccount(horizontest.Account{ID: pooled, XLM: "100", Data: map[string]string{"config.memo_required": "1"}}))
	path := filepath.Join(t.TempDir(), "payout.seed")
	require.NoError(t, os.WriteFile(path, []byte(payoutKey.Seed()+"\n"), 0o600))
	signer, err := payout.NewFileSigner(path)
	require.NoError(t, err)
	live, err := payout.NewPayer(payout.Config{HorizonURL: s.URL, HTTPClient: &http.Client{},
		NetworkPassphrase: network.TestNetworkPassphrase, USDCIssuer: issuer, Signer: signer})
	require.NoError(t, err)
	pays := &destinationsPayer{Payer: live}

	plain, err := xdr.AddressToMuxedAccount(pooled)
	require.NoError(t, err)
	m, err := xdr.NewMuxedAccount(xdr.CryptoKeyTypeKeyTypeMuxedEd25519,
		xdr.MuxedAccountMed25519{Id: 77, Ed25519: plain.MustEd25519()})
	require.NoError(t, err)
	customer := m.Address()

	store := &refundsStore{refunds: map[string]models.Refund{}, senders: map[string]string{
		"pay_customer": customer, "pay_pool": pooled,
	}}
	for id, pay := range map[string]string{"rfd_customer": "pay_customer", "rfd_pool": "pay_pool"} {
		store.refunds[id] = models.Refund{ID: id, Mode: models.ModeLive, Asset: "XLM", Amount: decimal.RequireFromString("2"),
			Status: models.RefundSending, Destination: &models.RefundDestination{ToSender: true}, PaymentIDs: []string{pay}}
	}
	a := parts{Events: &recordingDispatcher{}, Payouts: &RefundPayouts{
		Store: store, Payers: map[models.Mode]Payer{models.ModeLive: pays},
		Start: func(context.Context, models.Refund, string) error { return nil },
	}}.build()
	env := newEnv(t, a)

	send := func(id string) models.Refund {
		v, err := env.ExecuteActivity(allActs{}.SendRefund, RefundInput{RefundID: id})
		require.NoError(t, err, id)
		var r models.Refund
		require.NoError(t, v.Get(&r))
		return r
	}
	r := send("rfd_pool")
	assert.Equal(t, models.RefundFailed, r.Status)
	assert.Contains(t, r.FailureReason, "requires a memo")
	assert.Empty(t, pays.dests, "nothing paid into the pool without a memo")
	acc, _ := s.Account(pooled)
	assert.Equal(t, "100.0000000", acc.XLM)

	r = send("rfd_customer")
	assert.Equal(t, models.RefundSent, r.Status, r.FailureReason)
	assert.Equal(t, []string{customer}, pays.dests, "paid to the customer's muxed account")
	acc, _ = s.Account(pooled)
	assert.Equal(t, "102.0000000", acc.XLM)
}
