package horizontest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	hprotocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

func TestGetAccount(t *testing.T) {
	s := newLedger(t, horizontest.Account{ID: payout.Address(), XLM: "10.5", USDC: "0.0000001", Sequence: 1234567890123})

	code, raw := getJSON(t, s.URL+"/accounts/"+payout.Address())
	require.Equal(t, http.StatusOK, code)
	var acc hprotocol.Account
	require.NoError(t, json.Unmarshal(raw, &acc))
	assert.Equal(t, payout.Address(), acc.AccountID)
	assert.Equal(t, payout.Address(), acc.ID)
	assert.Equal(t, int64(1234567890123), acc.Sequence)
	assert.Equal(t, int32(1), acc.SubentryCount, "the trustline")
	require.Len(t, acc.Balances, 2)
	assert.Equal(t, "credit_alphanum4", acc.Balances[0].Type, "trustlines first, as Horizon lists them")
	assert.Equal(t, "USDC", acc.Balances[0].Code)
	assert.Equal(t, usdcKey.Address(), acc.Balances[0].Issuer)
	assert.Equal(t, "0.0000001", acc.Balances[0].Balance)
	assert.Equal(t, "922337203685.4775807", acc.Balances[0].Limit)
	assert.Equal(t, "native", acc.Balances[1].Type)
	assert.Equal(t, "10.5000000", acc.Balances[1].Balance)
	require.Len(t, acc.Signers, 1)
	assert.Equal(t, payout.Address(), acc.Signers[0].Key)
	assert.Contains(t, string(raw), `"sequence":"1234567890123"`, "sequence numbers are strings")

	// Removing the trustline removes the balance entry.
	require.NoError(t, s.SetAccount(horizontest.Account{ID: payout.Address(), XLM: "10.5"}))
	_, raw = getJSON(t, s.URL+"/accounts/"+payout.Address())
	require.NoError(t, json.Unmarshal(raw, &acc))
	require.Len(t, acc.Balances, 1)
	assert.Equal(t, "native", acc.Balances[0].Type)
	assert.Equal(t, int64(1234567890123), acc.Sequence, "kept when not given")

	code, raw = getJSON(t, s.URL+"/accounts/"+customer.Address())
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, string(raw), `"type":"https://stellar.org/horizon-errors/not_found"`)

	code, raw = getJSON(t, s.URL+"/accounts/GNOTANACCOUNT")
	assert.Equal(t, http.StatusBadRequest, code, "a malformed id is a bad request, as in Horizon")
	assert.Contains(t, string(raw), `"invalid_field":"account_id"`)

	code, _ = getJSON(t, s.URL+"/transactions/"+strings.Repeat("a", 64))
	assert.Equal(t, http.StatusNotFound, code)
}

func TestSetAccountErrors(t *testing.T) {
	s := horizontest.New(payout.Address())
	t.Cleanup(s.Close)
	assert.Error(t, s.SetAccount(horizontest.Account{ID: customer.Address(), TrustUSDC: true}), "no USDC issuer set")
	assert.Error(t, s.SetAccount(horizontest.Account{ID: "GABC", XLM: "1"}))
	assert.Error(t, s.SetAccount(horizontest.Account{ID: customer.Address(), XLM: "1.00000001"}), "beyond 7 decimals")
	assert.Error(t, s.SetAccount(horizontest.Account{ID: customer.Address(), XLM: "-1"}))
	_, ok := s.Account(customer.Address())
	assert.False(t, ok, "no failed call created the account")
	assert.Error(t, s.StealSequence(customer.Address()))
}

func TestControlAccounts(t *testing.T) {
	s := newLedger(t)
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(s.URL+horizontest.ControlAccountsPath, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		return resp.StatusCode, decode(t, resp)
	}

	status, body := post(`{"id":"` + customer.Address() + `","xlm":"25","usdc":"7.5","sequence":"99"}`)
	require.Equal(t, http.StatusOK, status, "body: %v", body)
	assert.Equal(t, customer.Address(), body["account_id"])
	assert.Equal(t, "99", body["sequence"])
	assert.Equal(t, horizontest.Account{ID: customer.Address(), XLM: "25.0000000", USDC: "7.5000000", TrustUSDC: true, Sequence: 99},
		accountOf(t, s, customer.Address()))

	status, _ = post(`{"id":"` + customer.Address() + `","xlm":"1e3"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = post(`{"id":"` + customer.Address() + `","xlm":25}`)
	assert.Equal(t, http.StatusBadRequest, status, "amounts are strings, never floats")
	status, _ = post(`{"account":"` + customer.Address() + `"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "25.0000000", accountOf(t, s, customer.Address()).XLM, "refused requests change nothing")
}

func TestSubmitMalformed(t *testing.T) {
	s := newLedger(t)
	status, body := submit(t, s, "bm90IGFuIGVudmVsb3Bl")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "https://stellar.org/horizon-errors/transaction_malformed", body["type"])
	assert.Equal(t, "bm90IGFuIGVudmVsb3Bl", body["extras"].(map[string]any)["envelope_xdr"])

	resp, err := http.Post(s.URL+"/transactions", "application/json", strings.NewReader(`{"tx":"x"}`))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "Horizon takes a form")
}
