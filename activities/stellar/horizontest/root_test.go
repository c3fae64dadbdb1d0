package horizontest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/network"
	hprotocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/horizon/operations"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

func TestRoot(t *testing.T) {
	s := newLedger(t, horizontest.Account{ID: payout.Address(), XLM: "10"})
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	s.SetClock(func() time.Time { return at })

	code, raw := getJSON(t, s.URL+"/")
	require.Equal(t, http.StatusOK, code)
	var root hprotocol.Root
	require.NoError(t, json.Unmarshal(raw, &root), "the SDK's own type reads it")
	assert.Equal(t, network.TestNetworkPassphrase, root.NetworkPassphrase)
	assert.Equal(t, at, root.HorizonLatestClosedAt, "a ledger closes every few seconds: the latest closed now")
	assert.Positive(t, root.HorizonSequence)
	assert.Equal(t, root.HorizonSequence, root.CoreSequence)

	// Each change closes a ledger.
	require.NoError(t, s.StealSequence(payout.Address()))
	_, raw = getJSON(t, s.URL+"/")
	var after hprotocol.Root
	require.NoError(t, json.Unmarshal(raw, &after))
	assert.Equal(t, root.HorizonSequence+1, after.HorizonSequence)

	s.LagHistory(90 * time.Second)
	_, raw = getJSON(t, s.URL+"/")
	require.NoError(t, json.Unmarshal(raw, &root))
	assert.Equal(t, at.Add(-90*time.Second), root.HorizonLatestClosedAt, "ingestion trails the network")

	s.SetNetworkPassphrase(network.PublicNetworkPassphrase)
	_, raw = getJSON(t, s.URL+"/")
	require.NoError(t, json.Unmarshal(raw, &root))
	assert.Equal(t, network.PublicNetworkPassphrase, root.NetworkPassphrase)
}

func TestLedgerPaymentsAndMuxedDestinations(t *testing.T) {
	stranger := key("stranger")
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "10", USDC: "100", Sequence: 7},
		horizontest.Account{ID: customer.Address(), XLM: "5", Sequence: 20},
	)
	muxedCustomer := horizontest.MuxedAccountID(customer.Address(), 1234567890123456789)
	muxedPayout := horizontest.MuxedAccountID(payout.Address(), 42)

	// To a muxed account, which is credited to its G account.
	b64, okHash := build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(muxedCustomer, txnbuild.NativeAsset{}, "1.5")},
		memo: txnbuild.MemoText("rfd_4")})
	status, body := submit(t, s, b64)
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	assert.Equal(t, "6.5000000", accountOf(t, s, customer.Address()).XLM)

	// Rejected: not in the ledger, not listed.
	b64, _ = build(t, txSpec{seq: 7, ops: []txnbuild.Operation{pay(customer.Address(), txnbuild.NativeAsset{}, "1")}})
	status, _ = submit(t, s, b64)
	require.Equal(t, http.StatusBadRequest, status)

	// Failed in the ledger: listed as unsuccessful.
	b64, failedHash := build(t, txSpec{seq: 8, ops: []txnbuild.Operation{pay(stranger.Address(), usdc(), "1")}})
	status, _ = submit(t, s, b64)
	require.Equal(t, http.StatusBadRequest, status)

	// To the watched account, through a muxed address.
	b64, inHash := build(t, txSpec{from: customer, seq: 20, ops: []txnbuild.Operation{pay(muxedPayout, txnbuild.NativeAsset{}, "2")}})
	status, body = submit(t, s, b64)
	require.Equal(t, http.StatusOK, status, "body: %v", body)

	got := s.LedgerPayments()
	require.Len(t, got, 3)
	assert.Equal(t, []string{okHash, failedHash, inHash}, []string{got[0].TxHash, got[1].TxHash, got[2].TxHash})
	assert.Equal(t, []bool{true, false, true}, []bool{*got[0].Successful, *got[1].Successful, *got[2].Successful})
	assert.Equal(t, payout.Address(), got[0].From)
	assert.Equal(t, customer.Address(), got[0].To)
	assert.Equal(t, muxedCustomer, got[0].ToMuxed)
	assert.Equal(t, "1234567890123456789", got[0].ToMuxedID)
	assert.Equal(t, "1.5000000", got[0].Amount)
	assert.Equal(t, "native", got[0].AssetType)
	assert.Equal(t, []string{"text", "rfd_4"}, []string{got[0].MemoType, got[0].Memo})
	assert.Equal(t, stranger.Address(), got[1].To)
	assert.Empty(t, got[1].ToMuxed, "a plain account has no muxed fields")
	assert.Equal(t, "USDC", got[1].AssetCode)

	// The watched account's history shows the muxed destination as
	// Horizon does: to is the G account, to_muxed_id a string.
	recs := payments(t, s)
	require.Len(t, recs, 3, "the failed one and both successful ones touch the payout account")
	last := recs[2]
	assert.Equal(t, payout.Address(), last["to"])
	assert.Equal(t, muxedPayout, last["to_muxed"])
	assert.Equal(t, "42", last["to_muxed_id"])
	raw, err := json.Marshal(last)
	require.NoError(t, err)
	var op operations.Payment
	require.NoError(t, json.Unmarshal(raw, &op), "the SDK's own type reads it")
	assert.Equal(t, uint64(42), op.ToMuxedID)
	_, hasMuxed := recs[1]["to_muxed"]
	assert.False(t, hasMuxed, "absent for a plain G destination")
}
