package stellar

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/models"
)

var (
	account    = horizontest.AccountID("memocart")
	sender     = horizontest.AccountID("customer")
	usdcIssuer = horizontest.AccountID("circle")
	fakeIssuer = horizontest.AccountID("impostor")
)

func ptr[T any](v T) *T { return &v }

// incomingRecord is a valid incoming XLM payment record to vary.
func incomingRecord() record {
	return record{
		ID: "4294971393", PagingToken: "4294971393", TransactionSuccessful: ptr(true), Type: "payment",
		CreatedAt: "2025-03-04T05:06:07Z", TransactionHash: "abc", AssetType: "native",
		From: sender, To: account, Amount: "10.0000000",
		Transaction: &transaction{Hash: "abc", Successful: ptr(true), MemoType: "text", Memo: "12345678901"},
	}
}

func TestConverterPayment(t *testing.T) {
	c := converter{network: "testnet", account: account, usdcIssuer: usdcIssuer}
	base := models.Payment{
		ID: "stellar:testnet:4294971393", Mode: models.ModeLive, Asset: "XLM", Amount: decimal.RequireFromString("10"),
		Memo: "12345678901", MemoType: "text", Sender: sender, TxHash: "abc",
		ReceivedAt: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
	}
	tests := []struct {
		name   string
		change func(r *record)
		want   func(p *models.Payment) // nil: not credited
	}{
		{"incoming XLM", func(*record) {}, func(*models.Payment) {}},
		{"accepted USDC", func(r *record) { r.AssetType, r.AssetCode, r.AssetIssuer = "credit_alphanum4", "USDC", usdcIssuer },
			func(p *models.Payment) { p.Asset = "USDC" }},
		{"USDC of another issuer", func(r *record) { r.AssetType, r.AssetCode, r.AssetIssuer = "credit_alphanum4", "USDC", fakeIssuer },
			func(p *models.Payment) { p.Asset = "USDC:" + fakeIssuer }},
		{"12-character asset", func(r *record) {
			r.AssetType, r.AssetCode, r.AssetIssuer = "credit_alphanum12", "MEMOCARTCOIN", usdcIssuer
		},
			func(p *models.Payment) { p.Asset = "MEMOCARTCOIN:" + usdcIssuer }},
		{"smallest amount", func(r *record) { r.Amount = "0.0000001" },
			func(p *models.Payment) { p.Amount = decimal.New(1, -7) }},
		{"large amount", func(r *record) { r.Amount = "922337203685.4775807" },
			func(p *models.Payment) { p.Amount = decimal.RequireFromString("922337203685.4775807") }},
		{"strict receive path payment", func(r *record) { r.Type = "path_payment_strict_receive" }, func(*models.Payment) {}},
		{"strict send path payment", func(r *record) { r.Type = "path_payment_strict_send" }, func(*models.Payment) {}},
		{"id memo", func(r *record) { r.Transaction.MemoType, r.Transaction.Memo = "id", "12345678901" },
			func(p *models.Payment) { p.MemoType = "id" }},
		{"hash memo", func(r *record) { r.Transaction.MemoType, r.Transaction.Memo = "hash", "AAEC" },
			func(p *models.Payment) { p.MemoType, p.Memo = "hash", "AAEC" }},
		{"no memo", func(r *record) { r.Transaction.MemoType, r.Transaction.Memo = "none", "" },
			func(p *models.Payment) { p.MemoType, p.Memo = "none", "" }},
		{"memo type missing", func(r *record) { r.Transaction.MemoType, r.Transaction.Memo = "", "" },
			func(p *models.Payment) { p.MemoType, p.Memo = "none", "" }},
		{"success read from the transaction", func(r *record) { r.TransactionSuccessful = nil }, func(*models.Payment) {}},
		{"outgoing", func(r *record) { r.From, r.To = account, sender }, nil},
		{"self payment", func(r *record) { r.From = account }, nil},
		{"to another account", func(r *record) { r.To = sender }, nil},
		{"failed transaction", func(r *record) { r.TransactionSuccessful = ptr(false) }, nil},
		{"success unknown", func(r *record) { r.TransactionSuccessful, r.Transaction.Successful = nil, nil }, nil},
		{"create_account", func(r *record) { r.Type = "create_account" }, nil},
		{"account_merge", func(r *record) { r.Type = "account_merge" }, nil},
		{"invoke_host_function", func(r *record) { r.Type = "invoke_host_function" }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := incomingRecord()
			tc.change(&r)
			got, ok, err := c.payment(r)
			require.NoError(t, err)
			if tc.want == nil {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			want := base
			tc.want(&want)
			assert.True(t, want.Amount.Equal(got.Amount), "amount %s, want %s", got.Amount, want.Amount)
			want.Amount, got.Amount = decimal.Zero, decimal.Zero
			assert.Equal(t, want, got)
		})
	}
}

func TestConverterBadRecords(t *testing.T) {
	c := converter{network: "pubnet", account: account, usdcIssuer: usdcIssuer}
	tests := []struct {
		name   string
		change func(r *record)
	}{
		{"exponent amount", func(r *record) { r.Amount = "1e3" }},
		{"negative amount", func(r *record) { r.Amount = "-1.0000000" }},
		{"eight decimals", func(r *record) { r.Amount = "1.00000001" }},
		{"empty amount", func(r *record) { r.Amount = "" }},
		{"no joined transaction", func(r *record) { r.Transaction = nil }},
		{"unknown asset type", func(r *record) { r.AssetType = "liquidity_pool_shares" }},
		{"credit asset without issuer", func(r *record) { r.AssetType, r.AssetCode = "credit_alphanum4", "USDC" }},
		{"bad created_at", func(r *record) { r.CreatedAt = "yesterday" }},
		{"no id", func(r *record) { r.ID = "" }},
		{"no paging token", func(r *record) { r.PagingToken = "" }},
		{"no paging token on a skipped record", func(r *record) { r.PagingToken, r.Type = "", "create_account" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := incomingRecord()
			tc.change(&r)
			_, ok, err := c.payment(r)
			assert.ErrorIs(t, err, errBadRecord)
			assert.False(t, ok)
		})
	}
}

func TestTokenAfter(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"10", "9", true},
		{"9", "10", false},
		{"4294971393", "4294971393", false},
		{"4294971394", "4294971393", true},
		{"1", "0", true},
		{"1", "", true},
		{"b", "a", true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tokenAfter(tc.a, tc.b), "%q after %q", tc.a, tc.b)
	}
}
