package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/clocktest"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// testCartTTL is the cart lifetime the contract promises.
const testCartTTL = 30 * time.Minute

// fakeClock is the clock shared by the server and its limiter.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	// A fractional second, so second-truncation bugs in timestamps show.
	return clocktest.New(time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC))
}

// env is one server under test on a fresh database, served over real HTTP.
type env struct {
	st    *sqlstore.Store
	clock *fakeClock
	ts    *httptest.Server
}

// option adjusts what the server is built from; deps.Store already holds
// the real store, so an option can wrap it.
type option func(*testStack)

func withStore(wrap func(api.Store) api.Store) option {
	return func(s *testStack) { s.deps.Store = wrap(s.deps.Store) }
}

func withCatalogs(c map[models.Mode]api.Catalog) option {
	return func(s *testStack) { s.catalogs = c }
}

func newEnv(t *testing.T, dialect string, opts ...option) *env {
	t.Helper()
	st := sqlstoretest.Open(t, dialect)
	clock := newFakeClock()
	stack := testStack{
		cfg:  api.Config{KeyPrefix: "mc"},
		deps: api.Deps{Store: st, Limiter: ratelimit.NewMemory(clock.Now), Now: clock.Now},
	}
	for _, o := range opts {
		o(&stack)
	}
	srv, _ := stack.server(t)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &env{st: st, clock: clock, ts: ts}
}

// forEachDialect runs fn once per database the store supports here.
func forEachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

// key creates an account (or reuses it, by name) with a new key.
func (e *env) key(t *testing.T, account string, mode models.Mode, tier models.Tier) string {
	t.Helper()
	secret, _ := sqlstoretest.MustAccount(t, e.st, account, mode, tier)
	return secret
}

// enterpriseKey creates a test-mode Enterprise key with its own budget.
func (e *env) enterpriseKey(t *testing.T, account string, perMinute int) string {
	t.Helper()
	ctx := context.Background()
	acct, err := e.st.EnsureAccount(ctx, account, e.clock.Now())
	require.NoError(t, err)
	secret, err := models.NewAPIKeySecret("mc", models.ModeTest, rand.Reader)
	require.NoError(t, err)
	_, err = e.st.CreateAPIKey(ctx, sqlstore.NewAPIKey{
		Secret: secret, AccountID: acct.ID, Mode: models.ModeTest,
		Tier: models.TierEnterprise, PerMinute: perMinute, CreatedAt: e.clock.Now(),
	})
	require.NoError(t, err)
	return secret
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// request is one HTTP request to the server; auth is the whole
// Authorization header value ("" sends none).
type request struct {
	method string
	path   string
	auth   string
	body   string
	header map[string]string
}

func (e *env) send(t *testing.T, r request) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), r.method, e.ts.URL+r.path, body)
	require.NoError(t, err)
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	res, err := e.ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	// Every response must be one api/openapi.json documents (openapi_test.go).
	checkOpenAPI(t, req, res.StatusCode, res.Header, b)
	// Every JSON body ends with a newline, as encoding/json's Encoder
	// writes it: answers, errors and replays alike.
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && len(b) > 0 {
		assert.Truef(t, bytes.HasSuffix(b, []byte("}\n")), "%s %s: JSON body does not end with a newline: %q", r.method, r.path, b)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// post sends a JSON body with a bearer key.
func (e *env) post(t *testing.T, path, key, body string) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: path, auth: "Bearer " + key, body: body})
}

func (e *env) get(t *testing.T, path, key string) response {
	t.Helper()
	auth := ""
	if key != "" {
		auth = "Bearer " + key
	}
	return e.send(t, request{method: http.MethodGet, path: path, auth: auth})
}

func previewBody(url string) string {
	b, _ := json.Marshal(map[string]string{"url": url})
	return string(b)
}

// anyField skips the check of the error's field.
const anyField = "\x00any"

type errorDetail struct {
	Code    models.Code `json:"code"`
	Message string      `json:"message"`
	Field   *string     `json:"field"`
}

// errorCase is a request body that must fail with the contract's error
// body of status and code, naming field ("" when none).
type errorCase struct {
	name   string
	body   string
	status int
	code   models.Code
	field  string
}

// requireError asserts the contract's error body, exactly
// {"error":{"code","message"[,"field"]}}, with the given status and code.
// field "" means the body must name no field.
func requireError(t *testing.T, r response, status int, code models.Code, field string) errorDetail {
	t.Helper()
	require.Equalf(t, status, r.status, "status; body: %s", r.body)
	assert.Contains(t, r.header.Get("Content-Type"), "application/json")
	assert.NotEmpty(t, r.header.Get("X-Request-Id"), "every response carries X-Request-Id")
	var body struct {
		Error *errorDetail `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	require.NoErrorf(t, dec.Decode(&body), "error body %s", r.body)
	require.NotNilf(t, body.Error, "no error object in %s", r.body)
	assert.Equalf(t, code, body.Error.Code, "code; body: %s", r.body)
	assert.NotEmpty(t, body.Error.Message, "message")
	switch {
	case field == anyField:
	case field == "":
		assert.Nilf(t, body.Error.Field, "no field expected; body: %s", r.body)
	default:
		if assert.NotNilf(t, body.Error.Field, "field %q expected; body: %s", field, r.body) {
			assert.Equal(t, field, *body.Error.Field, "field")
		}
	}
	return *body.Error
}

// decodeStrict decodes a success body into v, refusing unknown fields.
func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoErrorf(t, dec.Decode(v), "body %s", b)
}

var moneyRE = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)

// amount asserts that raw is a bare JSON number (not a string) with two
// decimals, and returns it exactly.
func amount(t *testing.T, name string, raw json.RawMessage) decimal.Decimal {
	t.Helper()
	require.Regexpf(t, moneyRE, string(raw), "%s must be a JSON number with 2 decimals, got %s", name, raw)
	d, err := decimal.NewFromString(string(raw))
	require.NoError(t, err)
	return d
}

// ---- Fakes ----

// failingStore wraps a working store and fails chosen calls with errors
// that carry secrets, as a leaky driver error would.
type failingStore struct {
	api.Store
	createCartErr error
	authErr       error
	pingErr       error
}

func (s failingStore) CreateCart(ctx context.Context, c models.Cart) error {
	if s.createCartErr != nil {
		return s.createCartErr
	}
	return s.Store.CreateCart(ctx, c)
}

func (s failingStore) AuthenticateAPIKey(ctx context.Context, hash string) (models.APIKey, error) {
	if s.authErr != nil {
		return models.APIKey{}, s.authErr
	}
	return s.Store.AuthenticateAPIKey(ctx, hash)
}

func (s failingStore) Ping(ctx context.Context) error {
	if s.pingErr != nil {
		return s.pingErr
	}
	return s.Store.Ping(ctx)
}

// panickingCatalog is a catalog with a bug.
type panickingCatalog struct{}

func (panickingCatalog) Product(context.Context, models.ProductRef) (models.Product, error) {
	panic("catalog exploded: secret-panic-detail")
}

const secretDetail = "pq: password=hunter2"

// ---- Tests ----

func TestHealthAndReadiness(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ok := newEnv(t, dialect)
		down := newEnv(t, dialect, withStore(func(s api.Store) api.Store {
			return failingStore{Store: s, pingErr: errors.New(secretDetail)}
		}))

		t.Run("healthz needs no key", func(t *testing.T) {
			r := down.get(t, "/healthz", "")
			require.Equal(t, http.StatusOK, r.status)
			assert.JSONEq(t, `{"status":"ok"}`, string(r.body))
			assert.NotEmpty(t, r.header.Get("X-Request-Id"))
		})
		t.Run("readyz with a working store", func(t *testing.T) {
			r := ok.get(t, "/readyz", "")
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			assert.JSONEq(t, `{"status":"ready"}`, string(r.body))
		})
		t.Run("readyz with a failing store", func(t *testing.T) {
			r := down.get(t, "/readyz", "")
			requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
			assert.NotContains(t, string(r.body), "hunter2")
		})
	})
}

// TestJSONAnswersEndWithANewline: every JSON body the API writes ends with
// "\n", as encoding/json's Encoder writes it, whichever way it is written:
// a handler's answer, an error, an idempotent replay. (send checks the
// same on every request of these tests.)
func TestJSONAnswersEndWithANewline(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	key := e.key(t, "acme", models.ModeTest, models.TierPro)
	cart := `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5","quantity":1}],"ship_to_country":"US"}`
	idem := map[string]string{"Idempotency-Key": "newline-1"}
	for _, tt := range []struct {
		name   string
		req    request
		status int
	}{
		{"health", request{method: http.MethodGet, path: "/healthz"}, http.StatusOK},
		{"a handler's answer", request{method: http.MethodPost, path: "/v1/products/preview", auth: "Bearer " + key, body: previewBody("https://www.amazon.com/dp/B07XJ8C8F5")}, http.StatusOK},
		{"first answer under a key", request{method: http.MethodPost, path: "/v1/carts", auth: "Bearer " + key, body: cart, header: idem}, http.StatusCreated},
		{"its replay", request{method: http.MethodPost, path: "/v1/carts", auth: "Bearer " + key, body: cart, header: idem}, http.StatusCreated},
		{"an error", request{method: http.MethodGet, path: "/v1/orders/ord_nope", auth: "Bearer " + key}, http.StatusNotFound},
		{"no key", request{method: http.MethodGet, path: "/v1/orders/ord_nope"}, http.StatusUnauthorized},
		{"no route", request{method: http.MethodGet, path: "/nope"}, http.StatusNotFound},
		{"the OpenAPI document", request{method: http.MethodGet, path: "/v1/openapi.json"}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.send(t, tt.req)
			require.Equalf(t, tt.status, r.status, "body %s", r.body)
			assert.Truef(t, strings.HasPrefix(r.header.Get("Content-Type"), "application/json"), "Content-Type %q", r.header.Get("Content-Type"))
			require.NotEmpty(t, r.body)
			assert.Equal(t, byte('\n'), r.body[len(r.body)-1], "%q", r.body)
			if tt.req.path != "/v1/openapi.json" { // a document, indented
				assert.Equal(t, 1, bytes.Count(r.body, []byte("\n")), "one line, one newline: %q", r.body)
			}
		})
	}
}

func TestRoutingErrors(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	key := e.key(t, "acme", models.ModeTest, models.TierPro)
	tests := []struct {
		name   string
		method string
		path   string
		status int
		code   models.Code
	}{
		{"unknown top-level route", http.MethodGet, "/nope", http.StatusNotFound, models.CodeNotFound},
		{"unknown v1 route", http.MethodGet, "/v1/nope", http.StatusNotFound, models.CodeNotFound},
		{"unknown version", http.MethodPost, "/v2/carts", http.StatusNotFound, models.CodeNotFound},
		{"GET on the cart collection", http.MethodGet, "/v1/carts", http.StatusMethodNotAllowed, models.CodeMethodNotAllowed},
		{"GET on preview", http.MethodGet, "/v1/products/preview", http.StatusMethodNotAllowed, models.CodeMethodNotAllowed},
		{"DELETE on a cart", http.MethodDelete, "/v1/carts/crt_x", http.StatusMethodNotAllowed, models.CodeMethodNotAllowed},
		{"POST on healthz", http.MethodPost, "/healthz", http.StatusMethodNotAllowed, models.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.send(t, request{method: tt.method, path: tt.path, auth: "Bearer " + key})
			requireError(t, r, tt.status, tt.code, "")
		})
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	saneRE := regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	tests := []struct {
		name string
		sent string
		echo bool
	}{
		{"none sent", "", false},
		{"sane id is echoed", "client-req_42.a", true},
		{"64 characters is echoed", strings.Repeat("a", 64), true},
		{"65 characters is replaced", strings.Repeat("a", 65), false},
		{"100 characters is replaced", strings.Repeat("b", 100), false},
		{"spaces are replaced", "hello world", false},
		{"log injection is replaced", "id\";drop", false},
	}
	for _, tt := range tests {
		for _, path := range []string{"/healthz", "/nope", "/v1/carts"} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				r := e.send(t, request{method: http.MethodGet, path: path, header: map[string]string{"X-Request-Id": tt.sent}})
				got := r.header.Get("X-Request-Id")
				if tt.echo {
					assert.Equal(t, tt.sent, got)
					return
				}
				assert.NotEqual(t, tt.sent, got)
				assert.Regexp(t, saneRE, got)
			})
		}
	}
	t.Run("generated ids differ", func(t *testing.T) {
		a := e.get(t, "/healthz", "").header.Get("X-Request-Id")
		b := e.get(t, "/healthz", "").header.Get("X-Request-Id")
		assert.NotEmpty(t, a)
		assert.NotEqual(t, a, b)
	})
}

func TestStoreFailureIsGenericInternalError(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		leak := fmt.Errorf("storing cart: %w", errors.New(secretDetail))
		e := newEnv(t, dialect, withStore(func(s api.Store) api.Store { return failingStore{Store: s, createCartErr: leak} }))
		key := e.key(t, "acme", models.ModeTest, models.TierFree)

		r := e.post(t, "/v1/carts", key, `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5","quantity":1}],"ship_to_country":"US"}`)
		d := requireError(t, r, http.StatusInternalServerError, models.CodeInternal, "")
		assert.Equal(t, models.DefaultMessage(models.CodeInternal), d.Message)
		assert.NotContains(t, string(r.body), "hunter2")
		assert.NotContains(t, string(r.body), "pq:")

		// The server keeps serving after the failure.
		r = e.post(t, "/v1/products/preview", key, previewBody("https://www.amazon.com/dp/B07XJ8C8F5"))
		assert.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	})
}

func TestCatalogPanicInPreview(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite, withCatalogs(map[models.Mode]api.Catalog{models.ModeTest: panickingCatalog{}}))
	key := e.key(t, "acme", models.ModeTest, models.TierFree)
	for i := range 2 {
		t.Run(fmt.Sprintf("request %d", i+1), func(t *testing.T) {
			r := e.post(t, "/v1/products/preview", key, previewBody("https://www.amazon.com/dp/B07XJ8C8F5"))
			d := requireError(t, r, http.StatusInternalServerError, models.CodeInternal, "")
			assert.Equal(t, models.DefaultMessage(models.CodeInternal), d.Message)
			assert.NotContains(t, string(r.body), "exploded")
		})
	}
	r := e.get(t, "/healthz", "")
	assert.Equal(t, http.StatusOK, r.status, "server keeps serving after a panic")
}

// envCartPanicChild marks the child process of TestCatalogPanicInCart.
const envCartPanicChild = "MEMOCART_API_TEST_CART_PANIC_CHILD"

// TestCatalogPanicInCart runs the panicking cart request in a child
// process: if the panic escapes the recovery middleware (for example from a
// goroutine the handler started) it kills the process, and in this process
// it would take every other test down with it.
func TestCatalogPanicInCart(t *testing.T) {
	if os.Getenv(envCartPanicChild) == "1" {
		e := newEnv(t, sqlstore.DialectSQLite, withCatalogs(map[models.Mode]api.Catalog{models.ModeTest: panickingCatalog{}}))
		key := e.key(t, "acme", models.ModeTest, models.TierFree)
		r := e.post(t, "/v1/carts", key, `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5","quantity":1}],"ship_to_country":"US"}`)
		requireError(t, r, http.StatusInternalServerError, models.CodeInternal, "")
		assert.NotContains(t, string(r.body), "exploded")
		assert.Equal(t, http.StatusOK, e.get(t, "/healthz", "").status, "server keeps serving after a panic")
		return
	}
	if testing.Short() {
		t.Skip("spawns a child test process")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCatalogPanicInCart$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envCartPanicChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		crashed := bytes.Contains(out, []byte("panic: catalog exploded"))
		t.Fatalf("POST /v1/carts with a panicking catalog: child test failed (%v), process crashed by the panic: %v\n%s", err, crashed, firstLines(out, 40))
	}
}

func firstLines(b []byte, lines int) []byte {
	parts := bytes.Split(b, []byte("\n"))
	if len(parts) > lines {
		parts = parts[:lines]
	}
	return bytes.Join(parts, []byte("\n"))
}

// testStack is what a test server is built from: the API's config and
// deps, and its use cases' config, rates, catalogs and refund workflows
// (deps.Workflows when nil), as cmd builds them.
type testStack struct {
	cfg      api.Config
	deps     api.Deps
	uses     checkout.Config
	rates    map[models.Mode]api.RateProvider
	catalogs map[models.Mode]api.Catalog
	refunds  checkout.RefundWorkflows
	// testPayments is the sandbox chain (one that records, when nil).
	testPayments api.TestPayments
}

// server builds the API, filling what the test left out: a SQLite store,
// a limiter, workflows that record (on no store), the sandbox's catalog.
func (s testStack) server(t testing.TB) (*api.Server, *checkout.Orders) {
	t.Helper()
	if s.deps.Store == nil {
		s.deps.Store = sqlstoretest.Open(t, sqlstore.DialectSQLite)
	}
	if s.deps.Limiter == nil {
		s.deps.Limiter = ratelimit.NewMemory(s.deps.Now)
	}
	if s.deps.Workflows == nil {
		s.deps.Workflows = &recordingWorkflows{}
	}
	if s.refunds == nil {
		s.refunds = s.deps.Workflows.(checkout.RefundWorkflows)
	}
	if s.catalogs == nil {
		s.catalogs = map[models.Mode]api.Catalog{models.ModeTest: sandbox.NewCatalog()}
	}
	if s.uses.Payments == nil {
		s.uses.Payments = s.cfg.Payments
	}
	var err error
	s.deps.Carts, err = checkout.NewCarts(checkout.CartsConfig{Pricing: models.DefaultPricingRules(), TTL: testCartTTL},
		s.catalogs, s.deps.Store, s.deps.Now)
	require.NoError(t, err)
	var events checkout.Events = noEvents{}
	if s.deps.Events != nil {
		events = s.deps.Events
	}
	s.deps.Orders, err = checkout.NewOrders(s.uses, s.deps.Store, s.deps.Workflows, events, s.rates, s.deps.Now, nil)
	require.NoError(t, err)
	s.deps.Refunds, err = checkout.NewRefunds(s.uses, s.deps.Store, s.deps.Store, s.refunds, noRefundRuns{}, s.deps.Now, nil)
	require.NoError(t, err)
	if s.testPayments == nil {
		s.testPayments = &recordingTestPayments{}
	}
	s.deps.TestHelpers, err = checkout.NewTestHelpers(s.deps.Store, s.testPayments, s.deps.Workflows.(checkout.TestWorkflows), s.deps.Now)
	require.NoError(t, err)
	srv, err := api.NewServer(s.cfg, s.deps)
	require.NoError(t, err)
	return srv, s.deps.Orders
}

// newTestServer builds the API on cfg and deps (testStack.server).
func newTestServer(t testing.TB, cfg api.Config, deps api.Deps) *api.Server {
	t.Helper()
	srv, _ := testStack{cfg: cfg, deps: deps}.server(t)
	return srv
}

// noEvents dispatches nothing: the outbox sweep's part, which the tests
// without webhook endpoints leave out.
type noEvents struct{}

func (noEvents) DispatchOrderEvents(context.Context, string) error { return nil }
