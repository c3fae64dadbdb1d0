package api_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/rates"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
	"github.com/memocart/memocart/workflows"
)

// ---- Order fixtures ----

const (
	// sandboxPayTo is the test-mode receiving account, as cmd configures it.
	sandboxPayTo = sandbox.PaymentAddress
	// ordersPublicURL is the base of tracking_url.
	ordersPublicURL = "https://track.memocart.test"
	// ordersPaymentWindow is not the default, so a test sees the config used.
	ordersPaymentWindow = 45 * time.Minute
	ordersRateMaxAge    = 5 * time.Minute

	customerEmail = "ada@example.com"
	customerName  = "Ada Lovelace"
	customerLine1 = "1 Infinite Loop"
	// testnetPassphraseEscaped is how SEP-0007 writes the testnet passphrase.
	testnetPassphraseEscaped = "network_passphrase=Test%20SDF%20Network%20%3B%20September%202015"
)

var (
	// liveIssuer and livePayTo are syntactically valid Stellar accounts,
	// distinct so a test can tell the issuer from the receiving account.
	liveIssuer = models.DefaultUSDCIssuer(models.StellarTestnet)
	livePayTo  = models.DefaultUSDCIssuer(models.StellarPubnet)
	liveSetup  = api.PaymentSetup{
		Address: livePayTo, Network: "testnet", USDCIssuer: liveIssuer,
		NetworkPassphrase: models.StellarTestnet.Passphrase(),
	}
)

// ---- Fakes ----

// recordingWorkflows records every StartOrder call and fails them while
// told to.
type recordingWorkflows struct {
	mu    sync.Mutex
	calls []models.Order
	err   error
	// requestIDs holds the request id each StartOrder's context carried
	// to Temporal (workflows.LogFieldsFrom).
	requestIDs []string
	// hints records FulfilmentUpdated calls as "<order id>/<event id>";
	// hintErr is what they return.
	hints   []string
	hintErr error
	// cancels records CancelOrder calls as "<order id>/<note>"; cancelErr
	// is what they return; with cancelHangs they wait for the request's
	// deadline (a hung Temporal). Otherwise the call does the workflow's
	// part: it writes the cancellation to store.
	cancels     []string
	cancelErr   error
	cancelHangs bool
	store       *sqlstore.Store
	now         func() time.Time
	// refundStarts records StartRefund calls as "<refund id>@<order
	// number>"; MoveRefund refuses the destinations in refuseDestinations
	// as Horizon would (refunds_test.go).
	refundStarts       []string
	refuseDestinations map[string]bool
}

func (w *recordingWorkflows) CancelOrder(ctx context.Context, orderID, note string) error {
	w.mu.Lock()
	w.cancels = append(w.cancels, orderID+"/"+note)
	err, hangs, st, now := w.cancelErr, w.cancelHangs, w.store, w.now
	w.mu.Unlock()
	if hangs {
		<-ctx.Done()
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	o, err := st.Order(ctx, orderID)
	if err != nil {
		return err
	}
	ps := models.PaymentCancelled
	if o.AmountReceived.IsPositive() {
		ps = models.PaymentRefundDue
	}
	reason := "cancelled by the customer (API)"
	if note != "" {
		reason += ": " + note
	}
	return st.RecordTransition(ctx, orderID, models.Transition{Status: models.OrderCancelled, PaymentStatus: ps, At: now(),
		AmountReceived: o.AmountReceived, Reason: reason, Cancellation: models.CancellationRequestedByCustomer}, time.Now())
}

// order reads the order as its workflow would, with the store and the
// clock the workflow's part writes with.
func (w *recordingWorkflows) order(ctx context.Context, orderID string) (models.Order, *sqlstore.Store, func() time.Time, error) {
	w.mu.Lock()
	st, now := w.store, w.now
	w.mu.Unlock()
	o, err := st.Order(ctx, orderID)
	return o, st, now, err
}

// ExpireOrder does the workflow's part of the expire test helper: it
// writes the order's close as the deadline would, refused as the
// workflow would once the order is paid (models.DecideExpire).
func (w *recordingWorkflows) ExpireOrder(ctx context.Context, orderID string) error {
	o, st, now, err := w.order(ctx, orderID)
	if err != nil {
		return err
	}
	if err := models.DecideExpire(o.Status, o.AmountDueReceived()); err != nil {
		return err
	}
	ps := models.PaymentExpired
	if o.AmountReceived.IsPositive() {
		ps = models.PaymentRefundDue
	}
	return st.RecordTransition(ctx, orderID, models.Transition{Status: models.OrderCancelled, PaymentStatus: ps, At: now(),
		AmountReceived: o.AmountReceived, Reason: "payment deadline passed", Cancellation: models.CancellationPaymentWindowExpired}, time.Now())
}

// MoveTestOrder does the workflow's part of the advance and fail test
// helpers: refused as the workflow refuses (models.DecideTestMove), it
// writes the order's next step, or its failure with the code's sentence.
func (w *recordingWorkflows) MoveTestOrder(ctx context.Context, orderID string, m models.TestMove) error {
	o, st, now, err := w.order(ctx, orderID)
	if err != nil {
		return err
	}
	if err := models.DecideTestMove(o.Status, m); err != nil {
		return err
	}
	t := models.Transition{Status: models.OrderFailed, PaymentStatus: models.PaymentRefundDue, At: now(),
		AmountReceived: o.AmountReceived, Reason: models.FulfilmentFailureReason(m.Fail)}
	if m.Advance {
		next := models.OrderSteps[slices.Index(models.OrderSteps, o.Status)+1]
		t = models.Transition{Status: next, PaymentStatus: o.PaymentStatus, At: now(), AmountReceived: o.AmountReceived}
		if next == models.OrderShipped {
			t.Shipment = &models.Shipment{Carrier: "Sandbox Express", TrackingNumber: "SBX000000000001"}
		}
	}
	return st.RecordTransition(ctx, orderID, t, time.Now())
}

// setCancel makes CancelOrder fail with err, or hang when hangs.
func (w *recordingWorkflows) setCancel(err error, hangs bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancelErr, w.cancelHangs = err, hangs
}

func (w *recordingWorkflows) cancelCalls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.cancels)
}

func (w *recordingWorkflows) FulfilmentUpdated(_ context.Context, orderID string, ev models.FulfilmentEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hints = append(w.hints, orderID+"/"+ev.EventID)
	return w.hintErr
}

func (w *recordingWorkflows) StartOrder(ctx context.Context, o models.Order) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, o)
	w.requestIDs = append(w.requestIDs, workflows.LogFieldsFrom(ctx).RequestID)
	return w.err
}

func (w *recordingWorkflows) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *recordingWorkflows) started() []models.Order {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

// staticRates answers every rate request with the same rate or error.
type staticRates struct {
	rate models.Rate
	err  error
}

func (r staticRates) Rate(context.Context, string, string) (models.Rate, error) { return r.rate, r.err }

// switchRates forwards to a provider a test can swap mid-test.
type switchRates struct {
	mu sync.Mutex
	p  api.RateProvider
}

func (s *switchRates) Rate(ctx context.Context, base, quote string) (models.Rate, error) {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	return p.Rate(ctx, base, quote)
}

func (s *switchRates) set(p api.RateProvider) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p
}

// recordingTestPayments is the sandbox chain: it records what was sent.
type recordingTestPayments struct {
	mu   sync.Mutex
	sent []models.Payment
}

func (p *recordingTestPayments) Send(_ context.Context, pay models.Payment) (models.PaymentOutcome, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, pay)
	return models.PaymentOutcomeMatched, nil
}

func (p *recordingTestPayments) all() []models.Payment {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// ---- Environment ----

// ordersEnv is a server wired for orders: payments config, rates, a
// recording workflow starter and sandbox payment source.
type ordersEnv struct {
	*env
	srv    *api.Server
	orders *checkout.Orders
	wf     *recordingWorkflows
	pay    *recordingTestPayments
}

// ordersSetup is what newOrdersEnvOn builds the server from, for options
// to change, with the test's clock.
type ordersSetup struct {
	testStack
	clock *fakeClock
}

type ordersOption func(s *ordersSetup)

// withTestRates replaces the test-mode rate provider; nil removes it.
func withTestRates(p func(clock *fakeClock) api.RateProvider) ordersOption {
	return func(s *ordersSetup) {
		if p == nil {
			s.rates = nil
			return
		}
		s.rates = map[models.Mode]api.RateProvider{models.ModeTest: p(s.clock)}
	}
}

func withLivePayments() ordersOption {
	return func(s *ordersSetup) { s.uses.Payments[models.ModeLive] = liveSetup }
}

func newOrdersEnv(t *testing.T, dialect string, opts ...ordersOption) *ordersEnv {
	t.Helper()
	return newOrdersEnvOn(t, sqlstoretest.Open(t, dialect), opts...)
}

// newOrdersEnvOn is newOrdersEnv on a given (migrated) store.
func newOrdersEnvOn(t *testing.T, st *sqlstore.Store, opts ...ordersOption) *ordersEnv {
	t.Helper()
	clock := newFakeClock()
	wf := &recordingWorkflows{store: st, now: clock.Now}
	pay := &recordingTestPayments{}
	payments := map[models.Mode]api.PaymentSetup{models.ModeTest: {Address: sandboxPayTo, Network: "sandbox"}}
	s := ordersSetup{testStack: testStack{
		cfg: api.Config{KeyPrefix: "mc", PublicURL: ordersPublicURL, Payments: payments},
		deps: api.Deps{
			Store:     st,
			Limiter:   ratelimit.NewMemory(clock.Now),
			Workflows: wf,
			Now:       clock.Now,
		},
		testPayments: pay,
		uses:         checkout.Config{Payments: payments, PaymentWindow: ordersPaymentWindow, RateMaxAge: ordersRateMaxAge},
		rates:        map[models.Mode]api.RateProvider{models.ModeTest: rates.NewFixed(decimal.RequireFromString("0.25"), clock.Now)},
	}, clock: clock}
	for _, o := range opts {
		o(&s)
	}
	srv, orders := s.server(t)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &ordersEnv{env: &env{st: st, clock: clock, ts: ts}, srv: srv, orders: orders, wf: wf, pay: pay}
}

// accountKey creates a key for account and returns its secret and account id.
func (e *ordersEnv) accountKey(t *testing.T, account string, mode models.Mode, tier models.Tier) (string, string) {
	t.Helper()
	secret, k := sqlstoretest.MustAccount(t, e.st, account, mode, tier)
	return secret, k.AccountID
}

// newCart creates a US cart through the API and returns its id and total.
func (e *ordersEnv) newCart(t *testing.T, key string) (string, decimal.Decimal) {
	t.Helper()
	c, _ := createCart(t, e.env, key, cartJSON("US", cartItemReq{ProductURL: amazonURL, Quantity: 2}))
	require.Equal(t, "US", c.ShipToCountry)
	return c.ID, amount(t, "cart total", c.Total)
}

// seedLiveCart stores a live cart directly, priced as a live catalog would.
func (e *ordersEnv) seedLiveCart(t *testing.T, accountID string) models.Cart {
	t.Helper()
	id, err := models.NewID("crt", rand.Reader)
	require.NoError(t, err)
	now := e.clock.Now().UTC().Truncate(time.Second)
	d := decimal.RequireFromString
	c := models.Cart{
		ID: id, AccountID: accountID, Mode: models.ModeLive, Status: models.CartReady, ShipToCountry: "US",
		Quote: models.Quote{Currency: "USD", Subtotal: d("40.00"), Shipping: d("5.99"), Tax: d("3.30"), ServiceFee: d("2.00"), Total: d("51.29")},
		Items: []models.CartItem{{
			ProductURL: amazonURL, Marketplace: models.MarketplaceAmazon, ProductID: "B07XJ8C8F5",
			Title: "Live Widget", ImageURL: "https://m.media-amazon.com/images/I/live.jpg",
			Quantity: 1, UnitPrice: d("40.00"), LineTotal: d("40.00"),
		}},
		CreatedAt: now, ExpiresAt: now.Add(testCartTTL),
	}
	require.NoError(t, e.st.CreateCart(t.Context(), c))
	return c
}

func usAddress() map[string]any {
	return map[string]any{
		"name": customerName, "phone": "+1 408 555 0100", "line1": customerLine1,
		"city": "Cupertino", "region": "CA", "postal_code": "95014", "country": "US",
	}
}

// orderBody is a valid order request for cartID, changed by edits.
func orderBody(cartID string, edits ...func(body, addr map[string]any)) string {
	addr := usAddress()
	body := map[string]any{
		"cart_id": cartID, "customer_email": customerEmail, "payment_asset": "USDC", "shipping_address": addr,
	}
	for _, f := range edits {
		f(body, addr)
	}
	b, _ := json.Marshal(body)
	return string(b)
}

func withAsset(asset string) func(body, addr map[string]any) {
	return func(body, _ map[string]any) { body["payment_asset"] = asset }
}

func (e *ordersEnv) postOrder(t *testing.T, key, body string, header map[string]string) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: "/v1/orders", auth: "Bearer " + key, body: body, header: header})
}

// createdOrder is the order as order creation serves it.
type createdOrder struct {
	ID                 string            `json:"id"`
	Number             string            `json:"number"`
	Status             string            `json:"status"`
	PaymentStatus      string            `json:"payment_status"`
	Currency           string            `json:"currency"`
	Total              json.RawMessage   `json:"total"`
	PaymentAsset       string            `json:"payment_asset"`
	PaymentAmount      json.RawMessage   `json:"payment_amount"`
	PaymentAddress     string            `json:"payment_address"`
	PaymentMemo        string            `json:"payment_memo"`
	PaymentExpiresAt   string            `json:"payment_expires_at"`
	TrackingURL        string            `json:"tracking_url"`
	CreatedAt          string            `json:"created_at"`
	PaymentNetwork     string            `json:"payment_network"`
	PaymentAssetIssuer *string           `json:"payment_asset_issuer"`
	PaymentMemoType    string            `json:"payment_memo_type"`
	PaymentURI         string            `json:"payment_uri"`
	ExchangeRate       *exchangeRateBody `json:"exchange_rate"`
	Metadata           map[string]string `json:"metadata"`
	RefundDestination  *destinationView  `json:"refund_destination"`
}

// destinationView is a refund destination as the API shows it.
type destinationView struct {
	Address  *string `json:"address"`
	MemoType *string `json:"memo_type"`
	Memo     *string `json:"memo"`
	ToSender bool    `json:"to_sender"`
}

type exchangeRateBody struct {
	Price  string `json:"price"`
	Source string `json:"source"`
	At     string `json:"at"`
}

// createdOrderKeys are the keys order creation must always send: the
// contract's, then the wallet fields Memocart adds.
var createdOrderKeys = []string{
	"id", "number", "status", "total", "payment_asset", "payment_amount", "payment_address",
	"payment_memo", "payment_expires_at", "tracking_url",
	"payment_network", "payment_asset_issuer", "payment_memo_type", "payment_uri",
}

// decodeCreated checks the creation body's shape and decodes it.
func decodeCreated(t *testing.T, r response) createdOrder {
	t.Helper()
	require.Contains(t, r.header.Get("Content-Type"), "application/json")
	raw := rawObject(t, r.body, "order")
	for _, k := range createdOrderKeys {
		assert.Containsf(t, raw, k, "order creation must send %q; body %s", k, r.body)
	}
	var body struct {
		Order createdOrder `json:"order"`
	}
	decodeStrict(t, r.body, &body)
	return body.Order
}

// rawObject returns the object at path in body, key by key, unparsed.
func rawObject(t *testing.T, body []byte, path ...string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoErrorf(t, json.Unmarshal(body, &m), "body %s", body)
	for _, p := range path {
		require.Containsf(t, m, p, "body %s", body)
		next := map[string]json.RawMessage{}
		require.NoErrorf(t, json.Unmarshal(m[p], &next), "%s in %s", p, body)
		m = next
	}
	return m
}

// stringAmount asserts raw is a JSON string holding a plain decimal with at
// most 7 places (a Stellar amount) and returns it.
func stringAmount(t *testing.T, name string, raw json.RawMessage) decimal.Decimal {
	t.Helper()
	var s string
	require.NoErrorf(t, json.Unmarshal(raw, &s), "%s must be a JSON string, got %s", name, raw)
	require.Regexpf(t, `^[0-9]+(\.[0-9]{1,7})?$`, s, "%s must be a plain decimal with at most 7 places", name)
	d, err := decimal.NewFromString(s)
	require.NoError(t, err)
	return d
}

func parseTS(t *testing.T, name, s string) time.Time {
	t.Helper()
	require.Truef(t, strings.HasSuffix(s, "Z"), "%s %q must be UTC", name, s)
	at, err := time.Parse(time.RFC3339, s)
	require.NoErrorf(t, err, "%s %q", name, s)
	return at
}

// payQuery checks a SEP-0007 pay link's prefix and returns its parameters.
func payQuery(t *testing.T, uri string) url.Values {
	t.Helper()
	require.Truef(t, strings.HasPrefix(uri, "web+stellar:pay?destination="), "payment_uri %q", uri)
	rest := strings.TrimPrefix(uri, "web+stellar:pay?")
	assert.NotContains(t, rest, "+", "spaces are %20 in SEP-0007 links, never +")
	q, err := url.ParseQuery(rest)
	require.NoError(t, err)
	return q
}

// ceilQuote is total/price rounded up to 7 decimals, computed with exact
// rationals, independently of models.QuoteXLM.
func ceilQuote(total, price decimal.Decimal) decimal.Decimal {
	q := new(big.Rat).Quo(total.Rat(), price.Rat())
	scaled := new(big.Rat).Mul(q, new(big.Rat).SetInt64(10_000_000))
	n := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	if new(big.Rat).SetInt(n).Cmp(scaled) != 0 {
		n.Add(n, big.NewInt(1))
	}
	return decimal.NewFromBigInt(n, -7)
}

// storedOrder reads an order straight from the store.
func (e *ordersEnv) storedOrder(t *testing.T, accountID string, mode models.Mode, ref string) models.Order {
	t.Helper()
	o, err := e.st.OrderForAccount(t.Context(), accountID, mode, ref)
	require.NoError(t, err)
	return o
}

// ---- Tests ----

func TestCreateOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, total := e.newCart(t, key)

		r := e.postOrder(t, key, orderBody(cartID), nil)
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		assert.Empty(t, r.header.Get("Idempotent-Replayed"), "a new order is not a replay")
		o := decodeCreated(t, r)

		assert.True(t, strings.HasPrefix(o.ID, "ord_"), o.ID)
		assert.Len(t, o.Number, 11)
		assert.True(t, models.ValidOrderNumber(o.Number), "number %q has a valid check digit", o.Number)
		assert.Equal(t, "created", o.Status)
		assert.Equal(t, "pending", o.PaymentStatus)
		assert.Equal(t, "USD", o.Currency)
		assert.True(t, total.Equal(amount(t, "total", o.Total)), "total %s is the cart's %s", o.Total, total)
		assert.Equal(t, "USDC", o.PaymentAsset)
		amt := stringAmount(t, "payment_amount", o.PaymentAmount)
		assert.Truef(t, amt.Equal(total), "USDC payment_amount %s is the total %s", amt, total)
		assert.Equal(t, sandboxPayTo, o.PaymentAddress)
		assert.Equal(t, o.Number, o.PaymentMemo, "the memo is the order number")
		assert.Equal(t, "text", o.PaymentMemoType)
		assert.Equal(t, "sandbox", o.PaymentNetwork)
		assert.Nil(t, o.PaymentAssetIssuer, "the sandbox setup names no USDC issuer")
		assert.Nil(t, o.ExchangeRate, "USDC is quoted 1:1, without a rate")

		created := parseTS(t, "created_at", o.CreatedAt)
		assert.Equal(t, e.clock.Now().Truncate(time.Second), created)
		assert.Equal(t, created.Add(ordersPaymentWindow), parseTS(t, "payment_expires_at", o.PaymentExpiresAt))
		assert.Equal(t, ordersPublicURL+"/track/"+o.Number, o.TrackingURL)

		q := payQuery(t, o.PaymentURI)
		assert.Equal(t, sandboxPayTo, q.Get("destination"))
		assert.Equal(t, amt.String(), q.Get("amount"))
		assert.Equal(t, "USDC", q.Get("asset_code"))
		assert.Equal(t, o.Number, q.Get("memo"))
		assert.Equal(t, "MEMO_TEXT", q.Get("memo_type"))
		assert.False(t, q.Has("network_passphrase"), "the sandbox setup has no passphrase")

		calls := e.wf.started()
		require.Len(t, calls, 1, "StartOrder once")
		assert.Equal(t, o.ID, calls[0].ID)
		assert.Equal(t, o.Number, calls[0].Number)
		assert.Equal(t, o.Number, calls[0].PaymentMemo)
		assert.Equal(t, accountID, calls[0].AccountID)
		assert.Equal(t, models.ModeTest, calls[0].Mode)
		assert.Equal(t, cartID, calls[0].CartID)
		assert.True(t, calls[0].PaymentAmount.Equal(amt))
		assert.True(t, calls[0].PaymentExpiresAt.Equal(created.Add(ordersPaymentWindow)))

		st := e.storedOrder(t, accountID, models.ModeTest, o.ID)
		assert.NotNil(t, st.WorkflowStartedAt, "the order is marked started")
		assert.Equal(t, customerEmail, st.CustomerEmail)
		assert.Equal(t, models.ShippingAddress{
			Name: customerName, Phone: st.Address.Phone, Line1: customerLine1, City: "Cupertino",
			Region: "CA", PostalCode: "95014", Country: "US",
		}, st.Address)
	})
}

func TestCreateOrderXLM(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		t.Run("fixed rate 0.25", func(t *testing.T) {
			e := newOrdersEnv(t, dialect)
			key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
			o, total := e.newOrderTotal(t, key, withAsset("XLM"))
			assert.Equal(t, "XLM", o.PaymentAsset)
			assert.True(t, total.Equal(amount(t, "total", o.Total)))
			amt := stringAmount(t, "payment_amount", o.PaymentAmount)
			want := ceilQuote(total, decimal.RequireFromString("0.25"))
			assert.Truef(t, want.Equal(amt), "payment_amount %s, want %s (total %s / 0.25)", amt, want, total)
			assert.Nil(t, o.PaymentAssetIssuer, "XLM has no issuer")
			require.NotNil(t, o.ExchangeRate)
			assert.Equal(t, exchangeRateBody{Price: "0.25", Source: "fixed", At: e.clock.Now().UTC().Format(time.RFC3339)}, *o.ExchangeRate)

			q := payQuery(t, o.PaymentURI)
			assert.False(t, q.Has("asset_code"), "SEP-0007 names no asset for XLM: %s", o.PaymentURI)
			assert.False(t, q.Has("asset_issuer"))
			assert.Equal(t, amt.String(), q.Get("amount"))
			assert.Equal(t, o.Number, q.Get("memo"))
			require.Len(t, e.wf.started(), 1)

			// The locked rate survives the store: retrieval shows the same.
			got := e.getOrder(t, key, o.ID)
			assert.Equal(t, amt.String(), got.Payment.Amount)
			assert.Equal(t, o.ExchangeRate, got.Payment.ExchangeRate)
			assert.Equal(t, o.PaymentURI, got.Payment.URI)
		})
		t.Run("inexact rate rounds up to the stroop", func(t *testing.T) {
			price := decimal.RequireFromString("0.3")
			e := newOrdersEnv(t, dialect, withTestRates(func(c *fakeClock) api.RateProvider {
				return staticRates{rate: models.Rate{Base: "XLM", Quote: "USD", Price: price, Source: "static", At: c.Now()}}
			}))
			key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
			o, total := e.newOrderTotal(t, key, withAsset("XLM"))
			amt := stringAmount(t, "payment_amount", o.PaymentAmount)
			assert.Truef(t, ceilQuote(total, price).Equal(amt), "payment_amount %s for %s at %s", amt, total, price)
			assert.True(t, amt.Mul(price).GreaterThanOrEqual(total), "the amount pays the total")
			assert.True(t, amt.Sub(decimal.New(1, -7)).Mul(price).LessThan(total), "one stroop less would not")
		})
	})
}

func TestCreateOrderRateUnavailable(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		rateAt := func(c *fakeClock, d time.Duration, price string) api.RateProvider {
			return staticRates{rate: models.Rate{Base: "XLM", Quote: "USD", Price: decimal.RequireFromString(price), Source: "static", At: c.Now().Add(d)}}
		}
		tests := []struct {
			name  string
			rates func(*fakeClock) api.RateProvider
		}{
			{"provider fails", func(*fakeClock) api.RateProvider {
				return staticRates{err: errors.New("coinbase XLM-USD: status 502: " + secretDetail)}
			}},
			{"rate older than RateMaxAge", func(c *fakeClock) api.RateProvider { return rateAt(c, -ordersRateMaxAge-time.Second, "0.25") }},
			{"rate dated in the future", func(c *fakeClock) api.RateProvider { return rateAt(c, 2*time.Minute, "0.25") }},
			{"zero price", func(c *fakeClock) api.RateProvider { return rateAt(c, 0, "0") }},
			{"no provider for the mode", nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := newOrdersEnv(t, dialect, withTestRates(tt.rates))
				key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
				cartID, _ := e.newCart(t, key)

				r := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), nil)
				requireError(t, r, http.StatusServiceUnavailable, models.CodeRateUnavailable, "")
				assert.NotContains(t, string(r.body), "hunter2")
				assert.NotContains(t, string(r.body), "coinbase")
				assert.Empty(t, e.wf.started(), "no order, no workflow")

				// Nothing was committed: the cart can still be paid in USDC.
				r = e.postOrder(t, key, orderBody(cartID), nil)
				assert.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			})
		}
	})
}

func TestCreateOrderValidation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)

		tests := []errorCase{
			{"missing cart_id", orderBody(cartID, func(b, _ map[string]any) { delete(b, "cart_id") }), 400, models.CodeInvalidRequest, "cart_id"},
			{"empty cart_id", orderBody(cartID, func(b, _ map[string]any) { b["cart_id"] = "" }), 400, models.CodeInvalidRequest, "cart_id"},
			{"cart_id not a string", orderBody(cartID, func(b, _ map[string]any) { b["cart_id"] = 42 }), 400, models.CodeInvalidRequest, "cart_id"},
			{"missing customer_email", orderBody(cartID, func(b, _ map[string]any) { delete(b, "customer_email") }), 400, models.CodeInvalidRequest, "customer_email"},
			{"missing payment_asset", orderBody(cartID, func(b, _ map[string]any) { delete(b, "payment_asset") }), 400, models.CodeInvalidRequest, "payment_asset"},
			{"missing shipping_address", orderBody(cartID, func(b, _ map[string]any) { delete(b, "shipping_address") }), 422, models.CodeInvalidAddress, "shipping_address"},
			{"bad e-mail", orderBody(cartID, func(b, _ map[string]any) { b["customer_email"] = "ada.example.com" }), 422, models.CodeInvalidEmail, "customer_email"},
			{"e-mail with display name", orderBody(cartID, func(b, _ map[string]any) { b["customer_email"] = "Ada <ada@example.com>" }), 422, models.CodeInvalidEmail, "customer_email"},
			{"unsupported asset", orderBody(cartID, withAsset("BTC")), 422, models.CodeUnsupportedAsset, "payment_asset"},
			{"missing line1", orderBody(cartID, func(_, a map[string]any) { delete(a, "line1") }), 422, models.CodeInvalidAddress, "shipping_address.line1"},
			{"bad US postal code", orderBody(cartID, func(_, a map[string]any) { a["postal_code"] = "9501" }), 422, models.CodeInvalidAddress, "shipping_address.postal_code"},
			{"missing US region", orderBody(cartID, func(_, a map[string]any) { delete(a, "region") }), 422, models.CodeInvalidAddress, "shipping_address.region"},
			{"missing city", orderBody(cartID, func(_, a map[string]any) { a["city"] = "  " }), 422, models.CodeInvalidAddress, "shipping_address.city"},
			{"country other than the cart's", orderBody(cartID, func(_, a map[string]any) {
				a["country"], a["region"], a["postal_code"], a["city"] = "CA", "ON", "K1A 0B1", "Ottawa"
			}), 422, models.CodeInvalidAddress, "shipping_address.country"},
			{"unknown field", `{"cart_id":"` + cartID + `","customer_email":"ada@example.com","payment_asset":"USDC","shipping_address":{},"coupon":"x"}`, 400, models.CodeInvalidRequest, "coupon"},
			{"malformed JSON", `{"cart_id":"` + cartID + `",`, 400, models.CodeInvalidRequest, ""},
			{"not an object", `["` + cartID + `"]`, 400, models.CodeInvalidRequest, ""},
			{"two objects", orderBody(cartID) + orderBody(cartID), 400, models.CodeInvalidRequest, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.postOrder(t, key, tt.body, nil)
				requireError(t, r, tt.status, tt.code, tt.field)
				assert.NotContains(t, string(r.body), customerName, "errors never repeat personal data")
			})
		}
		t.Run("empty body", func(t *testing.T) {
			r := e.send(t, request{method: http.MethodPost, path: "/v1/orders", auth: "Bearer " + key})
			requireError(t, r, http.StatusBadRequest, models.CodeInvalidRequest, "")
		})

		// None of the rejected requests used the cart up.
		assert.Empty(t, e.wf.started())
		r := e.postOrder(t, key, orderBody(cartID), nil)
		assert.Equalf(t, http.StatusCreated, r.status, "the cart is still usable; body %s", r.body)
	})
}

func TestCreateOrderCartNotFound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect, withLivePayments())
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
		soon, _ := e.newCart(t, key)
		late, _ := e.newCart(t, key)

		t.Run("unknown cart", func(t *testing.T) {
			requireError(t, e.postOrder(t, key, orderBody("crt_doesnotexist"), nil), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		t.Run("another account's cart", func(t *testing.T) {
			requireError(t, e.postOrder(t, other, orderBody(soon), nil), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		t.Run("same account, other mode", func(t *testing.T) {
			requireError(t, e.postOrder(t, live, orderBody(soon), nil), http.StatusNotFound, models.CodeCartNotFound, "")
			liveCart := e.seedLiveCart(t, accountID)
			requireError(t, e.postOrder(t, key, orderBody(liveCart.ID), nil), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		t.Run("expiry", func(t *testing.T) {
			e.clock.Advance(testCartTTL - time.Second)
			r := e.postOrder(t, key, orderBody(soon), nil)
			require.Equalf(t, http.StatusCreated, r.status, "a second before expiry; body %s", r.body)
			e.clock.Advance(time.Second)
			requireError(t, e.postOrder(t, key, orderBody(late), nil), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		assert.Len(t, e.wf.started(), 1)
	})
}

func TestCreateOrderIdempotency(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		t.Run("same body twice", func(t *testing.T) {
			cartID, _ := e.newCart(t, key)
			before := len(e.wf.started())
			first := e.postOrder(t, key, orderBody(cartID), nil)
			require.Equalf(t, http.StatusCreated, first.status, "body %s", first.body)
			o := decodeCreated(t, first)
			require.NotNil(t, e.storedOrder(t, accountID, models.ModeTest, o.ID).WorkflowStartedAt)

			second := e.postOrder(t, key, orderBody(cartID), nil)
			require.Equalf(t, http.StatusOK, second.status, "body %s", second.body)
			assert.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
			again := decodeCreated(t, second)
			assert.Equal(t, o.ID, again.ID)
			assert.JSONEq(t, string(first.body), string(second.body), "a replay answers exactly what the first request did")
			assert.Len(t, e.wf.started(), before+1, "StartOrder is not called again for a started order")
		})
		t.Run("XLM replay keeps the locked quote", func(t *testing.T) {
			cartID, _ := e.newCart(t, key)
			first := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), nil)
			require.Equalf(t, http.StatusCreated, first.status, "body %s", first.body)
			e.clock.Advance(time.Minute)
			second := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), nil)
			require.Equalf(t, http.StatusOK, second.status, "body %s", second.body)
			assert.JSONEq(t, string(first.body), string(second.body))
		})
		t.Run("Idempotency-Key", func(t *testing.T) {
			cartA, _ := e.newCart(t, key)
			cartB, _ := e.newCart(t, key)
			hdr := map[string]string{"Idempotency-Key": "order-attempt-7"}
			first := e.postOrder(t, key, orderBody(cartA), hdr)
			require.Equalf(t, http.StatusCreated, first.status, "body %s", first.body)
			o := decodeCreated(t, first)

			// A retry under the key replays the first answer, status
			// included (issue 10: 201, where it was 200 before the
			// per-POST mechanism).
			r := e.postOrder(t, key, orderBody(cartA), hdr)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
			assert.Equal(t, string(first.body), string(r.body), "the first answer, byte for byte")
			assert.Equal(t, o.ID, decodeCreated(t, r).ID)

			// Another body under the key: 422 (409 before issue 10).
			r = e.postOrder(t, key, orderBody(cartB), hdr)
			requireError(t, r, http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
			// cartB is untouched and can be ordered under another key.
			r = e.postOrder(t, key, orderBody(cartB), map[string]string{"Idempotency-Key": "order-attempt-8"})
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			assert.NotEqual(t, o.ID, decodeCreated(t, r).ID)
		})
		t.Run("different body for an ordered cart", func(t *testing.T) {
			cartID, _ := e.newCart(t, key)
			r := e.postOrder(t, key, orderBody(cartID), nil)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			for name, body := range map[string]string{
				"other e-mail": orderBody(cartID, func(b, _ map[string]any) { b["customer_email"] = "grace@example.com" }),
				"other asset":  orderBody(cartID, withAsset("XLM")),
				"other street": orderBody(cartID, func(_, a map[string]any) { a["line1"] = "2 Infinite Loop" }),
			} {
				t.Run(name, func(t *testing.T) {
					requireError(t, e.postOrder(t, key, body, nil), http.StatusConflict, models.CodeCartAlreadyOrdered, "")
					requireError(t, e.postOrder(t, key, body, map[string]string{"Idempotency-Key": "fresh-" + name}),
						http.StatusConflict, models.CodeCartAlreadyOrdered, "")
				})
			}
		})
		t.Run("Idempotency-Key length", func(t *testing.T) {
			cartID, _ := e.newCart(t, key)
			r := e.postOrder(t, key, orderBody(cartID), map[string]string{"Idempotency-Key": strings.Repeat("k", 256)})
			requireError(t, r, http.StatusBadRequest, models.CodeInvalidRequest, "Idempotency-Key")
			r = e.postOrder(t, key, orderBody(cartID), map[string]string{"Idempotency-Key": strings.Repeat("k", 255)})
			assert.Equalf(t, http.StatusCreated, r.status, "255 characters is allowed; body %s", r.body)
		})
	})
}

func TestCreateOrderWorkflowStartFails(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		ctx := t.Context()
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		e.wf.fail(errors.New("temporal: dial tcp 10.0.0.7:7233: connection refused; " + secretDetail))

		r := e.postOrder(t, key, orderBody(cartID), nil)
		requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
		assert.NotContains(t, string(r.body), "hunter2")
		assert.NotContains(t, string(r.body), "10.0.0.7")
		assert.NotContains(t, string(r.body), "temporal:")

		// The order was committed and waits for its workflow.
		awaiting, err := e.st.OrdersAwaitingWorkflow(ctx, e.clock.Now().Add(time.Hour), 10)
		require.NoError(t, err)
		require.Len(t, awaiting, 1)
		o := awaiting[0]
		assert.Equal(t, cartID, o.CartID)
		assert.Nil(t, o.WorkflowStartedAt)
		require.Len(t, e.wf.started(), 1, "the failed attempt")
		assert.Equal(t, o.ID, e.wf.started()[0].ID)
		assert.Equal(t, o.ID, e.getOrder(t, key, o.Number).ID)

		// Within the grace period the reconciler leaves it alone.
		e.wf.fail(nil)
		n, err := e.orders.ReconcileOrders(ctx, time.Hour)
		require.NoError(t, err)
		assert.Equal(t, 0, n)
		assert.Len(t, e.wf.started(), 1)

		n, err = e.orders.ReconcileOrders(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		calls := e.wf.started()
		require.Len(t, calls, 2)
		assertSameWorkflowInput(t, calls[0], calls[1])
		assert.NotNil(t, e.storedOrder(t, accountID, models.ModeTest, o.ID).WorkflowStartedAt)
		n, err = e.orders.ReconcileOrders(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "a started order is not started again")

		// The client's retry gets the same order, without another start.
		r = e.postOrder(t, key, orderBody(cartID), nil)
		require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
		assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		got := decodeCreated(t, r)
		assert.Equal(t, o.ID, got.ID)
		assert.Equal(t, o.Number, got.Number)
		assert.Len(t, e.wf.started(), 2)
	})
}

// assertSameWorkflowInput checks that the reconciler starts a workflow
// with what the request path would have: everything workflows.InputFor reads.
func assertSameWorkflowInput(t *testing.T, want, got models.Order) {
	t.Helper()
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Number, got.Number)
	assert.Equal(t, want.Mode, got.Mode)
	assert.Equal(t, want.PaymentAsset, got.PaymentAsset)
	assert.Truef(t, want.PaymentAmount.Equal(got.PaymentAmount), "amount %s, want %s", got.PaymentAmount, want.PaymentAmount)
	assert.Truef(t, want.PaymentExpiresAt.Equal(got.PaymentExpiresAt), "deadline %s, want %s", got.PaymentExpiresAt, want.PaymentExpiresAt)
}

// TestCreateOrderXLMReplayWithoutRate: replaying an XLM order returns the
// stored order, whose rate is already locked; it must not need a fresh
// rate. The 503 of a failed workflow start tells the client to "retry the
// same request", so that retry must work while the rate source is down.
func TestCreateOrderXLMReplayWithoutRate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		sw := &switchRates{}
		e := newOrdersEnv(t, dialect, withTestRates(func(c *fakeClock) api.RateProvider {
			sw.set(rates.NewFixed(decimal.RequireFromString("0.25"), c.Now))
			return sw
		}))
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		down := staticRates{err: errors.New("rate source down")}

		t.Run("plain replay", func(t *testing.T) {
			sw.set(rates.NewFixed(decimal.RequireFromString("0.25"), e.clock.Now))
			cartID, _ := e.newCart(t, key)
			first := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), nil)
			require.Equalf(t, http.StatusCreated, first.status, "body %s", first.body)

			sw.set(down)
			r := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), nil)
			require.Equalf(t, http.StatusOK, r.status, "replay of an existing XLM order with the rate source down; body %s", r.body)
			assert.JSONEq(t, string(first.body), string(r.body))
		})
		t.Run("retry after a failed workflow start", func(t *testing.T) {
			sw.set(rates.NewFixed(decimal.RequireFromString("0.25"), e.clock.Now))
			cartID, _ := e.newCart(t, key)
			e.wf.fail(errors.New("temporal down"))
			r := e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), map[string]string{"Idempotency-Key": "xlm-1"})
			requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")

			e.wf.fail(nil)
			sw.set(down)
			r = e.postOrder(t, key, orderBody(cartID, withAsset("XLM")), map[string]string{"Idempotency-Key": "xlm-1"})
			require.Equalf(t, http.StatusOK, r.status, "the retry the 503 asked for; body %s", r.body)
			assert.Equal(t, "XLM", decodeCreated(t, r).PaymentAsset)
		})
	})
}

// TestCreateOrderConcurrentRetries: the same request sent several times at
// once makes one order.
func TestCreateOrderConcurrentRetries(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		const n = 6
		results := make([]response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { results[i] = e.postOrder(t, key, orderBody(cartID), nil) })
		}
		wg.Wait()
		created, ids := 0, map[string]bool{}
		for _, r := range results {
			require.Containsf(t, []int{http.StatusCreated, http.StatusOK}, r.status, "body %s", r.body)
			if r.status == http.StatusCreated {
				created++
			}
			ids[decodeCreated(t, r).ID] = true
		}
		assert.Equal(t, 1, created, "exactly one request creates the order")
		assert.Len(t, ids, 1, "every response is the same order")
	})
}

func TestCreateOrderRetryStartsWorkflow(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	cartID, _ := e.newCart(t, key)
	e.wf.fail(errors.New("temporal down"))
	requireError(t, e.postOrder(t, key, orderBody(cartID), nil), http.StatusServiceUnavailable, models.CodeUnavailable, "")

	// Without the reconciler, the client's retry starts the workflow.
	e.wf.fail(nil)
	r := e.postOrder(t, key, orderBody(cartID), nil)
	require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	o := decodeCreated(t, r)
	e.requireStarted(t, accountID, o.ID, 2)
}

// requireStarted asserts that n workflows were started, the last one the
// test-mode order's, and that the store knows it started.
func (e *ordersEnv) requireStarted(t *testing.T, accountID, orderID string, n int) {
	t.Helper()
	calls := e.wf.started()
	require.Len(t, calls, n)
	assert.Equal(t, orderID, calls[n-1].ID)
	assert.NotNil(t, e.storedOrder(t, accountID, models.ModeTest, orderID).WorkflowStartedAt)
}

func TestCreateOrderCrashAfterCommit(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		ctx := t.Context()
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		var (
			mu     sync.Mutex
			hooked []string
		)
		e.orders.SetAfterOrderCommit(func(o models.Order) error {
			mu.Lock()
			defer mu.Unlock()
			hooked = append(hooked, o.ID)
			return errors.New("process killed: " + secretDetail)
		})

		r := e.postOrder(t, key, orderBody(cartID), nil)
		requireError(t, r, http.StatusInternalServerError, models.CodeInternal, "")
		assert.NotContains(t, string(r.body), "hunter2")
		mu.Lock()
		require.Len(t, hooked, 1)
		orderID := hooked[0]
		mu.Unlock()
		assert.Empty(t, e.wf.started(), "the process died before starting the workflow")

		o := e.storedOrder(t, accountID, models.ModeTest, orderID)
		assert.Equal(t, cartID, o.CartID, "the order was committed")
		assert.Nil(t, o.WorkflowStartedAt)

		e.orders.SetAfterOrderCommit(nil)
		n, err := e.orders.ReconcileOrders(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		e.requireStarted(t, accountID, o.ID, 1)
	})
}

func TestCreateOrderLiveMode(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		t.Run("no live payment setup", func(t *testing.T) {
			e := newOrdersEnv(t, dialect)
			live, accountID := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
			c := e.seedLiveCart(t, accountID)
			r := e.postOrder(t, live, orderBody(c.ID), nil)
			requireError(t, r, http.StatusServiceUnavailable, models.CodeLiveUnavailable, "")
			assert.NotContains(t, string(r.body), sandboxPayTo, "never the sandbox account for a live key")
			assert.Empty(t, e.wf.started())
		})
		t.Run("live payments but no buying provider", func(t *testing.T) {
			e := newOrdersEnv(t, dialect, withLivePayments(), func(s *ordersSetup) {
				s.uses.NoPurchasing = map[models.Mode]string{models.ModeLive: "Live purchasing is not configured on this deployment"}
			})
			live, accountID := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
			c := e.seedLiveCart(t, accountID)
			r := e.postOrder(t, live, orderBody(c.ID), nil)
			d := requireError(t, r, http.StatusServiceUnavailable, models.CodeLiveUnavailable, "")
			assert.Contains(t, d.Message, "purchasing")
			assert.Empty(t, e.wf.started(), "no order is taken that could not be bought")
		})
		t.Run("live order without a phone", func(t *testing.T) {
			e := newOrdersEnv(t, dialect, withLivePayments())
			live, accountID := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
			c := e.seedLiveCart(t, accountID)
			r := e.postOrder(t, live, orderBody(c.ID, func(_, addr map[string]any) { delete(addr, "phone") }), nil)
			requireError(t, r, http.StatusUnprocessableEntity, models.CodeInvalidAddress, "shipping_address.phone")
		})
		t.Run("live payment setup", func(t *testing.T) {
			e := newOrdersEnv(t, dialect, withLivePayments())
			live, accountID := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
			c := e.seedLiveCart(t, accountID)

			r := e.postOrder(t, live, orderBody(c.ID), nil)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			o := decodeCreated(t, r)
			assert.True(t, c.Total.Equal(amount(t, "total", o.Total)))
			assert.True(t, c.Total.Equal(stringAmount(t, "payment_amount", o.PaymentAmount)))
			assert.Equal(t, livePayTo, o.PaymentAddress)
			assert.Equal(t, "testnet", o.PaymentNetwork)
			if assert.NotNil(t, o.PaymentAssetIssuer) {
				assert.Equal(t, liveIssuer, *o.PaymentAssetIssuer)
			}
			assert.Contains(t, o.PaymentURI, testnetPassphraseEscaped)
			q := payQuery(t, o.PaymentURI)
			assert.Equal(t, livePayTo, q.Get("destination"))
			assert.Equal(t, "USDC", q.Get("asset_code"))
			assert.Equal(t, liveIssuer, q.Get("asset_issuer"))
			assert.Equal(t, models.StellarTestnet.Passphrase(), q.Get("network_passphrase"))
			assert.Equal(t, o.Number, q.Get("memo"))
			calls := e.wf.started()
			require.Len(t, calls, 1)
			assert.Equal(t, models.ModeLive, calls[0].Mode)

			// XLM needs a rate, and only test mode has a provider here.
			c2 := e.seedLiveCart(t, accountID)
			r = e.postOrder(t, live, orderBody(c2.ID, withAsset("XLM")), nil)
			requireError(t, r, http.StatusServiceUnavailable, models.CodeRateUnavailable, "")

			// A test key of the same account still gets the sandbox.
			key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
			cartID, _ := e.newCart(t, key)
			r = e.postOrder(t, key, orderBody(cartID), nil)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			tst := decodeCreated(t, r)
			assert.Equal(t, sandboxPayTo, tst.PaymentAddress)
			assert.NotContains(t, tst.PaymentURI, "network_passphrase")
		})
	})
}

// orderView is the order as retrieval serves it.
type orderView struct {
	ID                 string             `json:"id"`
	Number             string             `json:"number"`
	Status             string             `json:"status"`
	Total              json.RawMessage    `json:"total"`
	Currency           string             `json:"currency"`
	PaymentStatus      string             `json:"payment_status"`
	CreatedAt          string             `json:"created_at"`
	Tracking           trackingView       `json:"tracking"`
	Payment            paymentView        `json:"payment"`
	TrackingURL        string             `json:"tracking_url"`
	FailureReason      *string            `json:"failure_reason"`
	CancellationReason *string            `json:"cancellation_reason"`
	Shipments          []shipmentView     `json:"shipments"`
	Payments           []orderPaymentView `json:"payments"`
	Metadata           map[string]string  `json:"metadata"`
	RefundDestination  *destinationView   `json:"refund_destination"`
	Refunds            []refundView       `json:"refunds"`
}

// refundView is a refund as the API shows it.
type refundView struct {
	ID              string           `json:"id"`
	OrderID         *string          `json:"order_id"`
	PaymentIDs      []string         `json:"payment_ids"`
	Reason          string           `json:"reason"`
	Amount          string           `json:"amount"`
	Asset           string           `json:"asset"`
	Status          string           `json:"status"`
	Destination     *destinationView `json:"destination"`
	TransactionHash *string          `json:"transaction_hash"`
	FailureReason   *string          `json:"failure_reason"`
	ClaimURL        *string          `json:"claim_url"`
	CreatedAt       string           `json:"created_at"`
	ApprovedAt      *string          `json:"approved_at"`
	SentAt          *string          `json:"sent_at"`
	FailedAt        *string          `json:"failed_at"`
	CancelledAt     *string          `json:"cancelled_at"`
}

type orderPaymentView struct {
	ID                    string  `json:"id"`
	Network               string  `json:"network"`
	NetworkID             *string `json:"network_id"`
	TransactionHash       *string `json:"transaction_hash"`
	Asset                 string  `json:"asset"`
	Amount                string  `json:"amount"`
	ReceivedAt            string  `json:"received_at"`
	Outcome               string  `json:"outcome"`
	RefundedAt            *string `json:"refunded_at"`
	RefundTransactionHash *string `json:"refund_transaction_hash"`
}

type shipmentView struct {
	Carrier           string  `json:"carrier"`
	TrackingNumber    *string `json:"tracking_number"`
	TrackingURL       *string `json:"tracking_url"`
	Status            string  `json:"status"`
	EstimatedDelivery *string `json:"estimated_delivery"`
	Checkpoints       []struct {
		Time    string `json:"time"`
		Status  string `json:"status"`
		Message string `json:"message"`
		City    string `json:"city"`
		State   string `json:"state"`
		Country string `json:"country"`
		Zip     string `json:"zip"`
	} `json:"checkpoints"`
}

type trackingView struct {
	CurrentStep       string     `json:"current_step"`
	Carrier           *string    `json:"carrier"`
	TrackingNumber    *string    `json:"tracking_number"`
	EstimatedDelivery *string    `json:"estimated_delivery"`
	Steps             []stepView `json:"steps"`
}

type stepView struct {
	Name      string  `json:"name"`
	Completed bool    `json:"completed"`
	Timestamp *string `json:"timestamp"`
}

type paymentView struct {
	Network          string            `json:"network"`
	AssetIssuer      *string           `json:"asset_issuer"`
	MemoType         string            `json:"memo_type"`
	URI              string            `json:"uri"`
	ExchangeRate     *exchangeRateBody `json:"exchange_rate"`
	Asset            string            `json:"asset"`
	Amount           string            `json:"amount"`
	AmountReceived   string            `json:"amount_received"`
	AmountProcessing string            `json:"amount_processing"`
	AmountDue        string            `json:"amount_due"`
	AmountDueBack    string            `json:"amount_due_back"`
	Address          string            `json:"address"`
	Memo             string            `json:"memo"`
	ExpiresAt        string            `json:"expires_at"`
}

// getOrder is GET /v1/orders/{ref} with key, which must answer 200, decoded.
func (e *ordersEnv) getOrder(t *testing.T, key, ref string) orderView {
	t.Helper()
	r := e.get(t, "/v1/orders/"+ref, key)
	require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	return decodeOrderView(t, r)
}

func decodeOrderView(t *testing.T, r response) orderView {
	t.Helper()
	var body struct {
		Order orderView `json:"order"`
	}
	decodeStrict(t, r.body, &body)
	return body.Order
}

func TestGetOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
		o, total := e.newOrderTotal(t, key)
		e.clock.Advance(3 * time.Minute) // retrieval reports creation time, not now

		byID := e.get(t, "/v1/orders/"+o.ID, key)
		require.Equalf(t, http.StatusOK, byID.status, "body %s", byID.body)
		byNumber := e.get(t, "/v1/orders/"+o.Number, key)
		require.Equalf(t, http.StatusOK, byNumber.status, "body %s", byNumber.body)
		assert.JSONEq(t, string(byID.body), string(byNumber.body), "the same order by id and by number")

		tracking := rawObject(t, byID.body, "order", "tracking")
		for _, k := range []string{"carrier", "tracking_number", "estimated_delivery"} {
			assert.Equalf(t, "null", string(tracking[k]), "tracking.%s is null before shipment", k)
		}
		for _, k := range []string{"id", "number", "status", "total", "payment_status", "created_at", "tracking"} {
			assert.Contains(t, rawObject(t, byID.body, "order"), k, "contract field %q", k)
		}

		g := decodeOrderView(t, byID)
		assert.Equal(t, o.ID, g.ID)
		assert.Equal(t, o.Number, g.Number)
		assert.Equal(t, "created", g.Status)
		assert.Equal(t, "pending", g.PaymentStatus)
		assert.Equal(t, "USD", g.Currency)
		assert.True(t, total.Equal(amount(t, "total", g.Total)))
		assert.Equal(t, o.CreatedAt, g.CreatedAt)
		assert.Equal(t, o.TrackingURL, g.TrackingURL)

		assert.Equal(t, g.Status, g.Tracking.CurrentStep)
		require.Len(t, g.Tracking.Steps, 5)
		for i, name := range []string{"created", "paid", "ordered", "shipped", "delivered"} {
			st := g.Tracking.Steps[i]
			assert.Equal(t, name, st.Name, "step %d", i)
			if i == 0 {
				assert.True(t, st.Completed, "created is completed")
				if assert.NotNil(t, st.Timestamp) {
					assert.Equal(t, o.CreatedAt, *st.Timestamp)
				}
				continue
			}
			assert.Falsef(t, st.Completed, "%s is not completed", name)
			assert.Nilf(t, st.Timestamp, "%s has no timestamp", name)
		}
		steps := rawObject(t, byID.body, "order", "tracking")["steps"]
		assert.Contains(t, string(steps), `"timestamp":null`, "a pending step's timestamp is null, not absent")

		p := g.Payment
		assert.Equal(t, "USDC", p.Asset)
		assert.Equal(t, mustString(t, o.PaymentAmount), p.Amount)
		assert.Equal(t, "0", p.AmountReceived)
		assert.Equal(t, p.Amount, p.AmountDue)
		assert.Equal(t, sandboxPayTo, p.Address)
		assert.Equal(t, o.Number, p.Memo)
		assert.Equal(t, "text", p.MemoType)
		assert.Equal(t, "sandbox", p.Network)
		assert.Nil(t, p.AssetIssuer)
		assert.Equal(t, o.PaymentURI, p.URI)
		assert.Equal(t, o.PaymentExpiresAt, p.ExpiresAt)
		assert.Nil(t, p.ExchangeRate)

		assert.NotContains(t, string(byID.body), customerEmail)

		notFound := []struct {
			name, key, ref string
		}{
			{"another account by id", other, o.ID},
			{"another account by number", other, o.Number},
			{"other mode by id", live, o.ID},
			{"other mode by number", live, o.Number},
			{"unknown id", key, "ord_doesnotexist"},
			{"unknown number", key, otherOrderNumber(t, o.Number)},
		}
		for _, tt := range notFound {
			t.Run(tt.name, func(t *testing.T) {
				requireError(t, e.get(t, "/v1/orders/"+url.PathEscape(tt.ref), tt.key), http.StatusNotFound, models.CodeOrderNotFound, "")
			})
		}
		t.Run("no key", func(t *testing.T) {
			requireError(t, e.get(t, "/v1/orders/"+o.ID, ""), http.StatusUnauthorized, models.CodeMissingAPIKey, "")
		})
	})
}

func mustString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	require.NoErrorf(t, json.Unmarshal(raw, &s), "%s is not a JSON string", raw)
	return s
}

// otherOrderNumber returns a valid order number other than n.
func otherOrderNumber(t *testing.T, n string) string {
	t.Helper()
	for {
		m, err := models.NewOrderNumber(rand.Reader)
		require.NoError(t, err)
		if m != n {
			return m
		}
	}
}

type testPaymentView struct {
	Payment struct {
		ID      string `json:"id"`
		OrderID string `json:"order_id"`
		Asset   string `json:"asset"`
		Amount  string `json:"amount"`
		Memo    string `json:"memo"`
		Outcome string `json:"outcome"`
	} `json:"payment"`
}

func TestTestPayments(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		free, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
		o, total := e.newOrderTotal(t, key)
		full := stringAmount(t, "payment_amount", o.PaymentAmount)
		require.True(t, full.Equal(total))

		// pay sends one test payment that must succeed and returns what
		// the sandbox chain received.
		pay := func(t *testing.T, key, ref, body string) models.Payment {
			t.Helper()
			before := len(e.pay.all())
			r := e.post(t, "/v1/test_helpers/orders/"+ref+"/payments", key, body)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			sent := e.pay.all()
			require.Len(t, sent, before+1, "one payment sent")
			p := sent[len(sent)-1]
			var got testPaymentView
			decodeStrict(t, r.body, &got)
			assert.Equal(t, p.ID, got.Payment.ID)
			assert.Equal(t, o.ID, got.Payment.OrderID)
			assert.Equal(t, p.Asset, got.Payment.Asset)
			assert.Equal(t, p.Amount.String(), got.Payment.Amount)
			assert.Equal(t, o.Number, got.Payment.Memo)
			// The memo matched; a payment in another asset than the
			// order's (USDC) is handed over but never credited.
			want := models.PaymentOutcomeMatched
			if p.Asset != "USDC" {
				want = models.PaymentOutcomeWrongAsset
			}
			assert.Equal(t, string(want), got.Payment.Outcome, p.Asset)
			assert.Equal(t, models.ModeTest, p.Mode)
			assert.True(t, strings.HasPrefix(p.ID, "sandbox_"), p.ID)
			assert.Equal(t, o.Number, p.Memo, "the memo names the order")
			assert.True(t, p.ReceivedAt.Equal(e.clock.Now()), "received at %s", p.ReceivedAt)
			return p
		}

		t.Run("no body pays the full amount", func(t *testing.T) {
			p := pay(t, key, o.Number, "")
			assert.Equal(t, "USDC", p.Asset)
			assert.Truef(t, p.Amount.Equal(full), "amount %s, want %s", p.Amount, full)
		})
		t.Run("by id", func(t *testing.T) {
			p := pay(t, key, o.ID, "")
			assert.True(t, p.Amount.Equal(full))
		})
		t.Run("empty object pays the full amount", func(t *testing.T) {
			assert.True(t, pay(t, key, o.Number, `{}`).Amount.Equal(full))
		})
		t.Run("amount as a string", func(t *testing.T) {
			p := pay(t, key, o.Number, `{"amount":"1.5"}`)
			assert.Equal(t, "1.5", p.Amount.String())
		})
		t.Run("amount as a JSON number", func(t *testing.T) {
			p := pay(t, key, o.Number, `{"amount": 2}`)
			assert.Equal(t, "2", p.Amount.String())
		})
		t.Run("amount with 7 decimals", func(t *testing.T) {
			p := pay(t, key, o.Number, `{"amount": 0.1234567}`)
			assert.Equal(t, "0.1234567", p.Amount.String(), "exact, never through a float")
		})
		t.Run("asset", func(t *testing.T) {
			assert.Equal(t, "XLM", pay(t, key, o.Number, `{"asset":"XLM"}`).Asset)
			assert.Equal(t, "XLM", pay(t, key, o.Number, `{"asset":" xlm "}`).Asset)
			const foreignUSDC = "USDC:GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
			assert.Equal(t, foreignUSDC, pay(t, key, o.Number, `{"asset":"`+foreignUSDC+`"}`).Asset, "USDC of another issuer is not the order's")
		})
		t.Run("Free tier test key", func(t *testing.T) {
			pay(t, free, o.Number, "")
		})

		badAmounts := []string{`"-1"`, `"0"`, `"1.12345678"`, `1.12345678`, `"abc"`, `""`, `-3`, `true`, `"1e-8"`}
		for _, a := range badAmounts {
			t.Run("bad amount "+a, func(t *testing.T) {
				before := len(e.pay.all())
				r := e.post(t, "/v1/test_helpers/orders/"+o.Number+"/payments", key, `{"amount":`+a+`}`)
				requireError(t, r, http.StatusBadRequest, models.CodeInvalidRequest, "amount")
				assert.Len(t, e.pay.all(), before, "nothing sent")
			})
		}
		errCases := []struct {
			name, key, ref, body string
			status               int
			code                 models.Code
			field                string
		}{
			{"malformed body", key, o.Number, `{"amount":`, 400, models.CodeInvalidRequest, ""},
			{"unknown field", key, o.Number, `{"memo":"x"}`, 400, models.CodeInvalidRequest, "memo"},
			{"live key", live, o.Number, "", 403, models.CodeTestModeOnly, ""},
			{"another account", other, o.Number, "", 404, models.CodeOrderNotFound, ""},
			{"another account by id", other, o.ID, "", 404, models.CodeOrderNotFound, ""},
			{"unknown order", key, otherOrderNumber(t, o.Number), "", 404, models.CodeOrderNotFound, ""},
		}
		for _, tt := range errCases {
			t.Run(tt.name, func(t *testing.T) {
				before := len(e.pay.all())
				r := e.post(t, "/v1/test_helpers/orders/"+tt.ref+"/payments", tt.key, tt.body)
				requireError(t, r, tt.status, tt.code, tt.field)
				assert.Len(t, e.pay.all(), before, "nothing sent")
			})
		}
	})
}

func TestTrackingPage(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		o := e.newOrder(t, key)
		path := strings.TrimPrefix(o.TrackingURL, ordersPublicURL)
		require.Equal(t, "/track/"+o.Number, path)

		for name, p := range map[string]string{
			"tracking_url path": path,
			"with dashes":       "/track/" + o.Number[:4] + "-" + o.Number[4:8] + "-" + o.Number[8:],
		} {
			t.Run(name, func(t *testing.T) {
				page := e.get(t, p, "") // public: no key
				body := requireTrackingPage(t, page, http.StatusOK)
				assert.Contains(t, body, o.Number)
				assert.Contains(t, body, `id="status">Waiting for payment</p>`)
				for _, secret := range []string{customerEmail, customerName, customerLine1, "95014"} {
					assert.NotContainsf(t, body, secret, "the public page must not show %q", secret)
				}
				// What the payer needs, and nothing of who they are.
				assert.Contains(t, body, mustString(t, o.PaymentAmount)+" "+o.PaymentAsset)
				assert.Contains(t, body, sandboxPayTo)
				assert.Contains(t, body, o.PaymentMemo)
				assert.Contains(t, body, "Test order")
				text, ok := decodeQRSVG(t, body)
				require.True(t, ok, "a QR code while the order waits for payment")
				assert.Equal(t, o.PaymentURI, text, "the QR code scans to the order's payment_uri")
			})
		}
		for name, p := range map[string]string{
			"invalid number":       "/track/12345",
			"letters":              "/track/abc",
			"bad check digit":      "/track/" + o.Number[:10] + string('0'+(o.Number[10]-'0'+1)%10),
			"unknown valid number": "/track/" + otherOrderNumber(t, o.Number),
		} {
			t.Run(name, func(t *testing.T) {
				body := requireTrackingPage(t, e.get(t, p, ""), http.StatusNotFound)
				assert.NotContains(t, body, o.Number)
			})
		}
	})
}

// A payer who sent part of the amount and scans the link again is asked
// for what remains, not the whole amount a second time.
func TestPaymentLinkAsksForWhatRemains(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	o := e.newOrder(t, key)
	before := decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key))
	assert.Equal(t, o.PaymentURI, before.Payment.URI, "nothing received: the order's own link")
	total := decimal.RequireFromString(before.Payment.Amount)

	require.NoError(t, e.st.RecordTransition(t.Context(), o.ID, models.Transition{Status: models.OrderCreated,
		PaymentStatus: models.PaymentPartial, At: e.clock.Now(), AmountReceived: decimal.RequireFromString("1")}, time.Now()))
	v := decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key))
	due := total.Sub(decimal.RequireFromString("1"))
	require.Equal(t, due.String(), v.Payment.AmountDue)
	q := payQuery(t, v.Payment.URI)
	assert.Equal(t, due.String(), q.Get("amount"), "the link asks for amount_due")
	assert.Equal(t, o.Number, q.Get("memo"))

	require.NoError(t, e.st.RecordTransition(t.Context(), o.ID, models.Transition{Status: models.OrderPaid,
		PaymentStatus: models.PaymentConfirmed, At: e.clock.Now(), AmountReceived: total}, time.Now()))
	paid := decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key))
	assert.Equal(t, o.PaymentURI, paid.Payment.URI, "nothing due: the order's instructions as they were")
}

// noRefundRuns finds no refund run closed: the API's tests close none.
type noRefundRuns struct{}

func (noRefundRuns) RefundRunsClosed(context.Context, time.Time, time.Time) ([]string, error) {
	return nil, nil
}
