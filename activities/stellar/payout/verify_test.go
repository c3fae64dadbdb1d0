package payout_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
)

// payByHand has from sign and submit a transaction of ops with memo, as
// an operator paying a refund from another wallet does, and returns its
// hash: in the ledger, successful or failed.
func payByHand(t *testing.T, h *harness, from *keypair.Full, memo txnbuild.Memo, ops ...txnbuild.Operation) string {
	t.Helper()
	acc, ok := h.s.Account(from.Address())
	require.True(t, ok)
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: from.Address(), Sequence: acc.Sequence},
		IncrementSequenceNum: true,
		Operations:           ops,
		BaseFee:              txnbuild.MinBaseFee,
		Memo:                 memo,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, h.clock.Now().Add(time.Minute).Unix())},
	})
	require.NoError(t, err)
	tx, err = tx.Sign(network.TestNetworkPassphrase, from)
	require.NoError(t, err)
	env, err := tx.Base64()
	require.NoError(t, err)
	status, body := submitByHand(t, h.s, env)
	var res struct {
		Hash   string `json:"hash"`
		Extras struct {
			ResultCodes struct {
				Transaction string `json:"transaction"`
			} `json:"result_codes"`
		} `json:"extras"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	hash, err := tx.HashHex(network.TestNetworkPassphrase)
	require.NoError(t, err)
	require.True(t, status == http.StatusOK || res.Extras.ResultCodes.Transaction == "tx_failed", "in the ledger: %d %s", status, body)
	return hash
}

func usdc(to, amount string) *txnbuild.Payment {
	return &txnbuild.Payment{Destination: to, Amount: amount, Asset: txnbuild.CreditAsset{Code: "USDC", Issuer: issuerKey.Address()}}
}

// TestVerifyPayment: an operator's transaction is taken as a refund's
// payout only if Horizon shows it in the ledger, successful, paying the
// refund's destination (a muxed one's id too) exactly its amount in its
// asset, with its memo; anything else is refused with what does not
// match, and a Horizon that cannot answer is an error to retry.
func TestVerifyPayment(t *testing.T) {
	wallet := key("operator wallet")
	dest := key("destination").Address()
	other := key("other").Address()
	plain := key("no trustline").Address()
	receiving := key("receiving").Address()
	h := newHarness(t, nil,
		horizontest.Account{ID: wallet.Address(), XLM: "1000", USDC: "1000"},
		horizontest.Account{ID: dest, XLM: "5", TrustUSDC: true},
		horizontest.Account{ID: other, XLM: "5", TrustUSDC: true},
		horizontest.Account{ID: plain, XLM: "5"},
		horizontest.Account{ID: receiving, XLM: "5", TrustUSDC: true},
	)
	hashMemo := strings.Repeat("ab", 32)
	var hashBytes [32]byte
	raw, err := hex.DecodeString(hashMemo)
	require.NoError(t, err)
	copy(hashBytes[:], raw)

	paid := payByHand(t, h, wallet, txnbuild.MemoText("deposit 42"), usdc(dest, "12.5"))
	paidXLM := payByHand(t, h, wallet, nil, &txnbuild.Payment{Destination: dest, Amount: "3", Asset: txnbuild.NativeAsset{}})
	paidMuxed := payByHand(t, h, wallet, nil, usdc(horizontest.MuxedAccountID(dest, 7), "12.5"))
	paidOther := payByHand(t, h, wallet, txnbuild.MemoText("deposit 42"), usdc(other, "12.5"))
	paidTwo := payByHand(t, h, wallet, txnbuild.MemoID(99), usdc(other, "1"), usdc(dest, "12.5"))
	paidHash := payByHand(t, h, wallet, txnbuild.MemoHash(hashBytes), usdc(dest, "12.5"))
	failed := payByHand(t, h, wallet, nil, usdc(plain, "12.5"))
	toReceiving := payByHand(t, h, wallet, nil, usdc(receiving, "12.5"))
	// A path payment (the network's simulation takes payments only, so it
	// is described): the destination gets amount, in the asset it
	// receives, whatever the sender spent.
	path := strings.Repeat("5e", 32)
	h.s.AddPayment(horizontest.Payment{Type: "path_payment_strict_send", From: wallet.Address(), To: dest,
		AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: issuerKey.Address(), Amount: "12.5000000",
		SourceAmount: "80.0000000", TxHash: path})
	// A fake USDC of another issuer.
	fake := strings.Repeat("fa", 32)
	h.s.AddPayment(horizontest.Payment{From: wallet.Address(), To: dest,
		AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: other, Amount: "12.5000000", TxHash: fake})

	usdcTo := func(d models.RefundDestination) models.RefundPayment {
		return models.RefundPayment{To: d, Asset: "USDC", Amount: decimal.RequireFromString("12.5"), NotTo: []string{receiving, payoutKey.Address()}}
	}
	text := models.RefundDestination{Address: dest, MemoType: "text", Memo: "deposit 42"}
	cases := []struct {
		name   string
		hash   string
		want   models.RefundPayment
		refuse string // "" accepted
	}{
		{"the refund's payment", paid, usdcTo(text), ""},
		{"hash in upper case", strings.ToUpper(paid), usdcTo(text), ""},
		{"XLM", paidXLM, models.RefundPayment{To: models.RefundDestination{Address: dest}, Asset: "XLM", Amount: decimal.RequireFromString("3")}, ""},
		{"to the muxed destination", paidMuxed, usdcTo(models.RefundDestination{Address: horizontest.MuxedAccountID(dest, 7)}), ""},
		{"a muxed form of a plain destination", paidMuxed, usdcTo(models.RefundDestination{Address: dest}), ""},
		{"one payment of two", paidTwo, usdcTo(models.RefundDestination{Address: dest, MemoType: "id", Memo: "99"}), ""},
		{"hash memo", paidHash, usdcTo(models.RefundDestination{Address: dest, MemoType: "hash", Memo: hashMemo}), ""},
		{"path payment", path, usdcTo(models.RefundDestination{Address: dest}), ""},
		{"no destination yet", paidOther, usdcTo(models.RefundDestination{}), ""},

		{"another destination", paidOther, usdcTo(text), "does not pay the refund"},
		{"another muxed id", paidMuxed, usdcTo(models.RefundDestination{Address: horizontest.MuxedAccountID(dest, 8)}), "does not pay the refund"},
		{"another amount", paid, models.RefundPayment{To: text, Asset: "USDC", Amount: decimal.RequireFromString("12.4")}, "does not pay the refund"},
		{"another asset", paid, models.RefundPayment{To: text, Asset: "XLM", Amount: decimal.RequireFromString("12.5")}, "does not pay the refund"},
		{"another issuer's USDC", fake, usdcTo(models.RefundDestination{Address: dest}), "does not pay the refund"},
		{"another memo", paid, usdcTo(models.RefundDestination{Address: dest, MemoType: "text", Memo: "deposit 43"}), "carries memo"},
		{"no memo", paidXLM, models.RefundPayment{To: models.RefundDestination{Address: dest, MemoType: "id", Memo: "1"}, Asset: "XLM", Amount: decimal.RequireFromString("3")}, "carries memo"},
		{"another hash memo", paidHash, usdcTo(models.RefundDestination{Address: dest, MemoType: "hash", Memo: strings.Repeat("cd", 32)}), "carries memo"},
		{"failed", failed, usdcTo(models.RefundDestination{Address: plain}), "failed on the network"},
		{"to the service's own account", toReceiving, usdcTo(models.RefundDestination{}), "does not pay the refund"},
		{"unknown", strings.Repeat("0f", 32), usdcTo(text), "is not on the Stellar network"},
		{"not a hash", "abc", usdcTo(text), "64 hexadecimal digits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := h.p.VerifyPayment(t.Context(), tc.hash, tc.want)
			if tc.refuse == "" {
				require.NoError(t, err)
				return
			}
			var me *models.Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, models.CodeInvalidRequest, me.Code)
			assert.Equal(t, "transaction_hash", me.Field)
			assert.Contains(t, me.Message, tc.refuse)
		})
	}

	t.Run("horizon unavailable", func(t *testing.T) {
		h.s.FailNext(http.StatusServiceUnavailable, 1)
		err := h.p.VerifyPayment(t.Context(), paid, usdcTo(text))
		var he *payout.HorizonError
		require.ErrorAs(t, err, &he, "an error to retry")
		var me *models.Error
		assert.False(t, errors.As(err, &me), "not a refusal")
	})
}
