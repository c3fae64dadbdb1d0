package stellar

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/models"
)

// TestChainReader: the reader pages through each account's whole
// payments history (200 per page, each page after the last record read)
// and keeps what reconciling compares: the payments crediting the
// receiving account as the watcher stores them (path payments, merges
// with their XLM; not failed, outgoing or its own), and the payments
// leaving the payout account.
func TestChainReader(t *testing.T) {
	payoutAccount := horizontest.AccountID("payout")
	dest := horizontest.AccountID("refund destination")
	srv := newHorizon(t)
	srv.SetUSDCIssuer(usdcIssuer)

	var want []string
	for i := range 401 {
		want = append(want, srv.AddPayment(incoming(fmt.Sprintf("%d.5", i+1))))
	}
	no := false
	srv.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "9", Successful: &no})
	srv.AddPayment(horizontest.Payment{From: account, To: sender, Amount: "8"})
	srv.AddPayment(horizontest.Payment{From: account, To: account, Amount: "7"})
	path := srv.AddPayment(horizontest.Payment{Type: "path_payment_strict_receive", From: sender, To: account,
		AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "6.25", SourceAmount: "70"})
	merge := srv.AddPayment(horizontest.Payment{Type: "account_merge", From: horizontest.AccountID("merged"), To: account, Amount: "2.5"})
	refundTx := strings.Repeat("ab", 32)
	refund := srv.AddPayment(horizontest.Payment{From: payoutAccount, To: dest, Amount: "3", TxHash: refundTx, ToMuxed: "", AssetType: "credit_alphanum4",
		AssetCode: "USDC", AssetIssuer: usdcIssuer})
	srv.AddPayment(horizontest.Payment{From: sender, To: payoutAccount, Amount: "100"}) // topping it up: not money out
	created := srv.AddPayment(horizontest.Payment{Type: "create_account", From: payoutAccount, To: horizontest.AccountID("new"), Amount: "1.5"})

	r, err := NewChainReader(ChainConfig{HorizonURL: srv.URL, Network: "testnet", USDCIssuer: usdcIssuer}, nil)
	require.NoError(t, err)
	c, err := r.Chain(t.Context(), account, payoutAccount)
	require.NoError(t, err)

	var got []string
	for _, p := range c.Received {
		got = append(got, p.ID)
	}
	assert.Equal(t, append(paymentIDs(want), paymentID(path), paymentID(merge)), got)
	require.Len(t, c.Received, 403)
	assert.Equal(t, models.ChainPayment{ID: paymentID(want[400]), TxHash: c.Received[400].TxHash, From: sender, To: account,
		Asset: "XLM", Amount: decimal.RequireFromString("401.5")}, c.Received[400])
	assert.Equal(t, "USDC", c.Received[401].Asset)
	assert.Equal(t, "6.25", c.Received[401].Amount.String(), "a path payment credits its amount")
	assert.Equal(t, "2.5", c.Received[402].Amount.String(), "a merge credits the XLM of its effect")
	require.Len(t, c.Paid, 2)
	assert.Equal(t, models.ChainPayment{ID: paymentID(refund), TxHash: refundTx, From: payoutAccount, To: dest,
		Asset: "USDC", Amount: decimal.RequireFromString("3")}, c.Paid[0])
	assert.Equal(t, paymentID(created), c.Paid[1].ID)
	assert.Equal(t, "XLM 1.5", c.Paid[1].Asset+" "+c.Paid[1].Amount.String(), "a new account's starting balance left it too")

	var pages []string
	for _, req := range srv.Requests() {
		if strings.HasPrefix(req, "/accounts/"+account+"/payments") {
			pages = append(pages, req)
		}
	}
	require.Len(t, pages, 3, "409 records: 200, 200, 9")
	assert.NotContains(t, pages[0], "cursor=")
	assert.Contains(t, pages[1], "cursor="+want[199])
	assert.Contains(t, pages[2], "cursor="+want[399])
	for _, p := range pages {
		assert.Contains(t, p, "limit=200")
		assert.Contains(t, p, "order=asc")
		assert.Contains(t, p, "join=transactions")
	}

	t.Run("no payout account", func(t *testing.T) {
		c, err := r.Chain(t.Context(), account, "")
		require.NoError(t, err)
		assert.Len(t, c.Received, 403)
		assert.Empty(t, c.Paid)
	})

	t.Run("a history longer than the bound is an error, not part of one", func(t *testing.T) {
		short, err := NewChainReader(ChainConfig{HorizonURL: srv.URL, Network: "testnet", USDCIssuer: usdcIssuer, MaxPayments: 400}, nil)
		require.NoError(t, err)
		_, err = short.Chain(t.Context(), account, "")
		require.ErrorContains(t, err, "more than 400")
	})

	t.Run("horizon failing is an error", func(t *testing.T) {
		srv.FailNext(http.StatusServiceUnavailable, 1)
		_, err := r.Chain(t.Context(), account, payoutAccount)
		var he *httpError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusServiceUnavailable, he.Status)
	})
}

// TestChainReaderFeeBump: a payout applied in a fee bump is read with its
// inner transaction's hash, the one the refund recorded.
func TestChainReaderFeeBump(t *testing.T) {
	payoutKey, err := keypair.FromRawSeed(sha256.Sum256([]byte("chain reader payout")))
	require.NoError(t, err)
	dest := horizontest.AccountID("fee bump destination")
	srv := newHorizon(t)
	srv.SetUSDCIssuer(usdcIssuer)
	require.NoError(t, srv.SetAccount(horizontest.Account{ID: payoutKey.Address(), XLM: "100", Sequence: 10}))
	require.NoError(t, srv.SetAccount(horizontest.Account{ID: dest, XLM: "5"}))

	inner, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: payoutKey.Address(), Sequence: 10},
		IncrementSequenceNum: true,
		Operations:           []txnbuild.Operation{&txnbuild.Payment{Destination: dest, Amount: "3", Asset: txnbuild.NativeAsset{}}},
		BaseFee:              txnbuild.MinBaseFee,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewInfiniteTimeout()},
	})
	require.NoError(t, err)
	inner, err = inner.Sign(network.TestNetworkPassphrase, payoutKey)
	require.NoError(t, err)
	bump, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payoutKey.Address(), BaseFee: 1000})
	require.NoError(t, err)
	bump, err = bump.Sign(network.TestNetworkPassphrase, payoutKey)
	require.NoError(t, err)
	env, err := bump.Base64()
	require.NoError(t, err)
	resp, err := http.PostForm(srv.URL+"/transactions", url.Values{"tx": {env}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	innerHash, err := inner.HashHex(network.TestNetworkPassphrase)
	require.NoError(t, err)
	outerHash, err := bump.HashHex(network.TestNetworkPassphrase)
	require.NoError(t, err)

	r, err := NewChainReader(ChainConfig{HorizonURL: srv.URL, Network: "testnet", USDCIssuer: usdcIssuer}, nil)
	require.NoError(t, err)
	c, err := r.Chain(t.Context(), account, payoutKey.Address())
	require.NoError(t, err)
	require.Len(t, c.Paid, 1)
	assert.Equal(t, outerHash, c.Paid[0].TxHash)
	assert.Equal(t, innerHash, c.Paid[0].InnerTxHash)
	assert.Equal(t, "3", c.Paid[0].Amount.String())
	assert.Equal(t, dest, c.Paid[0].To)
}
