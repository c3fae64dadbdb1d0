package main

// End-to-end tests of live mode: the real `devstack dev` stack, with its
// Stellar watcher reading a Horizon test server that speaks Horizon's JSON
// and SSE formats (and every way a payer gets it wrong), its live catalog
// reading the Creators and Browse API test servers, and its orders bought
// from the Zinc test server.

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/amazon/creatorstest"
	"github.com/memocart/memocart/activities/ebay/browsetest"
	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// Accounts of the tests: well-formed account ids (Circle's published USDC
// issuers, reused only for their shape); nothing is ever sent to them.
var (
	liveAccount = "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
	payer       = "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"
	usdcIssuer  = models.DefaultUSDCIssuer(models.StellarTestnet)
)

// liveStack is a dev stack taking live orders paid through a Horizon test
// server, previewed and bought through the marketplaces' and Zinc's test
// servers, and the pieces a test needs to drive it.
type liveStack struct {
	*stack
	horizon *horizontest.Server
	servers *testservers.Servers
	liveKey string
	store   *sqlstore.Store
	dsn     string
}

// restart stops the stack (if it still runs) and starts `devstack dev`
// again with flags, on the same test servers and the same data: extra is
// what startLive was given, with its MEMOCART_DATA_DIR. It returns the
// stack after the restart.
func (s *liveStack) restart(t testing.TB, extra map[string]string, flags ...string) *liveStack {
	t.Helper()
	s.stop()
	again := startDev(t, "sqlite", liveEnv(t, s.horizon, extra), flags...)
	return &liveStack{stack: again, horizon: s.horizon, servers: s.servers, liveKey: s.liveKey, store: s.store, dsn: s.dsn}
}

// newLiveServers starts the providers' test servers for one test and
// makes `devstack dev` use them (MEMOCART_DEV_LIVE=testservers). Zinc's
// clock stands still until the test moves it.
func newLiveServers(t testing.TB, hz *horizontest.Server) *testservers.Servers {
	srv := &testservers.Servers{
		Creators: creatorstest.New(),
		Browse:   browsetest.New(),
		Zinc:     zinctest.New(zinctest.WithAPIKey(testservers.ZincKey)),
		Horizon:  hz,
	}
	t.Cleanup(func() {
		srv.Creators.Close()
		srv.Browse.Close()
		srv.Zinc.Close()
	})
	testHookLiveServers = srv
	t.Cleanup(func() { testHookLiveServers = nil })
	return srv
}

// coinbaseStub answers the spot price endpoint with a fixed XLM price.
func coinbaseStub(t testing.TB, price string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/prices/XLM-USD/spot" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"amount":"` + price + `","base":"XLM","currency":"USD"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func liveEnv(t testing.TB, hz *horizontest.Server, extra map[string]string) map[string]string {
	env := map[string]string{
		"MEMOCART_DEV_LIVE":            "testservers",
		"MEMOCART_ZINC_POLL_SCHEDULE":  "300ms,300ms,300ms,300ms",
		"MEMOCART_STELLAR_NETWORK":     "testnet",
		"MEMOCART_STELLAR_ACCOUNT":     liveAccount,
		"MEMOCART_STELLAR_HORIZON_URL": hz.URL,
		"MEMOCART_XLM_RATE_URL":        coinbaseStub(t, "0.25"),
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func startLive(t testing.TB, dialect string, extra map[string]string) *liveStack {
	t.Helper()
	hz := horizontest.New(liveAccount)
	t.Cleanup(hz.Close)
	servers := newLiveServers(t, hz)
	env := liveEnv(t, hz, extra)
	if dialect == "postgres" {
		env["MEMOCART_DATABASE_URL"] = sqlstoretest.DSN(t, "postgres")
	}
	if env["MEMOCART_DATA_DIR"] == "" {
		env["MEMOCART_DATA_DIR"] = t.TempDir()
	}
	s := startDev(t, dialect, env)
	ls := &liveStack{stack: s, horizon: hz, servers: servers, liveKey: s.createKey("dev", "live", "pro")}
	ls.dsn = env["MEMOCART_DATABASE_URL"]
	if ls.dsn == "" {
		ls.dsn = "sqlite://" + filepath.Join(env["MEMOCART_DATA_DIR"], "memocart.db")
	}
	st, err := sqlstore.Open(context.Background(), ls.dsn, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ls.store = st
	// Live orders are taken once the watcher has recorded where it starts.
	require.Eventually(t, func() bool {
		c, err := st.StellarCursor(context.Background(), "testnet", liveAccount)
		return err == nil && c != ""
	}, 60*time.Second, 50*time.Millisecond, "the Stellar watcher started")
	return ls
}

// liveOrder creates a live order of a seeded cart of a known total, for the
// tests of the payment rules (carts through the live catalog are priced by
// the test servers); the order itself goes through the API.
func (s *liveStack) liveOrder(asset string) map[string]any {
	s.t.Helper()
	ctx := context.Background()
	acct, err := s.store.EnsureAccount(ctx, "dev", time.Now())
	require.NoError(s.t, err)
	id, err := models.NewID("crt", rand.Reader)
	require.NoError(s.t, err)
	d := decimal.RequireFromString
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(s.t, s.store.CreateCart(ctx, models.Cart{
		ID: id, AccountID: acct.ID, Mode: models.ModeLive, Status: models.CartReady, ShipToCountry: "US",
		Quote: models.Quote{Currency: "USD", Subtotal: d("100.00"), Shipping: d("5.99"), Tax: d("8.74"), ServiceFee: d("3.00"), Total: d("117.73")},
		Items: []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B08N5WRWNW", Marketplace: models.MarketplaceAmazon,
			ProductID: "B08N5WRWNW", Title: "Live item", ImageURL: "https://m.media-amazon.com/x.jpg", Quantity: 1, UnitPrice: d("100.00"), LineTotal: d("100.00")}},
		CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}))
	body := orderBody(id)
	body["payment_asset"] = asset
	code, resp := s.do(s.liveKey, "POST", "/v1/orders", body)
	require.Equal(s.t, http.StatusCreated, code, resp)
	return obj(resp, "order")
}

// pay sends a payment to the receiving account on the test Horizon.
func (s *liveStack) pay(p horizontest.Payment) string {
	if p.From == "" {
		p.From = payer
	}
	if p.To == "" {
		p.To = liveAccount
	}
	return s.horizon.AddPayment(p)
}

func usdc(amount, memo string) horizontest.Payment {
	return horizontest.Payment{AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: amount, MemoType: "text", Memo: memo}
}

// waitPayment polls the order until its payment status is want.
func (s *liveStack) waitPayment(ref, want string) map[string]any {
	s.t.Helper()
	return s.waitPaymentWithin(ref, want, 30*time.Second)
}

// waitPaymentWithin polls the order until its payment status is want,
// for at most d.
func (s *liveStack) waitPaymentWithin(ref, want string, d time.Duration) map[string]any {
	s.t.Helper()
	var last map[string]any
	ok := assert.Eventually(s.t, func() bool {
		_, b := s.do(s.liveKey, "GET", "/v1/orders/"+ref, nil)
		last = obj(b, "order")
		return str(last, "payment_status") == want
	}, d, 50*time.Millisecond)
	require.True(s.t, ok, "order %s: payment status %q, want %q (%v)", ref, str(last, "payment_status"), want, last)
	return last
}

// status returns a stored payment's disposition, "" while it is not
// stored. Safe inside Eventually conditions: it never fails the test.
func (s *liveStack) status(id string) string {
	ps, err := s.store.Payments(context.Background())
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if p.ID == id {
			return p.Status
		}
	}
	return ""
}

// stored returns a stored payment, failing the test if it is not stored.
func (s *liveStack) stored(id string) sqlstore.StoredPayment {
	s.t.Helper()
	ps, err := s.store.Payments(context.Background())
	require.NoError(s.t, err)
	for _, p := range ps {
		if p.ID == id {
			return p
		}
	}
	s.t.Fatalf("payment %s not stored", id)
	return sqlstore.StoredPayment{}
}

// with returns the stack reporting to t, for use inside a subtest.
func (s *liveStack) with(t testing.TB) *liveStack {
	c, st := *s, *s.stack
	st.t = t
	c.stack = &st
	return &c
}

func paymentID(token string) string { return "stellar:testnet:" + token }

func TestE2ELiveExactPaymentIsPlacedWithZinc(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o := s.liveOrder("USDC")
	assert.Equal(t, liveAccount, str(o, "payment_address"))
	assert.Equal(t, "testnet", str(o, "payment_network"))
	assert.Equal(t, usdcIssuer, str(o, "payment_asset_issuer"))
	assert.Equal(t, "117.73", str(o, "payment_amount"))
	assert.Contains(t, str(o, "payment_uri"), "web+stellar:pay?destination="+liveAccount)
	assert.Contains(t, str(o, "payment_uri"), "memo="+str(o, "number"))

	s.pay(usdc("117.73", str(o, "number")))
	final, _ := s.waitStatus(s.liveKey, str(o, "number"), "paid")
	assert.Equal(t, "confirmed", str(final, "payment_status"))

	// Paid: placed with Zinc once, for at most what the customer paid for
	// goods, shipping and tax (117.73 less the 3.00 service fee).
	id := str(o, "id")
	require.Eventually(t, func() bool { return s.servers.Zinc.OrdersCreated(id) == 1 }, 30*time.Second, 50*time.Millisecond)
	z := s.zincOrder(id)
	assert.Equal(t, int64(11473), z.MaxPrice)
	assert.Equal(t, str(o, "number"), z.PONumber)
	assert.Equal(t, id, z.Metadata["memocart_order_id"])
}

// TestE2ELivePaymentPolicy shows every row of the payer-error policy end
// to end: Horizon stream → watcher → matcher → workflow → database → GET.
func TestE2ELivePaymentPolicy(t *testing.T) {
	live := startLive(t, "sqlite", map[string]string{"MEMOCART_PAYMENT_WINDOW": "6s"})

	t.Run("underpaid, then topped up with the same memo", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		s.pay(usdc("100", str(o, "number")))
		partial := s.waitPayment(str(o, "number"), "partial")
		assert.Equal(t, "17.73", str(obj(partial, "payment"), "amount_due"), "GET shows what remains")
		assert.Equal(t, "created", str(partial, "status"))
		s.pay(usdc("17.73", str(o, "number")))
		s.waitPayment(str(o, "number"), "confirmed")
	})

	t.Run("two payments with one memo are summed, a duplicate counted once", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		s.horizon.DuplicateNext(1)
		s.pay(usdc("60", str(o, "number")))
		s.waitPayment(str(o, "number"), "partial")
		s.pay(usdc("57.73", str(o, "number")))
		final := s.waitPayment(str(o, "number"), "confirmed")
		assert.Equal(t, "117.73", str(obj(final, "payment"), "amount_received"), "the duplicated record was counted once")
	})

	t.Run("overpaid: confirmed, the excess owed back", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		s.pay(usdc("120", str(o, "number")))
		s.waitPayment(str(o, "number"), "overpaid")
		refunds, err := s.store.RefundsDue(context.Background())
		require.NoError(t, err)
		found := false
		for _, r := range refunds {
			if r.OrderNumber == str(o, "number") {
				found = true
				assert.Equal(t, "2.27", r.Amount.String())
				assert.Equal(t, []string{payer}, r.Senders)
			}
		}
		assert.True(t, found, "the excess is listed for refund")
	})

	t.Run("wrong asset: recorded, not credited, marked for refund", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		tok := s.pay(horizontest.Payment{AssetType: "native", Amount: "500", MemoType: "text", Memo: str(o, "number")})
		fake := s.pay(horizontest.Payment{AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: payer, Amount: "117.73", MemoType: "text", Memo: str(o, "number")})
		require.Eventually(t, func() bool {
			return s.status(paymentID(tok)) == sqlstore.PaymentRefundDue && s.status(paymentID(fake)) == sqlstore.PaymentRefundDue
		}, 30*time.Second, 50*time.Millisecond)
		assert.Equal(t, "USDC:"+payer, s.stored(paymentID(fake)).Asset, "USDC of another issuer is not USDC")
		_, b := s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
		assert.Equal(t, "0", str(obj(obj(b, "order"), "payment"), "amount_received"))
		assert.Equal(t, "created", str(obj(b, "order"), "status"))
	})

	t.Run("unknown, missing and hash memos go to the unmatched list", func(t *testing.T) {
		s := live.with(t)
		unknown := s.pay(usdc("5", "12345678906"))
		missing := s.pay(horizontest.Payment{AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer, Amount: "5", MemoType: "none"})
		hash := s.pay(horizontest.Payment{AssetType: "native", Amount: "5", MemoType: "hash", Memo: "qmOEwo9ZmiyqLl4cfTTeNN0r91YlDoizcbSufFQJBCo="})
		for _, tok := range []string{unknown, missing, hash} {
			require.Eventually(t, func() bool { return s.status(paymentID(tok)) == sqlstore.PaymentUnmatched },
				30*time.Second, 50*time.Millisecond, tok)
		}
	})

	t.Run("outgoing payments are not income", func(t *testing.T) {
		s := live.with(t)
		out := s.pay(horizontest.Payment{From: liveAccount, To: payer, AssetType: "native", Amount: "1", MemoType: "text", Memo: "refund"})
		marker := s.pay(usdc("1", "marker"))
		require.Eventually(t, func() bool { return s.status(paymentID(marker)) == sqlstore.PaymentUnmatched }, 30*time.Second, 50*time.Millisecond)
		ps, err := s.store.Payments(context.Background())
		require.NoError(t, err)
		for _, p := range ps {
			assert.NotEqual(t, paymentID(out), p.ID)
		}
	})

	t.Run("XLM order quoted at the locked rate", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("XLM")
		assert.Equal(t, "470.92", str(o, "payment_amount"), "117.73 USD at 0.25 USD/XLM")
		rate := obj(o, "exchange_rate")
		assert.Equal(t, "0.25", str(rate, "price"))
		assert.Equal(t, "coinbase:XLM-USD", str(rate, "source"))
		s.pay(horizontest.Payment{AssetType: "native", Amount: "470.92", MemoType: "id", Memo: str(o, "number")})
		s.waitPayment(str(o, "number"), "confirmed")
	})

	t.Run("underpaid until the deadline: cancelled, received amount marked for refund", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		s.pay(usdc("50", str(o, "number")))
		s.waitPayment(str(o, "number"), "partial")
		final, _ := s.waitStatus(s.liveKey, str(o, "number"), "cancelled")
		assert.Equal(t, "refund_due", str(final, "payment_status"))
		assert.Equal(t, "50", str(obj(final, "payment"), "amount_received"))
	})

	t.Run("paid after the deadline: recorded as late, marked for refund", func(t *testing.T) {
		s := live.with(t)
		o := s.liveOrder("USDC")
		s.waitStatus(s.liveKey, str(o, "number"), "cancelled")
		tok := s.pay(usdc("117.73", str(o, "number")))
		final := s.waitPayment(str(o, "number"), "refund_due")
		assert.Equal(t, "cancelled", str(final, "status"))
		require.Eventually(t, func() bool {
			st := s.status(paymentID(tok))
			return st == sqlstore.PaymentLate || st == sqlstore.PaymentMatched
		}, 30*time.Second, 50*time.Millisecond)
	})
}

// TestE2ELiveWatcherSurvivesRestart stops the whole stack, lets payments
// arrive while nothing watches, and starts it again on the same data: every
// payment is counted exactly once.
func TestE2ELiveWatcherSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_DATA_DIR": dir})
	a, b := s.liveOrder("USDC"), s.liveOrder("USDC")
	s.pay(usdc("17.73", str(a, "number")))
	s.waitPayment(str(a, "number"), "partial")

	s.stop()
	// While nothing runs: a top-up for a, a full payment for b, and a
	// record the stream would duplicate.
	s.pay(usdc("100", str(a, "number")))
	s.horizon.DuplicateNext(1)
	s.pay(usdc("117.73", str(b, "number")))

	s2 := s.restart(t, map[string]string{"MEMOCART_DATA_DIR": dir})
	// The stop cuts the watch activity off, and the restarted server runs
	// it again at the latest once its heartbeat times out (30 s,
	// workflows/watcher.go): 34 s after the restart in 1 of 18 runs under
	// load. The wait covers that, the restart and the catch-up.
	final := s2.waitPaymentWithin(str(a, "number"), "confirmed", 75*time.Second)
	assert.Equal(t, "117.73", str(obj(final, "payment"), "amount_received"))
	final = s2.waitPayment(str(b, "number"), "confirmed")
	assert.Equal(t, "117.73", str(obj(final, "payment"), "amount_received"), "counted once despite the duplicate")

	ps, err := s.store.Payments(context.Background())
	require.NoError(t, err)
	seen := map[string]int{}
	for _, p := range ps {
		seen[p.ID]++
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, id)
	}
	assert.Len(t, seen, 3, "three payments, each stored once")
}

// TestE2EPaymentsCommand drives `memocart payments` as an operator would.
func TestE2EPaymentsCommand(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o := s.liveOrder("USDC")
	tok := s.pay(usdc("117.73", "1234 typo"))
	require.Eventually(t, func() bool { return s.status(paymentID(tok)) == sqlstore.PaymentUnmatched }, 30*time.Second, 50*time.Millisecond)

	runCmd := func(args ...string) string {
		var out, errOut syncBuffer
		err := run(context.Background(), args, func(k string) string { return s.env[k] }, &out, &errOut)
		require.NoError(t, err, errOut.String())
		return out.String()
	}
	list := runCmd("payments", "list")
	assert.Contains(t, list, paymentID(tok))
	assert.Contains(t, list, "1234 typo")

	s.env["MEMOCART_TEMPORAL_ADDRESS"] = s.temporal
	out := runCmd("payments", "attach", paymentID(tok), str(o, "number"))
	assert.Contains(t, out, "matched")
	s.waitPayment(str(o, "number"), "confirmed")
	assert.NotContains(t, runCmd("payments", "list"), paymentID(tok))

	// Paying too much: the excess is listed, then refunded by the operator.
	s.pay(usdc("3", str(o, "number")))
	s.waitPayment(str(o, "number"), "overpaid")
	assert.Contains(t, runCmd("payments", "list"), "paid more than the amount due")
	out = runCmd("payments", "mark-refunded", "--order", str(o, "number"), "--tx", "refund-tx-hash")
	assert.Contains(t, out, "marked refunded")
	assert.NotContains(t, runCmd("payments", "list"), "paid more than the amount due")
}

// zincOrder returns the Zinc test server's order placed under key.
func (s *liveStack) zincOrder(key string) zinctest.Order {
	s.t.Helper()
	for _, z := range s.servers.Zinc.Orders() {
		if z.IdempotencyKey == key {
			return z
		}
	}
	s.t.Fatalf("no Zinc order with idempotency key %s", key)
	return zinctest.Order{}
}

// preview previews url with the live key.
func (s *liveStack) preview(url string) (int, map[string]any) {
	s.t.Helper()
	return s.do(s.liveKey, "POST", "/v1/products/preview", map[string]any{"url": url})
}

// liveCartOrder creates a cart of urls (quantity 1 each) and an order of
// it with the live key, through the API.
func (s *liveStack) liveCartOrder(urls ...string) map[string]any {
	s.t.Helper()
	return s.newOrder(s.liveKey, urls...)
}

// payInFull pays an order's amount with its memo on the Horizon test server.
func (s *liveStack) payInFull(o map[string]any) {
	s.pay(usdc(str(o, "payment_amount"), str(o, "number")))
}

// TestE2ELiveMarketplacesToDelivered walks the live path on both
// marketplaces: previews (a short link too), carts priced by the catalogs,
// Stellar payment, one Zinc order each, and the parcel followed to the door
// with Zinc's carrier, tracking number and date.
func TestE2ELiveMarketplacesToDelivered(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			s := startLive(t, d, nil)

			amazonURL := "https://www.amazon.com/dp/B0LIVE0001"
			code, b := s.preview(amazonURL)
			require.Equal(t, http.StatusOK, code, b)
			p := obj(b, "product")
			wantPrice, wantCurrency := creatorstest.Price("B0LIVE0001", "www.amazon.com")
			assert.Equal(t, wantPrice, str(p, "price"))
			assert.Equal(t, wantCurrency, str(p, "currency"))
			assert.Equal(t, creatorstest.Title("B0LIVE0001"), str(p, "title"))
			assert.Equal(t, "in_stock", str(p, "availability"))

			code, b = s.preview("https://amzn.to/liveShort1")
			require.Equal(t, http.StatusOK, code, b)
			assert.Equal(t, "https://www.amazon.com/dp/"+creatorstest.ShortLinkASIN("liveShort1"), str(obj(b, "product"), "product_url"))

			ebayURL := "https://www.ebay.com/itm/123456789012"
			code, b = s.preview(ebayURL)
			require.Equal(t, http.StatusOK, code, b)
			assert.Equal(t, "ebay", str(obj(b, "product"), "marketplace"))
			assert.Contains(t, str(obj(b, "product"), "title"), "123456789012")

			code, b = s.preview("https://www.ebay.com/itm/" + browsetest.AuctionItem)
			assert.Equal(t, http.StatusUnprocessableEntity, code, b)
			assert.Equal(t, "product_unavailable", str(obj(b, "error"), "code"))
			assert.Contains(t, str(obj(b, "error"), "message"), "auction")

			// The cart keeps each line's snapshot of its listing.
			code, b = s.do(s.liveKey, "POST", "/v1/carts", map[string]any{
				"items": []map[string]any{{"product_url": amazonURL, "quantity": 2}, {"product_url": "https://amzn.to/liveShort1", "quantity": 1}}, "ship_to_country": "US"})
			require.Equal(t, http.StatusCreated, code, b)
			items := obj(b, "cart")["items"].([]any)
			first := items[0].(map[string]any)
			assert.Equal(t, "B0LIVE0001", str(first, "upstream_id"))
			assert.NotEmpty(t, str(first, "listing"))

			amazonOrder := s.liveCartOrder(amazonURL)
			ebayOrder := s.liveCartOrder(ebayURL)
			for _, o := range []map[string]any{amazonOrder, ebayOrder} {
				s.payInFull(o)
				s.waitStatus(s.liveKey, str(o, "number"), "paid")
				require.Eventually(t, func() bool { return s.servers.Zinc.OrdersCreated(str(o, "id")) == 1 }, 30*time.Second, 50*time.Millisecond)
			}
			assert.Contains(t, s.zincOrder(str(ebayOrder, "id")).Products[0].URL, "ebay.com/itm/123456789012")

			// Zinc buys and ships on its clock.
			s.servers.Zinc.Advance(zinctest.DefaultTimings.Placed)
			for _, o := range []map[string]any{amazonOrder, ebayOrder} {
				s.waitStatus(s.liveKey, str(o, "number"), "ordered")
			}
			s.servers.Zinc.Advance(zinctest.DefaultTimings.InTransit)
			for _, o := range []map[string]any{amazonOrder, ebayOrder} {
				shipped, _ := s.waitStatus(s.liveKey, str(o, "number"), "shipped")
				tr := obj(shipped, "tracking")
				assert.Equal(t, "ups", str(tr, "carrier"))
				assert.NotEmpty(t, str(tr, "tracking_number"))
				assert.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, str(tr, "estimated_delivery"))
			}
			s.servers.Zinc.Advance(zinctest.DefaultTimings.Delivered)
			for _, o := range []map[string]any{amazonOrder, ebayOrder} {
				final, _ := s.waitStatus(s.liveKey, str(o, "number"), "delivered")
				assert.Equal(t, "confirmed", str(final, "payment_status"))
				for _, st := range obj(final, "tracking")["steps"].([]any) {
					assert.True(t, st.(map[string]any)["completed"].(bool), "every step reached: %v", st)
				}
				ships := final["shipments"].([]any)
				require.Len(t, ships, 1)
				ship := ships[0].(map[string]any)
				assert.Equal(t, "delivered", str(ship, "status"))
				assert.Equal(t, str(obj(final, "tracking"), "tracking_number"), str(ship, "tracking_number"))
				assert.NotEmpty(t, ship["checkpoints"])
				assert.Equal(t, 1, s.servers.Zinc.OrdersCreated(str(o, "id")), "bought exactly once")
			}
			if *recordHistories && d == "sqlite" {
				writeHistory(t, s.stack, str(amazonOrder, "id"), "order_live_delivered.json")
			}
		})
	}
}

// TestE2ELiveFailuresEndFailedWithRefundDue: every way the purchase can go
// wrong after payment ends the order failed, its money due back, with a
// reason a client can read; a passing failure at the retailer is placed
// again and goes through.
func TestE2ELiveFailuresEndFailedWithRefundDue(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	cases := []struct {
		asin, reason string
	}{
		{zinctest.OutOfStockASIN, "out of stock"},
		{zinctest.PriceAboveMaxASIN, "price rose"},
		{zinctest.RetailerCancelsASIN, "retailer cancelled"},
		{zinctest.UndeliverableASIN, "could not deliver"},
		{zinctest.RejectedASIN, "out of stock"},
	}
	orders := make([]map[string]any, len(cases))
	for i, c := range cases {
		orders[i] = s.liveCartOrder("https://www.amazon.com/dp/" + c.asin)
		s.payInFull(orders[i])
	}
	retried := s.liveCartOrder("https://www.amazon.com/dp/" + zinctest.RateLimitedOnceASIN)
	s.payInFull(retried)
	// Every order paid (the rejected one fails at once when placed).
	for _, o := range append(orders, retried) {
		require.Eventually(t, func() bool {
			_, b := s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
			return str(obj(b, "order"), "status") != "created"
		}, 30*time.Second, 50*time.Millisecond)
	}
	// Zinc's clock runs fast from here: three days in a few seconds.
	s.servers.Zinc.SetAutoClock(50_000)
	for i, c := range cases {
		t.Run(c.asin, func(t *testing.T) {
			final, _ := s.with(t).waitStatus(s.liveKey, str(orders[i], "number"), "failed")
			assert.Equal(t, "refund_due", str(final, "payment_status"))
			assert.Contains(t, strings.ToLower(str(final, "failure_reason")), c.reason)
		})
	}
	final, _ := s.waitStatus(s.liveKey, str(retried, "number"), "delivered")
	assert.Equal(t, "confirmed", str(final, "payment_status"))
	id := str(retried, "id")
	assert.Equal(t, 1, s.servers.Zinc.OrdersCreated(id), "first attempt")
	assert.Equal(t, 1, s.servers.Zinc.OrdersCreated(id+"-2"), "placed again once")
	if *recordHistories {
		writeHistory(t, s.stack, id, "order_live_placed_again.json")
		writeHistory(t, s.stack, str(orders[3], "id"), "order_live_undeliverable.json")
	}
}

// TestE2ELiveOrderPlacedOnceThroughCrashes: Zinc takes the order but the
// answer is lost (a 500 after creating it), and the
// whole stack is killed and restarted while the parcel travels: still
// exactly one Zinc order, and the order is delivered.
func TestE2ELiveOrderPlacedOnceThroughCrashes(t *testing.T) {
	dir := t.TempDir()
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_DATA_DIR": dir})
	o := s.liveCartOrder("https://www.amazon.com/dp/B0LIVE0002")
	id := str(o, "id")
	s.servers.Zinc.FailAfterCreate(1)
	s.payInFull(o)
	require.Eventually(t, func() bool { return s.servers.Zinc.CreateRequests(id) >= 2 }, 60*time.Second, 50*time.Millisecond,
		"the activity retried after losing Zinc's answer")
	s.servers.Zinc.Advance(zinctest.DefaultTimings.Shipped)
	s.waitStatus(s.liveKey, str(o, "number"), "shipped")

	s.stop()
	s.servers.Zinc.Advance(zinctest.DefaultTimings.Delivered)
	s2 := s.restart(t, map[string]string{"MEMOCART_DATA_DIR": dir})
	s2.waitStatus(s.liveKey, str(o, "number"), "delivered")
	assert.Equal(t, 1, s.servers.Zinc.OrdersCreated(id), "one Zinc order whatever was retried")
	assert.Len(t, s.servers.Zinc.Orders(), 1)
}

// TestE2ELiveWebhooksDriveProgress: with checks an hour apart, only Zinc's
// signed webhooks (each delivered twice) can move the order, and they do;
// a forged delivery is refused.
func TestE2ELiveWebhooksDriveProgress(t *testing.T) {
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_ZINC_POLL_SCHEDULE": "1h,1h,1h,1h"})
	s.servers.Zinc.DuplicateWebhooks(true)
	o := s.liveCartOrder("https://www.amazon.com/dp/B0LIVE0003")
	s.payInFull(o)
	require.Eventually(t, func() bool { return s.servers.Zinc.OrdersCreated(str(o, "id")) == 1 }, 30*time.Second, 50*time.Millisecond)
	for _, step := range []struct {
		at     time.Duration
		status string
	}{
		{zinctest.DefaultTimings.Placed, "ordered"},
		{zinctest.DefaultTimings.InTransit, "shipped"},
		{zinctest.DefaultTimings.Delivered, "delivered"},
	} {
		s.servers.Zinc.SetNow(s.servers.Zinc.Orders()[0].CreatedAt.Add(step.at))
		s.waitStatus(s.liveKey, str(o, "number"), step.status)
	}
	assert.Positive(t, s.servers.Zinc.WebhooksSent())
	if *recordHistories {
		writeHistory(t, s.stack, str(o, "id"), "order_live_webhooks.json")
		// From the baseline on: a webhook's check finds the change and
		// stops the watch (version watch-by-retry).
		writeHistory(t, s.stack, str(o, "id"), "order_live_webhooks_watch.json")
	}

	body := `{"event":"order.placed","order_id":"` + s.zincOrder(str(o, "id")).ID + `","status":"order_placed"}`
	req, err := http.NewRequest("POST", s.baseURL+"/webhooks/zinc", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(zinc.SignatureHeader, "0000")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// TestE2EDevLiveTestservers runs the live walk of docs/production.md as a
// reader would: `devstack dev` with MEMOCART_DEV_LIVE=testservers runs every
// provider's test server itself; with nothing but the export lines its
// banner printed, the doc's commands preview, order, pay on the Horizon test
// server over HTTP, and poll the order to delivered.
func TestE2EDevLiveTestservers(t *testing.T) {
	needWalkTools(t)
	blocks := docBlocks(t, "../../docs/production.md", "\n### Walk the live path on one machine")
	require.Len(t, blocks, 3, "make run, the walk, the refund")

	s := startDev(t, "sqlite", map[string]string{"MEMOCART_DEV_LIVE": "testservers"})
	out := string(runWalk(t, walkScript(t, s.out.String(), blocks, "API", "LIVE", "HORIZON"), 4*time.Minute))
	assert.Contains(t, out, "\ndelivered\n", "the poll loop saw delivered")
	assert.Regexp(t, `"carrier":"ups"`, out, "the tracking of the delivered order")
	assert.Regexp(t, `"tracking_number":"[^"]+"`, out)
	assert.Regexp(t, `"estimated_delivery":"[^"]+"`, out)

	// The failed order's refund, sent once, to the destination with its
	// memo, on the Horizon test server.
	assert.Contains(t, out, "\nfailed\n", "the second order failed")
	m := regexp.MustCompile(`\{"status":"sent","amount":"([0-9.]+)","transaction_hash":"([0-9a-f]{64})"\}`).FindStringSubmatch(out)
	require.NotNil(t, m, "the refund poll saw sent:\n%s", out)
	assert.Contains(t, out, "\nrefunded\n", "the order reads refunded")
	assert.Contains(t, out, `[{"asset_code":"USDC","balance":"`+horizonAmount(t, m[1])+`"},{"asset_code":null,"balance":"5.0000000"}]`,
		"the destination holds the refund (trustlines first, native last, as Horizon lists them)")
}

// horizonAmount writes a decimal as Horizon does, with 7 decimal places.
func horizonAmount(t *testing.T, v string) string {
	t.Helper()
	d, err := decimal.NewFromString(v)
	require.NoError(t, err)
	return d.StringFixed(7)
}

// TestE2ELiveWorkerKilledBetweenPlacingAndRecording kills the whole stack
// while Zinc has created the order but its answer has not reached the
// worker: nothing of ours knows the order exists. The restarted worker
// retries the placement with the same idempotency key and finds Zinc's
// order instead of buying again.
func TestE2ELiveWorkerKilledBetweenPlacingAndRecording(t *testing.T) {
	dir := t.TempDir()
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_DATA_DIR": dir})
	o := s.liveCartOrder("https://www.amazon.com/dp/B0LIVE0004")
	id := str(o, "id")
	s.servers.Zinc.HoldAfterCreate(1)
	s.payInFull(o)
	require.Eventually(t, func() bool { return s.servers.Zinc.OrdersCreated(id) == 1 }, 60*time.Second, 20*time.Millisecond,
		"Zinc created the order; its answer is held")
	stored, err := s.store.Order(context.Background(), id)
	require.NoError(t, err)
	assert.Nil(t, stored.Fulfilment, "nothing recorded yet: this is the window")

	s2 := s.restart(t, map[string]string{"MEMOCART_DATA_DIR": dir})
	require.Eventually(t, func() bool { return s.servers.Zinc.CreateRequests(id) >= 2 }, 90*time.Second, 50*time.Millisecond,
		"the restarted worker placed the order again")
	s.servers.Zinc.SetAutoClock(50_000)
	s2.waitStatus(s.liveKey, str(o, "number"), "delivered")
	assert.Equal(t, 1, s.servers.Zinc.OrdersCreated(id), "bought exactly once")
	assert.Len(t, s.servers.Zinc.Orders(), 1)
	stored, err = s.store.Order(context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, stored.Fulfilment)
	assert.Equal(t, s.servers.Zinc.Orders()[0].ID, stored.Fulfilment.Ref)
}
