package horizontest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

// TestNetworkHistory: any other account's payments, and a transaction's,
// are served from the whole network's history in Horizon's page shape,
// paged by cursor; a transaction's payments are found only by an
// instance that has its ledger.
func TestNetworkHistory(t *testing.T) {
	s := newServer(t)
	wallet, dest := horizontest.AccountID("wallet"), horizontest.AccountID("dest")
	two := strings.Repeat("2b", 32)
	first := s.AddPayment(horizontest.Payment{From: wallet, To: dest, Amount: "1.0000000", MemoType: "id", Memo: "7"})
	s.AddPayment(horizontest.Payment{From: sender, To: account, Amount: "5.0000000"})
	second := s.AddPayment(horizontest.Payment{Type: "path_payment_strict_send", From: wallet, To: dest, Amount: "2.0000000", TxHash: two})
	third := s.AddPayment(horizontest.Payment{From: wallet, To: sender, Amount: "3.0000000", TxHash: two})

	code, page := getCollection(t, s.URL+"/accounts/"+wallet+"/payments?limit=2&join=transactions")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, page.Embedded.Records, 2)
	assert.Equal(t, first, page.Embedded.Records[0]["paging_token"])
	assert.Equal(t, second, page.Embedded.Records[1]["paging_token"])
	assert.Equal(t, "7", page.Embedded.Records[0]["transaction"].(map[string]any)["memo"], "joined with its transaction")
	code, page = getCollection(t, page.Links["next"].Href)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, page.Embedded.Records, 1)
	assert.Equal(t, third, page.Embedded.Records[0]["paging_token"])

	code, page = getCollection(t, s.URL+"/accounts/"+dest+"/payments?order=desc")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, page.Embedded.Records, 2)
	assert.Equal(t, second, page.Embedded.Records[0]["paging_token"])

	code, page = getCollection(t, s.URL+"/transactions/"+two+"/payments")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, page.Embedded.Records, 2, "both operations of the transaction")
	assert.Equal(t, "path_payment_strict_send", page.Embedded.Records[0]["type"])
	code, _ = getCollection(t, s.URL+"/transactions/"+two)
	assert.Equal(t, http.StatusOK, code, "a described transaction is served too")

	code, _ = getCollection(t, s.URL+"/transactions/"+strings.Repeat("0", 64)+"/payments")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = getCollection(t, s.URL+"/accounts/"+horizontest.AccountID("nobody")+"/payments")
	assert.Equal(t, http.StatusNotFound, code)

	s.SetInstances(10)
	code, _ = getCollection(t, s.URL+"/transactions/"+two+"/payments")
	assert.Equal(t, http.StatusNotFound, code, "an instance behind the ledger does not have it")
}
