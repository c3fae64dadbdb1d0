package api_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/api/ratelimit/redistest"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// countingStore counts the lookups an id in a path or body leads to.
type countingStore struct {
	api.Store
	lookups atomic.Int64
}

func (s *countingStore) OrderForAccount(ctx context.Context, accountID string, mode models.Mode, ref string) (models.Order, error) {
	s.lookups.Add(1)
	return s.Store.OrderForAccount(ctx, accountID, mode, ref)
}

func (s *countingStore) Cart(ctx context.Context, accountID string, mode models.Mode, id string) (models.Cart, error) {
	s.lookups.Add(1)
	return s.Store.Cart(ctx, accountID, mode, id)
}

func (s *countingStore) CreateOrder(ctx context.Context, req models.OrderRequest) (models.Order, bool, error) {
	s.lookups.Add(1)
	return s.Store.CreateOrder(ctx, req)
}

func withCountingStore(c **countingStore) ordersOption {
	return func(s *ordersSetup) {
		d := &s.deps
		*c = &countingStore{Store: d.Store}
		d.Store = *c
	}
}

func withRequestTimeout(d time.Duration) ordersOption {
	return func(s *ordersSetup) { cfg := &s.cfg; cfg.RequestTimeout = d }
}

// TestHostileInputs sends what a hostile or careless client sends: NUL
// bytes and invalid UTF-8 in paths, bodies and headers, amounts in
// exponent notation, duplicate and miscased keys, bodies that are not
// declared JSON. Each gets its documented 4xx in the error envelope on
// both databases (Postgres refuses NUL and invalid UTF-8 with an error that
// used to become a 500), and ids that cannot exist never reach the store.
func TestHostileInputs(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		var counter *countingStore
		e := newOrdersEnv(t, dialect, withCountingStore(&counter))
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		r := e.postOrder(t, key, orderBody(cartID), nil)
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		order := decodeCreated(t, r)
		payPath := "/v1/test_helpers/orders/" + order.ID + "/payments"
		cartBody := func(postal string) string {
			return `{"items":[{"product_url":"` + amazonURL + `","quantity":1}],"ship_to_country":"US","ship_to_postal_code":` + postal + `}`
		}
		jsonCT := map[string]string{"Content-Type": "application/json"}

		// Ids of a shape no id has: 404 without a query.
		for _, tc := range []struct {
			name, method, path, body string
			code                     models.Code
		}{
			{"NUL as order ref", http.MethodGet, "/v1/orders/%00", "", models.CodeOrderNotFound},
			{"invalid UTF-8 as order ref", http.MethodGet, "/v1/orders/%ff", "", models.CodeOrderNotFound},
			{"id with NUL", http.MethodGet, "/v1/orders/" + order.ID[:10] + "%00", "", models.CodeOrderNotFound},
			{"number with a wrong check digit", http.MethodGet, "/v1/orders/" + order.Number[:10] + flipDigit(order.Number[10]), "", models.CodeOrderNotFound},
			{"invalid UTF-8 as cart id", http.MethodGet, "/v1/carts/%ff", "", models.CodeCartNotFound},
			{"NUL as cart id", http.MethodGet, "/v1/carts/crt_%00", "", models.CodeCartNotFound},
			{"test payment to NUL", http.MethodPost, "/v1/test_helpers/orders/%00/payments", `{}`, models.CodeOrderNotFound},
			{"cart_id of no cart's shape", http.MethodPost, "/v1/orders", orderBody("cart-that-is-not"), models.CodeCartNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := counter.lookups.Load()
				r := e.send(t, request{method: tc.method, path: tc.path, auth: "Bearer " + key, body: tc.body})
				requireError(t, r, http.StatusNotFound, tc.code, "")
				assert.Equal(t, before, counter.lookups.Load(), "the store was asked about an id that cannot exist")
			})
		}

		// Bodies: each refused with the field named.
		for _, tc := range []struct {
			name, path, body string
			header           map[string]string
			status           int
			code             models.Code
			field            string
		}{
			{"NUL in a postal code", "/v1/carts", cartBody(`"9\u00004"`), nil, 400, models.CodeInvalidRequest, "ship_to_postal_code"},
			{"invalid UTF-8 in a postal code", "/v1/carts", cartBody("\"9\xff4\""), nil, 400, models.CodeInvalidRequest, ""},
			{"NUL in a product URL", "/v1/carts", `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5\u0000","quantity":1}],"ship_to_country":"US"}`, nil, 400, models.CodeInvalidRequest, "items[0].product_url"},
			{"NUL in a preview URL", "/v1/products/preview", `{"url":"\u0000"}`, nil, 400, models.CodeInvalidRequest, "url"},
			{"NUL in a cart_id", "/v1/orders", orderBody("crt_\x00"), nil, 400, models.CodeInvalidRequest, "cart_id"},
			{"invalid UTF-8 in a cart_id", "/v1/orders", strings.Replace(orderBody(cartID), cartID, cartID[:6]+"\xff", 1), nil, 400, models.CodeInvalidRequest, ""},
			{"NUL in an address", "/v1/orders", orderBody(cartID, func(_, a map[string]any) { a["postal_code"] = "95\x00014" }), nil, 400, models.CodeInvalidRequest, "shipping_address.postal_code"},
			{"unknown field inside the address", "/v1/orders", orderBody(cartID, func(_, a map[string]any) { a["nme"] = "x" }), nil, 400, models.CodeInvalidRequest, "shipping_address.nme"},
			{"miscased key", "/v1/orders", strings.Replace(orderBody(cartID), `"cart_id"`, `"Cart_ID"`, 1), nil, 400, models.CodeInvalidRequest, "Cart_ID"},
			{"duplicate key", "/v1/orders", strings.Replace(orderBody(cartID), `"cart_id"`, `"cart_id":"x","cart_id"`, 1), nil, 400, models.CodeInvalidRequest, "cart_id"},
			{"Idempotency-Key of raw bytes", "/v1/orders", orderBody(cartID), map[string]string{"Idempotency-Key": "k\xff"}, 400, models.CodeInvalidRequest, "Idempotency-Key"},
			{"amount 1e400", payPath, `{"amount":"1e400"}`, nil, 400, models.CodeInvalidRequest, "amount"},
			{"JSON number 1e308", payPath, `{"amount":1e308}`, nil, 400, models.CodeInvalidRequest, "amount"},
			{"amount with 13 digits", payPath, `{"amount":"1234567890123"}`, nil, 400, models.CodeInvalidRequest, "amount"},
			{"amount given twice", payPath, `{"amount":"1.00","amount":12345}`, nil, 400, models.CodeInvalidRequest, "amount"},
			{"negative amount", payPath, `{"amount":"-1"}`, nil, 400, models.CodeInvalidRequest, "amount"},
			{"NUL as an asset", payPath, `{"asset":"\u0000"}`, nil, 400, models.CodeInvalidRequest, "asset"},
			{"asset that is no asset", payPath, `{"asset":"US DOLLARS"}`, nil, 400, models.CodeInvalidRequest, "asset"},
			{"text/plain body", "/v1/carts", cartBody(`"94"`), map[string]string{"Content-Type": "text/plain"}, 415, models.CodeUnsupportedMediaType, ""},
			{"no Content-Type", "/v1/carts", cartBody(`"94"`), map[string]string{"Content-Type": ""}, 415, models.CodeUnsupportedMediaType, ""},
			{"JSON in latin1", "/v1/carts", cartBody(`"94"`), map[string]string{"Content-Type": "application/json; charset=latin1"}, 415, models.CodeUnsupportedMediaType, ""},
			{"form body", payPath, `amount=1`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, models.CodeUnsupportedMediaType, ""},
			{"nested too deep", "/v1/products/preview", `{"url":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, nil, 400, models.CodeInvalidRequest, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.send(t, request{method: http.MethodPost, path: tc.path, auth: "Bearer " + key, body: tc.body, header: tc.header})
				requireError(t, r, tc.status, tc.code, tc.field)
			})
		}
		assert.Empty(t, e.pay.all(), "no refused test payment reached the sandbox chain")

		// What is allowed stays allowed: a charset, an issuer-qualified asset.
		r = e.send(t, request{method: http.MethodPost, path: "/v1/carts", auth: "Bearer " + key, body: cartBody(`"94"`),
			header: map[string]string{"Content-Type": "application/json; charset=UTF-8"}})
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		r = e.send(t, request{method: http.MethodPost, path: payPath, auth: "Bearer " + key, header: jsonCT,
			body: `{"amount":"1.5","asset":"usdc:GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"}`})
		require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
		require.Len(t, e.pay.all(), 1)
		assert.Equal(t, "USDC:GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN", e.pay.all()[0].Asset)
		assert.Equal(t, "1.5", e.pay.all()[0].Amount.String())
		// A number written with dashes is the same order.
		dashed := order.Number[:4] + "-" + order.Number[4:8] + "-" + order.Number[8:]
		r = e.get(t, "/v1/orders/"+dashed, key)
		require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	})
}

func flipDigit(c byte) string {
	if c == '9' {
		return "0"
	}
	return string(c + 1)
}

// TestPendingCreditShowsProcessing: money seen for an order but not yet
// credited by its workflow (the process died between storing a payment and
// the workflow recording it) reads "processing" with the amount, never
// "nothing received", so a client does not ask the payer to pay twice.
func TestPendingCreditShowsProcessing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		o := e.newOrder(t, key)
		ctx := t.Context()
		view := func() orderView {
			t.Helper()
			return e.getOrder(t, key, o.ID)
		}
		v := view()
		assert.Equal(t, "pending", v.PaymentStatus)
		assert.Equal(t, "0", v.Payment.AmountProcessing)

		pay := func(id, asset, amount string) models.Payment {
			return models.Payment{ID: id, Mode: models.ModeTest, Asset: asset, Amount: decimal.RequireFromString(amount),
				Memo: o.Number, Sender: "sandbox-payer", ReceivedAt: e.clock.Now()}
		}
		// Stored by the source, not yet matched.
		p1 := pay("sandbox:p1", "USDC", "10.00")
		_, err := e.st.SavePayment(ctx, p1, time.Now())
		require.NoError(t, err)
		v = view()
		assert.Equal(t, "processing", v.PaymentStatus)
		assert.Equal(t, "10", v.Payment.AmountProcessing)
		assert.Equal(t, "0", v.Payment.AmountReceived)

		// Matched to the order; and another one in a wrong asset, which is
		// never credited and so never "processing".
		require.NoError(t, e.st.SaveMatch(ctx, p1, o.ID, time.Now()))
		p2 := pay("sandbox:p2", "USDC", "2.5")
		require.NoError(t, e.st.SaveMatch(ctx, p2, o.ID, time.Now()))
		require.NoError(t, e.st.SaveMatch(ctx, pay("sandbox:p3", "XLM", "100"), o.ID, time.Now()))
		v = view()
		assert.Equal(t, "processing", v.PaymentStatus)
		assert.Equal(t, "12.5", v.Payment.AmountProcessing)

		// Recorded by the workflow: no longer pending credit.
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, p1, time.Now()))
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, p2, time.Now()))
		v = view()
		assert.Equal(t, "0", v.Payment.AmountProcessing)
		assert.Equal(t, "pending", v.PaymentStatus, "the transition is the workflow's; the payments are no longer in flight")
	})
}

// hardenedRequests are the requests a dependency outage is checked with:
// every kind of endpoint, each needing the database.
func hardenedRequests(key, orderID, cartID string) []request {
	auth := "Bearer " + key
	return []request{
		{method: http.MethodGet, path: "/v1/orders/" + orderID, auth: auth},
		{method: http.MethodPost, path: "/v1/carts", auth: auth, body: cartJSON("US", cartItemReq{ProductURL: amazonURL, Quantity: 1})},
		{method: http.MethodPost, path: "/v1/orders", auth: auth, body: orderBody(cartID)},
		{method: http.MethodPost, path: "/v1/test_helpers/orders/" + orderID + "/payments", auth: auth, body: `{}`},
		{method: http.MethodGet, path: "/readyz"},
	}
}

// requireUnavailable asserts a 503 service_unavailable in the envelope
// with Retry-After, answered within bound.
func requireUnavailable(t *testing.T, e *ordersEnv, req request, bound time.Duration) {
	t.Helper()
	start := time.Now()
	r := e.send(t, req)
	took := time.Since(start)
	requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
	assert.Equal(t, "2", r.header.Get("Retry-After"), "%s %s", req.method, req.path)
	assert.Lessf(t, took, bound, "%s %s answered after %s", req.method, req.path, took)
}

// eventuallyOK waits until the order reads again, without restarting
// anything on the service's side.
func eventuallyOK(t *testing.T, e *ordersEnv, key, orderID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return e.get(t, "/v1/orders/"+orderID, key).status == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond, "the service did not recover")
}

// TestPostgresDownOrHung stops, then freezes, a Postgres of the test's own
// (never the shared server): every endpoint answers 503 in the envelope
// with Retry-After within the request deadline, and the service recovers
// by itself once the database is back.
func TestPostgresDownOrHung(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	// The bound a client sees: the deadline plus the time to answer.
	const bound = timeout + 2*time.Second
	pg := sqlstoretest.StartPostgres(t)
	e := newOrdersEnvOn(t, pg.Open(t), withRequestTimeout(timeout))
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	cartID, _ := e.newCart(t, key)
	o := decodeCreated(t, e.postOrder(t, key, orderBody(cartID), nil))
	reqs := hardenedRequests(key, o.ID, cartID)
	// Keys this replica has not seen yet: authenticating them needs the
	// database. A key it has seen keeps working for what needs nothing
	// else (a sandbox preview).
	var unseen []string
	for range 3 {
		k, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		unseen = append(unseen, k)
	}
	preview := func(key string) request {
		return request{method: http.MethodPost, path: "/v1/products/preview", auth: "Bearer " + key, body: `{"url":"` + amazonURL + `"}`}
	}
	for i, outage := range []struct {
		name           string
		fail, recovery func()
	}{
		{"stopped", pg.Stop, pg.Start},
		{"killed", pg.Kill, pg.Start},
		{"hung", pg.Pause, pg.Resume},
	} {
		t.Run(outage.name, func(t *testing.T) {
			outage.fail()
			for _, req := range reqs {
				requireUnavailable(t, e, req, bound)
			}
			requireUnavailable(t, e, preview(unseen[i]), bound)
			r := e.send(t, preview(key))
			require.Equalf(t, http.StatusOK, r.status, "a known key's preview needs no database; body %s", r.body)
			outage.recovery()
			eventuallyOK(t, e, key, o.ID)
		})
	}
	// After all that, the same order reads the same, and a new one works.
	r := e.postOrder(t, key, orderBody(cartID), nil)
	require.Equalf(t, http.StatusOK, r.status, "the earlier order is replayed; body %s", r.body)
	assert.Equal(t, o.ID, decodeCreated(t, r).ID)
	cart2, _ := e.newCart(t, key)
	r = e.postOrder(t, key, orderBody(cart2), nil)
	require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
}

// TestSQLiteLockedAnswers503: SQLite has no server to stop, but another
// process can hold its write lock (an operator's shell, a stuck migration).
// Writes then answer 503 within the deadline, reads go on (WAL), and the
// service recovers when the lock goes.
func TestSQLiteLockedAnswers503(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	dsn := sqlstoretest.DSN(t, sqlstore.DialectSQLite)
	st, err := sqlstore.Open(t.Context(), dsn, nil)
	require.NoError(t, err)
	st.SetEventRenderer(sqlstoretest.Renderer{})
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(t.Context())
	require.NoError(t, err)
	e := newOrdersEnvOn(t, st, withRequestTimeout(timeout))
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	cartID, _ := e.newCart(t, key)
	o := decodeCreated(t, e.postOrder(t, key, orderBody(cartID), nil))

	// Another connection, as another process would, takes the write lock.
	path := strings.TrimPrefix(dsn, "sqlite://")
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	conn, err := raw.Conn(t.Context())
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	r := e.get(t, "/v1/orders/"+o.ID, key)
	require.Equalf(t, http.StatusOK, r.status, "reads go on under a writer; body %s", r.body)
	createCart := hardenedRequests(key, o.ID, cartID)[1]
	// SQLite's busy wait ignores the request's deadline: the bound is
	// whichever is longer.
	requireUnavailable(t, e, createCart, max(timeout, sqlstore.SQLiteBusyTimeout)+2*time.Second)

	_, err = conn.ExecContext(t.Context(), "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	r = e.send(t, createCart)
	require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
}

// TestRedisDownKeepsLimits: with the shared limiter's Redis stopped, then
// hung (an instance of the test's own), requests are not held up, keep
// their X-RateLimit-* headers, and a key stays limited (by the process's
// own budget) instead of going unlimited.
func TestRedisDownKeepsLimits(t *testing.T) {
	rd := redistest.Start(t)
	client := redis.NewClient(&redis.Options{
		Addr: rd.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond, PoolTimeout: 500 * time.Millisecond, MaxRetries: 1, ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	for _, tc := range []struct {
		name          string
		fail, recover func()
	}{{"stopped", rd.Stop, rd.Restart}, {"hung", rd.Pause, rd.Resume}} {
		t.Run(tc.name, func(t *testing.T) {
			// The local limiter's clock stands still, so no token refills
			// however slowly this machine serves the requests.
			frozen := time.Now()
			local := ratelimit.NewMemory(func() time.Time { return frozen })
			limiter := ratelimit.NewFallback(ratelimit.NewRedis(client, "t:"+tc.name+":"), local,
				ratelimit.FallbackOptions{Cooldown: time.Hour})
			e := newEnv(t, sqlstore.DialectSQLite, func(s *testStack) { s.deps.Limiter = limiter })
			key := e.key(t, "acme", models.ModeTest, models.TierFree)
			const path = "/v1/orders/ord_000000000000000000000000"
			r := e.get(t, path, key)
			requireError(t, r, http.StatusNotFound, models.CodeOrderNotFound, "")
			assert.Equal(t, "59", r.header.Get("X-RateLimit-Remaining"), "Redis answers while it is up")

			tc.fail()
			defer tc.recover()
			start := time.Now()
			r = e.get(t, path, key)
			took := time.Since(start)
			requireError(t, r, http.StatusNotFound, models.CodeOrderNotFound, "")
			assert.Lessf(t, took, 1500*time.Millisecond, "the first request after Redis %s took %s", tc.name, took)
			limited := 0
			for range 60 {
				r := e.get(t, path, key)
				if r.status == http.StatusTooManyRequests {
					limited++
					assert.NotEmpty(t, r.header.Get("Retry-After"))
				}
				for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
					assert.NotEmptyf(t, r.header.Get(h), "%s missing while Redis is %s", h, tc.name)
				}
			}
			// The process's own budget starts full: 61 requests since the
			// outage, of which the 61st is refused.
			assert.Equal(t, 1, limited, "a 60-per-minute key stays limited while Redis is %s", tc.name)
		})
	}
}

// sqlStateErr and codeErr behave like the drivers' errors (pgconn.PgError,
// modernc's sqlite.Error) without linking them.
type sqlStateErr string

func (e sqlStateErr) Error() string    { return "pg: " + string(e) }
func (e sqlStateErr) SQLState() string { return string(e) }

type codeErr int

func (e codeErr) Error() string { return fmt.Sprintf("sqlite: %d", int(e)) }
func (e codeErr) Code() int     { return int(e) }

// TestDependencyDown pins the one classification of failures into 503 and
// 500: what means "a dependency could not answer" and what is a bug.
func TestDependencyDown(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("reading order: %w", err) }
	for _, err := range []error{
		context.DeadlineExceeded,
		wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
		wrap(driver.ErrBadConn), wrap(sql.ErrConnDone), wrap(io.ErrUnexpectedEOF),
		wrap(sqlStateErr("08006")), wrap(sqlStateErr("57P01")), wrap(sqlStateErr("53300")), wrap(sqlStateErr("57014")),
		wrap(codeErr(5)), wrap(codeErr(5 | 2<<8)), wrap(codeErr(6)),
		wrap(serviceerror.NewUnavailable("frontend down")), wrap(serviceerror.NewDeadlineExceeded("slow")),
		wrap(serviceerror.NewResourceExhausted(0, "busy")),
		errors.New("failed to deallocate cached statement(s): conn closed"),
	} {
		assert.Truef(t, api.DependencyDown(err), "%v is a dependency failure", err)
	}
	for _, err := range []error{
		nil, errors.New("boom"), wrap(sqlStateErr("23505")), wrap(sqlStateErr("22021")), wrap(codeErr(19)),
		wrap(serviceerror.NewInvalidArgument("bad")), wrap(serviceerror.NewNotFound("gone")),
	} {
		assert.Falsef(t, api.DependencyDown(err), "%v is not a dependency failure", err)
	}
}

// TestNoProfilesOnThePublicAddress: pprof lives on the opt-in admin
// listener only (cmd/memocart), never on the API's routes.
func TestNoProfilesOnThePublicAddress(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
		r := e.send(t, request{method: http.MethodGet, path: path})
		requireError(t, r, http.StatusNotFound, models.CodeNotFound, "")
	}
}

// TestOrderPayments: GET /v1/orders/{ref} lists every payment seen for the
// order, oldest first, with where it was seen and what became of it, so a
// client reconciles without asking an operator. Payments of other orders,
// and unmatched ones of another mode with the same memo, are not listed.
func TestOrderPayments(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		o := e.newOrder(t, key)
		otherCart, _ := e.newCart(t, key)
		other := decodeCreated(t, e.postOrder(t, key, orderBody(otherCart), nil))
		ctx := t.Context()
		view := func() orderView {
			t.Helper()
			return e.getOrder(t, key, o.ID)
		}
		v := view()
		assert.NotNil(t, v.Payments, "payments is an empty list, not null")
		assert.Empty(t, v.Payments)
		assert.Contains(t, string(e.get(t, "/v1/orders/"+o.ID, key).body), `"payments":[]`)

		base := e.clock.Now().UTC().Truncate(time.Second)
		pay := func(id, asset, amount string, after time.Duration) models.Payment {
			return models.Payment{ID: id, Mode: models.ModeTest, Asset: asset, Amount: decimal.RequireFromString(amount),
				Memo: o.Number, Sender: "GSENDER", ReceivedAt: base.Add(after)}
		}
		// Credited: seen on Stellar testnet, recorded by the workflow.
		credited := pay("stellar:testnet:4294971393", "USDC", "10.5", time.Second)
		credited.TxHash = "3389e9f0f1a65f19736cacf544c2e825313e8447f569233bb8db39aa607c8889"
		_, err := e.st.SavePayment(ctx, credited, time.Now())
		require.NoError(t, err)
		require.NoError(t, e.st.SaveMatch(ctx, credited, o.ID, time.Now()))
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, credited, time.Now()))
		// Wrong asset: recorded, never credited.
		wrong := pay("sandbox_wrongasset", "XLM", "40", 2*time.Second)
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, wrong, time.Now()))
		// Refunded: a wrong-asset payment an operator sent back.
		refunded := pay("sandbox_refunded", "EURC:"+models.DefaultUSDCIssuer(models.StellarPubnet), "3", 3*time.Second)
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, refunded, time.Now()))
		require.NoError(t, e.st.MarkPaymentRefunded(ctx, refunded.ID, "refundtxhash", base.Add(time.Hour)))
		// Manual: recorded by an operator through the workflow.
		manual := pay("manual:ticket-4711", "USDC", "1", 4*time.Second)
		require.NoError(t, e.st.RecordPayment(ctx, o.ID, manual, time.Now()))
		// Matched, not yet recorded by the workflow: processing.
		inFlight := pay("sandbox_inflight", "USDC", "2", 5*time.Second)
		require.NoError(t, e.st.SaveMatch(ctx, inFlight, o.ID, time.Now()))
		// Stored by a source, not through the matcher yet: processing too.
		seen := pay("sandbox_seen", "USDC", "0.25", 6*time.Second)
		_, err = e.st.SavePayment(ctx, seen, time.Now())
		require.NoError(t, err)
		// Not this order's: another order's payment, and a live payment
		// with this memo (a memo names an order within a mode only).
		require.NoError(t, e.st.RecordPayment(ctx, other.ID, models.Payment{ID: "sandbox_other", Mode: models.ModeTest,
			Asset: "USDC", Amount: decimal.RequireFromString("5"), Memo: other.Number, ReceivedAt: base}, time.Now()))
		liveSeen := pay("stellar:pubnet:1", "USDC", "7", 0)
		liveSeen.Mode = models.ModeLive
		_, err = e.st.SavePayment(ctx, liveSeen, time.Now())
		require.NoError(t, err)

		v = view()
		assert.Equal(t, "2.25", v.Payment.AmountProcessing, "processing payments in the order's asset")
		ids := func(v orderView) []string {
			var out []string
			for _, p := range v.Payments {
				out = append(out, p.ID)
			}
			return out
		}
		require.Equal(t, []string{credited.ID, wrong.ID, refunded.ID, manual.ID, inFlight.ID, seen.ID}, ids(v), "oldest first, only this order's")
		ts := func(at time.Time) string { return at.UTC().Format(time.RFC3339) }
		str := func(s string) *string { return &s }
		assert.Equal(t, orderPaymentView{ID: credited.ID, Network: "testnet", NetworkID: str("4294971393"), TransactionHash: str(credited.TxHash),
			Asset: "USDC", Amount: "10.5", ReceivedAt: ts(credited.ReceivedAt), Outcome: "credited"}, v.Payments[0])
		assert.Equal(t, orderPaymentView{ID: wrong.ID, Network: "sandbox", Asset: "XLM", Amount: "40",
			ReceivedAt: ts(wrong.ReceivedAt), Outcome: "wrong_asset"}, v.Payments[1])
		assert.Equal(t, orderPaymentView{ID: refunded.ID, Network: "sandbox", Asset: refunded.Asset, Amount: "3",
			ReceivedAt: ts(refunded.ReceivedAt), Outcome: "refunded", RefundedAt: str(ts(base.Add(time.Hour))),
			RefundTransactionHash: str("refundtxhash")}, v.Payments[2])
		assert.Equal(t, orderPaymentView{ID: manual.ID, Network: "manual", Asset: "USDC", Amount: "1",
			ReceivedAt: ts(manual.ReceivedAt), Outcome: "credited"}, v.Payments[3])
		assert.Equal(t, "processing", v.Payments[4].Outcome)
		assert.Equal(t, "processing", v.Payments[5].Outcome)
		assert.Equal(t, "0.25", v.Payments[5].Amount)

		// The order closes (cancelled at its deadline); a payment after
		// that is late. The unattached one no longer shows until the
		// matcher attaches it.
		require.NoError(t, e.st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCancelled,
			PaymentStatus: models.PaymentRefundDue, At: base.Add(time.Minute), AmountReceived: decimal.RequireFromString("11.5")}, time.Now()))
		late := pay("sandbox_late", "USDC", "9", 7*time.Second)
		require.NoError(t, e.st.SaveMatch(ctx, late, o.ID, time.Now()))
		if late, err := e.st.MarkPaymentLate(ctx, late.ID, base.Add(2*time.Minute)); assert.NoError(t, err) {
			assert.True(t, late, "marked late")
		}
		v = view()
		assert.Equal(t, []string{credited.ID, wrong.ID, refunded.ID, manual.ID, inFlight.ID, late.ID}, ids(v))
		assert.Equal(t, "late", v.Payments[5].Outcome)
		assert.Equal(t, "0", v.Payment.AmountProcessing, "nothing is pending on a closed order")
		assert.Equal(t, "refund_due", v.PaymentStatus)
	})
}

// TestAmbiguousInputsRefused: input that Go's parsers would read one way
// among several, or silently repair, is refused in the envelope naming
// the parameter or field, never guessed: a query pair holding ';' or a
// bad %-escape (dropped by url.ParseQuery, so the list came back
// unfiltered), a query parameter given twice (the first won), a claim
// form field given twice, to_sender with a memo (stored beside it), and
// a JSON string escaping half a surrogate pair (stored as U+FFFD).
func TestAmbiguousInputsRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		c := e.newClaimRefund(t, key)

		for _, tc := range []struct{ name, path, field string }{
			{"a ';' in the refunds' status", "/v1/refunds?status=sent;x", "status"},
			{"a ';' in the orders' status", "/v1/orders?status=created;x", "status"},
			{"a ';' after limit", "/v1/orders?limit=1;x", "limit"},
			{"a ';' between parameters", "/v1/refunds?order_id=" + c.orderID + ";status=sent", "order_id"},
			{"a bad %-escape", "/v1/refunds?status=%zz", "status"},
			{"a bad %-escape in a name", "/v1/refunds?st%zzatus=sent", "st%zzatus"},
			{"status twice", "/v1/refunds?status=sent&status=failed", "status"},
			{"limit twice on deliveries", "/v1/webhook_endpoints/we_0000000000000000000000/deliveries?limit=5&limit=500", "limit"},
			{"a ';' on a route that reads no query", "/v1/orders/" + c.orderID + "?expand=x;y", "expand"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, e.get(t, tc.path, key), http.StatusBadRequest, models.CodeInvalidRequest, tc.field)
			})
		}
		// An escaped ';' is a value like any other (and no status).
		requireError(t, e.get(t, "/v1/refunds?status=sent%3Bx", key), http.StatusBadRequest, models.CodeInvalidRequest, "status")
		ok := e.get(t, "/v1/refunds?status=awaiting_destination&limit=1", key)
		require.Equalf(t, http.StatusOK, ok.status, "body %s", ok.body)

		for _, tc := range []struct {
			name, body string
			status     int
			code       models.Code
			field      string
		}{
			{"to_sender with a memo", `{"to_sender":true,"memo_type":"text","memo":"x"}`, 422, models.CodeInvalidRefundDestination, "refund_destination.memo_type"},
			{"to_sender with a memo, no type", `{"to_sender":true,"memo":"x"}`, 422, models.CodeInvalidRefundDestination, "refund_destination.memo"},
			{"a lone high surrogate in a memo", `{"address":"` + refundAccount + `","memo_type":"text","memo":"\ud800"}`, 400, models.CodeInvalidRequest, "memo"},
			{"a lone low surrogate in a memo", `{"address":"` + refundAccount + `","memo_type":"text","memo":"a\udc00b"}`, 400, models.CodeInvalidRequest, "memo"},
			{"a high surrogate before a non-surrogate", `{"address":"` + refundAccount + `","memo_type":"text","memo":"\ud83d\u0041"}`, 400, models.CodeInvalidRequest, "memo"},
			{"a lone surrogate in a key", `{"address":"` + refundAccount + `","\ud800":"x"}`, 400, models.CodeInvalidRequest, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, e.setDestination(t, key, c.orderID, tc.body), tc.status, tc.code, tc.field)
			})
		}
		requireError(t, e.send(t, request{method: http.MethodPost, path: "/v1/products/preview", auth: "Bearer " + key, body: `{"url":"https://www.amazon.com/dp/B07XJ8C8F5\udfff"}`}),
			http.StatusBadRequest, models.CodeInvalidRequest, "url")
		assert.Nil(t, decodeOrderView(t, e.get(t, "/v1/orders/"+c.orderID, key)).RefundDestination, "nothing refused was stored")

		// The claim form: a field given twice is refused, not the first
		// taken.
		claim := e.postClaim(t, c.token, url.Values{"address": {refundAccount, refundAccount2}})
		assert.Equal(t, http.StatusUnprocessableEntity, claim.status)
		assert.Contains(t, string(claim.body), "The form sent address 2 times")
		assert.Regexp(t, `id="address"[^>]* aria-invalid="true"`, string(claim.body))
		claim = e.postClaim(t, c.token, url.Values{"address": {refundAccount}, "memo_type": {"none", "id"}})
		assert.Equal(t, http.StatusUnprocessableEntity, claim.status)
		assert.Regexp(t, `id="memo_type"[^>]* aria-invalid="true"`, string(claim.body))
		assert.Equal(t, "awaiting_destination", e.readRefund(t, key, c.refundID).Status, "nothing was set")

		// A surrogate pair is a character like any other, escaped or not.
		set := e.setDestination(t, key, c.orderID, `{"address":"`+refundAccount+`","memo_type":"text","memo":"\ud83d\ude00 \\ud800 ok"}`)
		require.Equalf(t, http.StatusOK, set.status, "body %s", set.body)
		v := decodeOrderView(t, set)
		require.NotNil(t, v.RefundDestination)
		assert.Equal(t, "\U0001F600 \\ud800 ok", *v.RefundDestination.Memo)

	})
}
