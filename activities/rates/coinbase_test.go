package rates

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

// coinbaseServer serves body with status for every request and records
// the path asked for.
func coinbaseServer(t *testing.T, status int, body string) (*httptest.Server, *string) {
	t.Helper()
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &path
}

func TestCoinbaseRate(t *testing.T) {
	tests := []struct {
		name      string
		base      string
		quote     string
		body      string
		wantPrice string
	}{
		{"spot price", "XLM", "USD", `{"data":{"amount":"0.1234","base":"XLM","currency":"USD"}}`, "0.1234"},
		{"lower-case request", "xlm", "usd", `{"data":{"amount":"0.1234","base":"XLM","currency":"USD"}}`, "0.1234"},
		{
			"many decimals kept exact", "XLM", "USD",
			`{"data":{"amount":"0.123456789012345678901234567890","base":"XLM","currency":"USD"}}`,
			"0.123456789012345678901234567890",
		},
		{
			// A float64 would turn this into 0.1.
			"JSON number kept exact", "XLM", "USD",
			`{"data":{"amount":0.10000000000000000555,"base":"XLM","currency":"USD"}}`,
			"0.10000000000000000555",
		},
		{"exponent", "XLM", "USD", `{"data":{"amount":"1.5e-1","base":"XLM","currency":"USD"}}`, "0.15"},
		{"extra fields and trailing newline", "XLM", "EUR", `{"data":{"amount":"0.11","base":"XLM","currency":"EUR","x":1},"warnings":[]}` + "\n", "0.11"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, path := coinbaseServer(t, http.StatusOK, tc.body)
			cb := NewCoinbase(srv.URL+"/", srv.Client(), fixedClock)
			r, err := cb.Rate(context.Background(), tc.base, tc.quote)
			require.NoError(t, err)

			base, quote := strings.ToUpper(tc.base), strings.ToUpper(tc.quote)
			assert.Equal(t, "/v2/prices/"+base+"-"+quote+"/spot", *path)
			assert.Equal(t, base, r.Base)
			assert.Equal(t, quote, r.Quote)
			assert.Truef(t, decimal.RequireFromString(tc.wantPrice).Equal(r.Price), "want %s, got %s", tc.wantPrice, r.Price)
			assert.Equal(t, "coinbase:"+base+"-"+quote, r.Source)
			assert.Equal(t, testNow, r.At)
		})
	}
}

func TestCoinbaseRateErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantMsg string
	}{
		{"wrong base echoed", 200, `{"data":{"amount":"0.1","base":"BTC","currency":"USD"}}`, "response is for"},
		{"wrong currency echoed", 200, `{"data":{"amount":"0.1","base":"XLM","currency":"EUR"}}`, "response is for"},
		{"no data", 200, `{}`, "response is for"},
		{"zero price", 200, `{"data":{"amount":"0","base":"XLM","currency":"USD"}}`, "positive"},
		{"negative price", 200, `{"data":{"amount":"-0.1","base":"XLM","currency":"USD"}}`, "positive"},
		{"missing amount", 200, `{"data":{"base":"XLM","currency":"USD"}}`, "not a number"},
		{"amount in huge exponent notation", 200, `{"data":{"amount":"1e400","base":"XLM","currency":"USD"}}`, "out of bounds"},
		{"amount not a number", 200, `{"data":{"amount":"abc","base":"XLM","currency":"USD"}}`, "decoding"},
		{"amount a bool", 200, `{"data":{"amount":true,"base":"XLM","currency":"USD"}}`, "decoding"},
		{"malformed JSON", 200, `{"data":{"amount":"0.1",`, "decoding"},
		{"HTML", 200, `<html>maintenance</html>`, "decoding"},
		{"trailing data", 200, `{"data":{"amount":"0.1","base":"XLM","currency":"USD"}} {}`, "after the response"},
		{"server error", 500, `{"errors":[{"id":"internal","message":"oops"}]}`, "status 500"},
		{"rate limited", 429, `{"errors":[{"id":"rate_limit_exceeded"}]}`, "status 429"},
		{"not found", 404, `{"errors":[{"id":"not_found","message":"Invalid base currency"}]}`, "status 404"},
		{"oversize body", 200, `{"data":{"amount":"0.1","base":"XLM","currency":"USD"}}` + strings.Repeat(" ", 64<<10), "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := coinbaseServer(t, tc.status, tc.body)
			r, err := NewCoinbase(srv.URL, srv.Client(), fixedClock).Rate(context.Background(), "XLM", "USD")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.Zero(t, r)
		})
	}
}

func TestCoinbaseErrorBodySnippet(t *testing.T) {
	body := `{"errors":"` + strings.Repeat("x", 10_000) + `"}`
	srv, _ := coinbaseServer(t, http.StatusBadGateway, body)
	_, err := NewCoinbase(srv.URL, srv.Client(), fixedClock).Rate(context.Background(), "XLM", "USD")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "status 502")
	assert.Contains(t, err.Error(), `{\"errors\":\"xxx`, "the start of the body helps operators")
	assert.Less(t, len(err.Error()), 400, "the body must not be copied whole")
}

func TestCoinbaseRejectsBadPair(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	cb := NewCoinbase(srv.URL, srv.Client(), fixedClock)
	for _, p := range [][2]string{{"XLM/../x", "USD"}, {"XLM", "US D"}, {"", "USD"}, {"XLM", "?a=b"}, {"X", "USD"}, {"XLMXLMXLMXLM", "USD"}} {
		t.Run(p[0]+"-"+p[1], func(t *testing.T) {
			_, err := cb.Rate(context.Background(), p[0], p[1])
			require.Error(t, err)
			assert.Contains(t, err.Error(), "invalid currency pair")
		})
	}
	assert.Zero(t, calls.Load(), "nothing is sent for a bad pair")
}

func TestCoinbaseContextCancel(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	_, err := NewCoinbase(srv.URL, srv.Client(), fixedClock).Rate(ctx, "XLM", "USD")
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestCoinbaseDefaults(t *testing.T) {
	cb := NewCoinbase(CoinbaseURL, nil, nil)
	require.NotNil(t, cb.client)
	assert.Equal(t, 5*time.Second, cb.client.Timeout)
	assert.NotSame(t, http.DefaultClient, cb.client, "the default client has no timeout")
	require.NotNil(t, cb.now)
	assert.WithinDuration(t, time.Now(), cb.now(), time.Minute)
}
