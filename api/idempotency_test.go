package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// ---- Fakes ----

// idemStore counts the carts the handler creates (how many times a request
// really ran) and can lose the record of a request's answer, as a process
// dying between answering and recording would.
type idemStore struct {
	api.Store
	carts atomic.Int64
	// forget, while set, drops CompleteIdempotencyKey and
	// ReleaseIdempotencyKey: the key stays in flight forever.
	forget atomic.Bool
}

func (s *idemStore) CreateCart(ctx context.Context, c models.Cart) error {
	s.carts.Add(1)
	return s.Store.CreateCart(ctx, c)
}

func (s *idemStore) CompleteIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string, resp models.StoredResponse, now time.Time) (bool, error) {
	if s.forget.Load() {
		return true, nil
	}
	return s.Store.CompleteIdempotencyKey(ctx, sc, token, resp, now)
}

func (s *idemStore) ReleaseIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string) (bool, error) {
	if s.forget.Load() {
		return true, nil
	}
	return s.Store.ReleaseIdempotencyKey(ctx, sc, token)
}

// gateCatalog is the sandbox catalog behind switches: a gate that holds
// lookups until opened, an error, and a panic.
type gateCatalog struct {
	inner   api.Catalog
	mu      sync.Mutex
	gate    chan struct{} // while not nil, lookups wait for it to close
	entered chan struct{} // receives once per lookup that waits at the gate
	err     error
	panics  int // lookups left that panic
}

func (g *gateCatalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	g.mu.Lock()
	gate, entered, err := g.gate, g.entered, g.err
	panics := g.panics > 0
	if panics {
		g.panics--
	}
	g.mu.Unlock()
	if panics {
		panic("catalog bug")
	}
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return models.Product{}, ctx.Err()
		}
	}
	if err != nil {
		return models.Product{}, err
	}
	return g.inner.Product(ctx, ref)
}

// hold makes lookups wait until the returned function is called.
func (g *gateCatalog) hold() (entered <-chan struct{}, open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate, ent := make(chan struct{}), make(chan struct{}, 16)
	g.gate, g.entered = gate, ent
	return ent, func() {
		g.mu.Lock()
		g.gate = nil
		g.mu.Unlock()
		close(gate)
	}
}

func (g *gateCatalog) set(err error, panics int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err, g.panics = err, panics
}

type idemEnv struct {
	*ordersEnv
	store   *idemStore
	catalog *gateCatalog
}

func newIdemEnv(t *testing.T, dialect string) *idemEnv {
	t.Helper()
	ie := &idemEnv{catalog: &gateCatalog{inner: sandbox.NewCatalog()}}
	ie.ordersEnv = newOrdersEnv(t, dialect, func(s *ordersSetup) {
		d := &s.deps
		ie.store = &idemStore{Store: d.Store}
		d.Store = ie.store
		s.catalogs = map[models.Mode]api.Catalog{models.ModeTest: ie.catalog}
	})
	return ie
}

// firstCart creates a cart (cartBodyA) under the Idempotency-Key idemKey,
// which must be a first answer, not a replay.
func (e *idemEnv) firstCart(t *testing.T, key, idemKey string) response {
	t.Helper()
	r := e.postKey(t, key, "/v1/carts", idemKey, cartBodyA)
	requireFirst(t, r, http.StatusCreated)
	return r
}

// postKey sends a POST with an Idempotency-Key (none if key is "").
func (e *idemEnv) postKey(t *testing.T, apiKey, path, idemKey, body string) response {
	t.Helper()
	h := map[string]string{}
	if idemKey != "" {
		h["Idempotency-Key"] = idemKey
	}
	return e.send(t, request{method: http.MethodPost, path: path, auth: "Bearer " + apiKey, body: body, header: h})
}

func cartIDOf(t *testing.T, r response) string {
	t.Helper()
	var b struct {
		Cart struct {
			ID string `json:"id"`
		} `json:"cart"`
	}
	require.NoErrorf(t, json.Unmarshal(r.body, &b), "body %s", r.body)
	require.NotEmptyf(t, b.Cart.ID, "body %s", r.body)
	return b.Cart.ID
}

// requireFirst asserts an answer that ran the request (not a replay).
func requireFirst(t *testing.T, r response, status int) {
	t.Helper()
	require.Equalf(t, status, r.status, "body %s", r.body)
	assert.Empty(t, r.header.Get("Idempotent-Replayed"), "not a replay")
}

// requireReplay asserts that r replays first exactly.
func requireReplay(t *testing.T, first, r response) {
	t.Helper()
	require.Equalf(t, first.status, r.status, "a replay answers the first status; body %s", r.body)
	assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	assert.Equal(t, string(first.body), string(r.body), "a replay answers the first body, byte for byte")
	assert.Equal(t, first.header.Get("Content-Type"), r.header.Get("Content-Type"))
	assert.NotEqual(t, first.header.Get("X-Request-Id"), r.header.Get("X-Request-Id"), "the request id is the replay's own")
	assert.NotEmpty(t, r.header.Get("X-RateLimit-Remaining"), "rate-limit headers are the replay's own")
}

const (
	cartBodyA = `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5","quantity":2}],"ship_to_country":"US"}`
	// cartBodyA re-serialised: other key order, other spacing.
	cartBodyA2 = "{ \"ship_to_country\" : \"US\",\n \"items\" : [ { \"quantity\" : 2, \"product_url\" : \"https://www.amazon.com/dp/B07XJ8C8F5\" } ] }"
	cartBodyB  = `{"items":[{"product_url":"https://www.amazon.com/dp/B07XJ8C8F5","quantity":3}],"ship_to_country":"US"}`
)

// ---- Tests ----

func TestIdempotencyReplay(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		first := e.firstCart(t, key, "cart-1")
		require.EqualValues(t, 1, e.store.carts.Load())

		t.Run("same request replays", func(t *testing.T) {
			requireReplay(t, first, e.postKey(t, key, "/v1/carts", "cart-1", cartBodyA))
			requireReplay(t, first, e.postKey(t, key, "/v1/carts", "cart-1", cartBodyA2))
			assert.EqualValues(t, 1, e.store.carts.Load(), "a replay does not run the request")
		})
		t.Run("another body is 422", func(t *testing.T) {
			d := requireError(t, e.postKey(t, key, "/v1/carts", "cart-1", cartBodyB), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
			assert.Contains(t, d.Message, "POST /v1/carts", "the message says what the key was used for")
			assert.EqualValues(t, 1, e.store.carts.Load())
		})
		t.Run("another path is 422", func(t *testing.T) {
			requireError(t, e.postKey(t, key, "/v1/products/preview", "cart-1", cartBodyA), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
		})
		t.Run("another key runs", func(t *testing.T) {
			r := e.firstCart(t, key, "cart-2")
			assert.NotEqual(t, cartIDOf(t, first), cartIDOf(t, r))
			assert.EqualValues(t, 2, e.store.carts.Load())
		})
		t.Run("no key runs every time", func(t *testing.T) {
			before := e.store.carts.Load()
			requireFirst(t, e.postKey(t, key, "/v1/carts", "", cartBodyA), http.StatusCreated)
			requireFirst(t, e.postKey(t, key, "/v1/carts", "", cartBodyA), http.StatusCreated)
			assert.Equal(t, before+2, e.store.carts.Load())
		})
		t.Run("a refusal (4xx) is kept", func(t *testing.T) {
			body := `{"items":[{"product_url":"https://www.amazon.com/dp/B0UNAVAIL0","quantity":1}],"ship_to_country":"US"}`
			r := e.postKey(t, key, "/v1/carts", "unavailable", body)
			requireError(t, r, http.StatusUnprocessableEntity, models.CodeProductUnavailable, anyField)
			assert.Empty(t, r.header.Get("Idempotent-Replayed"))
			requireReplay(t, r, e.postKey(t, key, "/v1/carts", "unavailable", body))
		})
		t.Run("a body over the limit is not remembered", func(t *testing.T) {
			big := `{"items":[],"ship_to_country":"` + strings.Repeat("U", 70<<10) + `"}`
			requireError(t, e.postKey(t, key, "/v1/carts", "big", big), http.StatusBadRequest, models.CodeInvalidRequest, "")
			requireFirst(t, e.postKey(t, key, "/v1/carts", "big", cartBodyA), http.StatusCreated)
		})
		t.Run("GET ignores the header", func(t *testing.T) {
			cartID := cartIDOf(t, first)
			for range 2 {
				r := e.send(t, request{method: http.MethodGet, path: "/v1/carts/" + cartID, auth: "Bearer " + key,
					header: map[string]string{"Idempotency-Key": "cart-1"}})
				require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
				assert.Empty(t, r.header.Get("Idempotent-Replayed"))
			}
		})
	})
}

// TestIdempotencyOrders: order creation answers through the same mechanism
// (its own cart→order uniqueness stays underneath).
func TestIdempotencyOrders(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		cartID, _ := e.newCart(t, key)
		body := orderBody(cartID)

		first := e.postKey(t, key, "/v1/orders", "order-1", body)
		requireFirst(t, first, http.StatusCreated)
		requireReplay(t, first, e.postKey(t, key, "/v1/orders", "order-1", body))
		assert.Len(t, e.wf.started(), 1)

		// A workflow start that fails is a 503: not kept. The retry runs,
		// finds the committed order and starts it.
		cart2, _ := e.newCart(t, key)
		e.wf.fail(context.DeadlineExceeded)
		r := e.postKey(t, key, "/v1/orders", "order-2", orderBody(cart2))
		requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
		e.wf.fail(nil)
		retry := e.postKey(t, key, "/v1/orders", "order-2", orderBody(cart2))
		require.Equalf(t, http.StatusOK, retry.status, "the order existed: 200; body %s", retry.body)
		assert.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
		requireReplay(t, retry, e.postKey(t, key, "/v1/orders", "order-2", orderBody(cart2)))
		requireError(t, e.postKey(t, key, "/v1/orders", "order-2", body), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")

		// After 24 hours the key's record has expired, but the order still
		// carries its key: the same request finds its order (200), another
		// is still refused.
		e.clock.Advance(models.IdempotencyTTL)
		late := e.postKey(t, key, "/v1/orders", "order-1", body)
		require.Equalf(t, http.StatusOK, late.status, "body %s", late.body)
		assert.Equal(t, "true", late.header.Get("Idempotent-Replayed"))
		assert.Equal(t, decodeCreated(t, first).ID, decodeCreated(t, late).ID)
		requireError(t, e.postKey(t, key, "/v1/orders", "order-2", body), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
		assert.Len(t, e.wf.started(), 3, "the first order, and order-2's failed start and its retry")
	})
}

func TestIdempotencyConcurrentRequests(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		t.Run("while the first runs", func(t *testing.T) {
			entered, open := e.catalog.hold()
			done := make(chan response, 1)
			go func() { done <- e.postKey(t, key, "/v1/carts", "slow", cartBodyA) }()
			<-entered // the first request is inside its handler, holding the key

			r := e.postKey(t, key, "/v1/carts", "slow", cartBodyA)
			requireError(t, r, http.StatusConflict, models.CodeIdempotencyKeyInUse, "")
			assert.Equal(t, "1", r.header.Get("Retry-After"))
			requireError(t, e.postKey(t, key, "/v1/carts", "slow", cartBodyB), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")

			open()
			first := <-done
			requireFirst(t, first, http.StatusCreated)
			requireReplay(t, first, e.postKey(t, key, "/v1/carts", "slow", cartBodyA))
		})
		t.Run("a burst of the same request", func(t *testing.T) {
			before := e.store.carts.Load()
			const n = 8
			results := make([]response, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { results[i] = e.postKey(t, key, "/v1/carts", "burst", cartBodyA) })
			}
			wg.Wait()
			assert.Equal(t, before+1, e.store.carts.Load(), "exactly one of them ran")
			var ran *response
			for i, r := range results {
				switch {
				case r.status == http.StatusConflict:
					requireError(t, r, http.StatusConflict, models.CodeIdempotencyKeyInUse, "")
				case r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "":
					require.Nil(t, ran, "two requests ran")
					ran = &results[i]
				default:
					require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
				}
			}
			require.NotNil(t, ran, "one request ran")
			for _, r := range results {
				if r.status == http.StatusCreated {
					assert.Equal(t, string(ran.body), string(r.body), "replays answer what the one that ran answered")
				}
			}
		})
	})
}

func TestIdempotencyKeysExpire(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		first := e.firstCart(t, key, "day")

		e.clock.Advance(models.IdempotencyTTL - time.Second)
		requireReplay(t, first, e.postKey(t, key, "/v1/carts", "day", cartBodyA))
		n, err := e.srv.PurgeIdempotencyKeys(t.Context())
		require.NoError(t, err)
		assert.Zero(t, n, "nothing has expired yet")

		e.clock.Advance(time.Second)
		again := e.firstCart(t, key, "day")
		assert.NotEqual(t, cartIDOf(t, first), cartIDOf(t, again), "after 24 hours the request runs anew")
		requireReplay(t, again, e.postKey(t, key, "/v1/carts", "day", cartBodyA))

		// Another key, expired and purged: free for another request.
		requireFirst(t, e.postKey(t, key, "/v1/carts", "purged", cartBodyA), http.StatusCreated)
		e.clock.Advance(models.IdempotencyTTL)
		n, err = e.srv.PurgeIdempotencyKeys(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 2, n, "both keys expired")
		requireFirst(t, e.postKey(t, key, "/v1/carts", "purged", cartBodyB), http.StatusCreated)
	})
}

// TestIdempotencyStaleReservation: a request whose process died holding
// its key (the answer never recorded) blocks retries only until it is
// presumed dead: the request timeout plus a margin.
func TestIdempotencyStaleReservation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		e.store.forget.Store(true)
		e.firstCart(t, key, "crash") // answered, its key left in flight
		e.store.forget.Store(false)

		requireError(t, e.postKey(t, key, "/v1/carts", "crash", cartBodyA), http.StatusConflict, models.CodeIdempotencyKeyInUse, "")
		e.clock.Advance(api.DefaultRequestTimeout)
		requireError(t, e.postKey(t, key, "/v1/carts", "crash", cartBodyA), http.StatusConflict, models.CodeIdempotencyKeyInUse, "")
		e.clock.Advance(api.IdempotencyStaleMargin)
		requireError(t, e.postKey(t, key, "/v1/carts", "crash", cartBodyB), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")

		before := e.store.carts.Load()
		retry := e.firstCart(t, key, "crash")
		assert.Equal(t, before+1, e.store.carts.Load(), "the retry took the key over and ran")
		requireReplay(t, retry, e.postKey(t, key, "/v1/carts", "crash", cartBodyA))
	})
}

// TestIdempotencyServerErrorsAreNotKept: a 5xx says nothing about the
// request, so its retry runs again; the key stays bound to the request.
func TestIdempotencyServerErrorsAreNotKept(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

		t.Run("503", func(t *testing.T) {
			e.catalog.set(models.ErrMarketplaceUnavailable, 0)
			requireError(t, e.postKey(t, key, "/v1/carts", "down", cartBodyA), http.StatusServiceUnavailable, models.CodeMarketplaceUnavailable, "")
			requireError(t, e.postKey(t, key, "/v1/carts", "down", cartBodyB), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
			e.catalog.set(nil, 0)
			r := e.firstCart(t, key, "down")
			requireReplay(t, r, e.postKey(t, key, "/v1/carts", "down", cartBodyA))
		})
		t.Run("500 from a panic", func(t *testing.T) {
			e.catalog.set(nil, 1)
			requireError(t, e.postKey(t, key, "/v1/carts", "bug", cartBodyA), http.StatusInternalServerError, models.CodeInternal, "")
			r := e.firstCart(t, key, "bug")
			requireReplay(t, r, e.postKey(t, key, "/v1/carts", "bug", cartBodyA))
		})
	})
}

func TestIdempotencyKeysArePerAccountAndMode(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		acme, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		globex, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
		acmeLive, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)

		a := e.postKey(t, acme, "/v1/carts", "shared", cartBodyA)
		requireFirst(t, a, http.StatusCreated)
		g := e.postKey(t, globex, "/v1/carts", "shared", cartBodyA)
		requireFirst(t, g, http.StatusCreated)
		assert.NotEqual(t, cartIDOf(t, a), cartIDOf(t, g), "another account's key is its own")
		requireFirst(t, e.postKey(t, globex, "/v1/carts", "other", cartBodyB), http.StatusCreated)
		requireReplay(t, a, e.postKey(t, acme, "/v1/carts", "shared", cartBodyA))
		requireReplay(t, g, e.postKey(t, globex, "/v1/carts", "shared", cartBodyA))

		path := "/v1/test_helpers/orders/32205377465/payments"
		live := e.postKey(t, acmeLive, path, "mode", "")
		requireError(t, live, http.StatusForbidden, models.CodeTestModeOnly, "")
		test := e.postKey(t, acme, path, "mode", "")
		requireError(t, test, http.StatusNotFound, models.CodeOrderNotFound, "")
		assert.Empty(t, test.header.Get("Idempotent-Replayed"), "the test key's request is not the live key's")
	})
}

// TestIdempotencyOnEveryPOSTRoute walks the routes the server registers:
// a POST route added under /v1 is checked here without editing this test.
func TestIdempotencyOnEveryPOSTRoute(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	var routes []string
	for _, r := range newTestServer(t, api.Config{}, api.Deps{}).Routes() {
		if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/v1/") {
			routes = append(routes, r.Path)
		}
	}
	require.GreaterOrEqual(t, len(routes), 4, "preview, carts, orders, test payments at least")

	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newIdemEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierEnterprise)
		other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierEnterprise)
		for _, route := range routes {
			t.Run(route, func(t *testing.T) {
				segs := strings.Split(route, "/")
				for i, s := range segs {
					if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
						segs[i] = "x"
					}
				}
				path := strings.Join(segs, "/")

				first := e.postKey(t, key, path, "k-"+route, `{}`)
				require.Lessf(t, first.status, 500, "an empty object must be refused, not fail; body %s", first.body)
				assert.Empty(t, first.header.Get("Idempotent-Replayed"))
				requireReplay(t, first, e.postKey(t, key, path, "k-"+route, `{ }`))
				requireError(t, e.postKey(t, key, path, "k-"+route, `{"something":"else"}`), http.StatusUnprocessableEntity, models.CodeIdempotencyMismatch, "")
				o := e.postKey(t, other, path, "k-"+route, `{}`)
				assert.Empty(t, o.header.Get("Idempotent-Replayed"), "another account's key")
				for name, bad := range map[string]string{"256 characters": strings.Repeat("k", 256), "not ASCII": "clé"} {
					t.Run(name, func(t *testing.T) {
						requireError(t, e.postKey(t, key, path, bad, `{}`), http.StatusBadRequest, models.CodeInvalidRequest, "Idempotency-Key")
					})
				}

				// The document says so for this route.
				p := v.match(path)
				require.NotNil(t, p, "documented")
				op := p.item.Post
				require.NotNil(t, op)
				var hasParam bool
				for _, prm := range op.Parameters {
					hasParam = hasParam || prm.Value != nil && prm.Value.Name == "Idempotency-Key" && prm.Value.In == "header"
				}
				assert.True(t, hasParam, "the Idempotency-Key header parameter")
				for _, status := range []int{http.StatusConflict, http.StatusUnprocessableEntity} {
					assert.NotNilf(t, op.Responses.Status(status), "a %d response", status)
				}
				for status, ref := range op.Responses.Map() {
					if strings.HasPrefix(status, "2") {
						assert.Containsf(t, ref.Value.Headers, "Idempotent-Replayed", "the %s response's Idempotent-Replayed header", status)
					}
				}
			})
		}
	})
}

// TestIdempotencySlowRequestIsKept: a request that runs longer than the
// time allowed to record its answer still has it recorded (that time
// starts when the handler returns). One database: this is about timing.
func TestIdempotencySlowRequestIsKept(t *testing.T) {
	e := newIdemEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	entered, open := e.catalog.hold()
	done := make(chan response, 1)
	go func() { done <- e.postKey(t, key, "/v1/carts", "slow", cartBodyA) }()
	<-entered
	time.Sleep(6 * time.Second) // over the 5 s given to recording, under the 10 s request timeout
	open()
	first := <-done
	requireFirst(t, first, http.StatusCreated)
	requireReplay(t, first, e.postKey(t, key, "/v1/carts", "slow", cartBodyA))
}

// flakyTestPayments is a sandbox chain that keeps every payment it is sent
// but answers the first as an outage would after storing it (the matcher
// stored and matched the payment, then could not signal the workflow).
type flakyTestPayments struct {
	recordingTestPayments
}

func (p *flakyTestPayments) Send(ctx context.Context, pay models.Payment) (models.PaymentOutcome, error) {
	out, _ := p.recordingTestPayments.Send(ctx, pay)
	if len(p.all()) == 1 {
		return "", fmt.Errorf("signalling the workflow: %w", models.ErrUnavailable)
	}
	return out, nil
}

// TestTestPaymentRetryIsTheSamePayment: a test payment retried under its
// Idempotency-Key after a 503 (the first attempt's payment already stored)
// is the same payment, not a second one; found by `make chaos`, where
// orders ended overpaid.
func TestTestPaymentRetryIsTheSamePayment(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		chain := &flakyTestPayments{}
		oe := newOrdersEnv(t, dialect, func(s *ordersSetup) { s.testPayments = chain })
		e := &idemEnv{ordersEnv: oe}
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		o := e.newOrder(t, key)
		path := "/v1/test_helpers/orders/" + o.ID + "/payments"

		requireError(t, e.postKey(t, key, path, "pay-1", ""), http.StatusServiceUnavailable, models.CodeUnavailable, "")
		retry := e.postKey(t, key, path, "pay-1", "")
		require.Equalf(t, http.StatusCreated, retry.status, "body %s", retry.body)
		sent := chain.all()
		require.Len(t, sent, 2)
		assert.Equal(t, sent[0].ID, sent[1].ID, "the retry is the same payment")
		assert.Contains(t, string(retry.body), sent[0].ID)
		assert.True(t, models.ValidID("sandbox", sent[0].ID), sent[0].ID)

		// Another key is another payment; so is each request without one.
		require.Equal(t, http.StatusCreated, e.postKey(t, key, path, "pay-2", "").status)
		require.Equal(t, http.StatusCreated, e.postKey(t, key, path, "", "").status)
		require.Equal(t, http.StatusCreated, e.postKey(t, key, path, "", "").status)
		sent = chain.all()
		require.Len(t, sent, 5)
		ids := map[string]bool{}
		for _, p := range sent[1:] {
			ids[p.ID] = true
		}
		assert.Len(t, ids, 4, "pay-1, pay-2 and two keyless payments")
	})
}
