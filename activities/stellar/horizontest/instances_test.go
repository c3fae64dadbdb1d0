package horizontest_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

// TestInstances: behind SetInstances, GETs are answered in turn by
// instances that trail the network, each consistently as of its own
// latest ledger.
func TestInstances(t *testing.T) {
	s := newLedger(t,
		horizontest.Account{ID: payout.Address(), XLM: "100", Sequence: 700},
		horizontest.Account{ID: customer.Address(), XLM: "5"})
	clock := time.Now().UTC().Truncate(time.Second)
	s.SetClock(func() time.Time { return clock })
	env, hash := build(t, txSpec{seq: 700, ops: []txnbuild.Operation{pay(customer.Address(), txnbuild.NativeAsset{}, "1")}})
	status, _ := submit(t, s, env)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, s.StealSequence(payout.Address()))

	type account struct {
		Sequence string `json:"sequence"`
	}
	readAccount := func() (string, int64) {
		resp := get(t, s.URL+"/accounts/"+payout.Address(), nil)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var a account
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		latest, err := strconv.ParseInt(resp.Header.Get("Latest-Ledger"), 10, 64)
		require.NoError(t, err)
		return a.Sequence, latest
	}
	type page struct {
		Embedded struct {
			Records []struct {
				Hash     string `json:"hash"`
				Sequence string `json:"source_account_sequence"`
			} `json:"records"`
		} `json:"_embedded"`
	}
	listing := func() []string {
		_, body := getJSON(t, s.URL+"/accounts/"+payout.Address()+"/transactions?order=desc&include_failed=true")
		var p page
		require.NoError(t, json.Unmarshal(body, &p))
		var seqs []string
		for _, r := range p.Embedded.Records {
			seqs = append(seqs, r.Sequence)
		}
		return seqs
	}

	seq, tip := readAccount()
	assert.Equal(t, "702", seq, "the payment and the stolen number")
	assert.Equal(t, []string{"702", "701"}, listing(), "the stolen number is a transaction too")
	status, _ = getJSON(t, s.URL+"/transactions/"+hash)
	assert.Equal(t, http.StatusOK, status)

	// Instance 0 is caught up, instance 1 two ledgers behind: before the
	// payment's ledger, after the account was funded.
	s.SetInstances(0, 2)
	seq0, latest0 := readAccount()
	seq1, latest1 := readAccount()
	assert.Equal(t, "702", seq0)
	assert.Equal(t, tip, latest0)
	assert.Equal(t, "700", seq1, "the sequence number as of its ledger")
	assert.Equal(t, tip-2, latest1)
	assert.Equal(t, []string{"702", "701"}, listing())
	assert.Empty(t, listing())
	status, _ = getJSON(t, s.URL+"/transactions/"+hash)
	assert.Equal(t, http.StatusOK, status)
	status, _ = getJSON(t, s.URL+"/transactions/"+hash)
	assert.Equal(t, http.StatusNotFound, status, "not ingested by the lagging instance")
	status, _ = getJSON(t, s.URL+"/ledgers/"+strconv.FormatInt(tip, 10))
	assert.Equal(t, http.StatusOK, status)
	status, _ = getJSON(t, s.URL+"/ledgers/"+strconv.FormatInt(tip, 10))
	assert.Equal(t, http.StatusNotFound, status)

	// The network closes a ledger every five seconds, whatever happens.
	s.SetInstances()
	clock = clock.Add(6 * time.Second)
	_, latest := readAccount()
	assert.Equal(t, tip+1, latest)
	_, body := getJSON(t, s.URL+"/ledgers/"+strconv.FormatInt(latest, 10))
	var l struct {
		Sequence int64     `json:"sequence"`
		ClosedAt time.Time `json:"closed_at"`
	}
	require.NoError(t, json.Unmarshal(body, &l))
	assert.Equal(t, latest, l.Sequence)
	assert.Equal(t, clock, l.ClosedAt.UTC())
}
