package horizontest_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

func getCollection(t *testing.T, url string) (int, pageBody) {
	t.Helper()
	resp := get(t, url, nil)
	var body pageBody
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	}
	return resp.StatusCode, body
}

// TestMergeEffects: an account_merge's record has no amount, as in
// Horizon; its effects debit the merged account, credit the destination
// and remove the merged account. Other operations have no effects here,
// and an unknown operation is 404.
func TestMergeEffects(t *testing.T) {
	s := newServer(t)
	merge := s.AddPayment(horizontest.Payment{Type: "account_merge", From: sender, To: account, Amount: "12.5000000"})
	pay := s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1"})

	page := getPage(t, s, "order=asc")
	require.Len(t, page.Embedded.Records, 2)
	rec := page.Embedded.Records[0]
	assert.Equal(t, "account_merge", rec["type"])
	assert.Equal(t, sender, rec["account"])
	assert.Equal(t, account, rec["into"])
	assert.NotContains(t, rec, "amount")

	status, effects := getCollection(t, s.URL+"/operations/"+merge+"/effects")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, effects.Embedded.Records, 3)
	for i, want := range []struct{ typ, account, amount string }{
		{"account_debited", sender, "12.5000000"}, {"account_credited", account, "12.5000000"}, {"account_removed", sender, ""},
	} {
		e := effects.Embedded.Records[i]
		assert.Equal(t, want.typ, e["type"])
		assert.Equal(t, want.account, e["account"])
		if want.amount != "" {
			assert.Equal(t, want.amount, e["amount"])
			assert.Equal(t, "native", e["asset_type"])
		} else {
			assert.NotContains(t, e, "amount")
		}
		assert.Equal(t, merge+"-"+string(rune('1'+i)), e["paging_token"])
	}
	status, effects = getCollection(t, s.URL+"/operations/"+pay+"/effects")
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, effects.Embedded.Records)
	status, _ = getCollection(t, s.URL+"/operations/1/effects")
	assert.Equal(t, http.StatusNotFound, status)
}

// TestFromMuxed: a payment from a muxed account carries from_muxed and
// from_muxed_id; one from a plain account neither.
func TestFromMuxed(t *testing.T) {
	s := newServer(t)
	const muxed = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK"
	s.AddPayment(horizontest.Payment{From: sender, FromMuxed: muxed, FromMuxedID: "9223372036854775808", To: account, Amount: "1"})
	s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "1"})
	recs := getPage(t, s, "order=asc").Embedded.Records
	require.Len(t, recs, 2)
	assert.Equal(t, muxed, recs[0]["from_muxed"])
	assert.Equal(t, "9223372036854775808", recs[0]["from_muxed_id"], "a JSON string")
	assert.NotContains(t, recs[1], "from_muxed")
	assert.NotContains(t, recs[1], "from_muxed_id")
}

// TestAccountData: an account's data entries are served base64-encoded.
func TestAccountData(t *testing.T) {
	s := newServer(t)
	require.NoError(t, s.SetAccount(horizontest.Account{ID: sender, XLM: "5", Data: map[string]string{"config.memo_required": "1"}}))
	resp := get(t, s.URL+"/accounts/"+sender, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var acc struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&acc))
	assert.Equal(t, map[string]string{"config.memo_required": "MQ=="}, acc.Data)
	require.NoError(t, s.SetAccount(horizontest.Account{ID: sender, XLM: "6"}))
	got, _ := s.Account(sender)
	assert.Equal(t, map[string]string{"config.memo_required": "1"}, got.Data, "nil Data keeps the entries")
}

// TestClaimableBalances: the balances a claimant may claim, oldest first,
// within the limit; a claimed one is gone.
func TestClaimableBalances(t *testing.T) {
	s := newServer(t)
	first := s.AddClaimableBalance(horizontest.ClaimableBalance{Amount: "5.0000000", Sponsor: sender})
	s.AddClaimableBalance(horizontest.ClaimableBalance{Amount: "1.0000000", Sponsor: sender, Claimants: []string{sender}})
	second := s.AddClaimableBalance(horizontest.ClaimableBalance{Asset: "USDC:" + issuer, Amount: "2.0000000", Sponsor: sender, Claimants: []string{sender, account}})

	status, page := getCollection(t, s.URL+"/claimable_balances?claimant="+account)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, page.Embedded.Records, 2)
	b := page.Embedded.Records[0]
	assert.Equal(t, first, b["id"])
	assert.Len(t, first, 72)
	assert.Equal(t, "native", b["asset"])
	assert.Equal(t, "5.0000000", b["amount"])
	assert.Equal(t, sender, b["sponsor"])
	assert.Equal(t, second, page.Embedded.Records[1]["id"])
	assert.Equal(t, "USDC:"+issuer, page.Embedded.Records[1]["asset"])

	_, page = getCollection(t, s.URL+"/claimable_balances?limit=1&claimant="+account)
	assert.Len(t, page.Embedded.Records, 1)
	status, _ = getCollection(t, s.URL+"/claimable_balances?limit=201&claimant="+account)
	assert.Equal(t, http.StatusBadRequest, status)

	s.ClaimBalance(first)
	_, page = getCollection(t, s.URL+"/claimable_balances?claimant="+account)
	require.Len(t, page.Embedded.Records, 1)
	assert.Equal(t, second, page.Embedded.Records[0]["id"])
}
