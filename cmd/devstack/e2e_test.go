package main

// End-to-end tests: the real `devstack dev` command in this process, with
// its embedded Temporal server, worker and HTTP API on free ports, against
// SQLite and a fresh Postgres database, driven over real HTTP. Nothing is
// mocked. They are the slow part of `make test` (the package links the
// Temporal server), which is why the Makefile runs them as their own step.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
	"github.com/memocart/memocart/workflows"
)

var recordHistories = flag.Bool("record-histories", false, "write workflow histories of a delivered and a cancelled order to workflows/testdata")

// syncBuffer is a bytes.Buffer safe for the writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stack is one running `devstack dev`.
type stack struct {
	t        testing.TB
	env      map[string]string
	baseURL  string
	temporal string
	key      string
	client   client.Client
	// stop shuts the stack down (as a crash or a deploy would) and waits.
	stop func()
	// out is what dev printed on stdout (its banner); log, on stderr.
	out *syncBuffer
	log *syncBuffer
}

var (
	apiLine      = regexp.MustCompile(`API:\s+(http://\S+)`)
	temporalLine = regexp.MustCompile(`Temporal:\s+(\S+) \(`)
	keyLine      = regexp.MustCompile(`Test API key:\s+(\S+)`)
)

// run runs this binary's command args[0], as main does.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return app.Run(ctx, args, getenv, stdout, stderr, commands()...)
}

// startDev runs `devstack dev` with the given overrides (and flags, e.g.
// -no-worker) until the test ends, and waits for it to print its
// addresses and key.
func startDev(t testing.TB, dialect string, overrides map[string]string, flags ...string) *stack {
	t.Helper()
	env := map[string]string{
		"MEMOCART_DATA_DIR":           t.TempDir(),
		"MEMOCART_HTTP_ADDR":          "127.0.0.1:0",
		"MEMOCART_TEMPORAL_ADDRESS":   "127.0.0.1:0",
		"MEMOCART_TEMPORAL_UI_PORT":   "-1",
		"MEMOCART_DEV_API_KEY":        "mc_test_e2eDevKey0123456789",
		"MEMOCART_SANDBOX_STEP_DELAY": "150ms",
		"MEMOCART_RECONCILE_INTERVAL": "300ms",
		"MEMOCART_LOG_LEVEL":          "info",
	}
	// The API listens on a free port, so tracking links get a fixed base.
	env["MEMOCART_PUBLIC_URL"] = "https://track.example.test"
	if _, given := overrides["MEMOCART_DATABASE_URL"]; dialect == "postgres" && !given {
		env["MEMOCART_DATABASE_URL"] = sqlstoretest.DSN(t, "postgres")
	}
	for k, v := range overrides {
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }

	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"dev"}, flags...), getenv, out, errOut) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("devstack dev exited with: %v\nstderr:\n%s", err, errOut.String())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("devstack dev did not shut down within 30s")
			}
		})
	}
	t.Cleanup(stop)
	t.Cleanup(func() {
		if t.Failed() {
			lines := strings.Split(errOut.String(), "\n")
			t.Logf("last lines of devstack dev's log:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})

	deadline := time.Now().Add(90 * time.Second)
	for {
		s := out.String()
		if m := apiLine.FindStringSubmatch(s); m != nil {
			st := &stack{t: t, env: env, baseURL: m[1], temporal: temporalLine.FindStringSubmatch(s)[1], key: keyLine.FindStringSubmatch(s)[1], stop: stop, out: out, log: errOut}
			c, err := client.Dial(client.Options{HostPort: st.temporal, Namespace: "default"})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			st.client = c
			return st
		}
		select {
		case err := <-done:
			t.Fatalf("devstack dev exited early: %v\nstderr:\n%s", err, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("devstack dev did not start in time\nstdout:\n%s\nstderr:\n%s", s, errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createKey runs `memocart keys create` against the stack's database, as
// an operator would while dev runs, and returns the printed key.
func (s *stack) createKey(account, mode, tier string, extra ...string) string {
	s.t.Helper()
	var out, errOut syncBuffer
	args := append([]string{"keys", "create", "--account", account, "--mode", mode, "--tier", tier}, extra...)
	err := run(context.Background(), args, func(k string) string { return s.env[k] }, &out, &errOut)
	require.NoError(s.t, err, errOut.String())
	key := strings.TrimSpace(out.String())
	require.Regexp(s.t, `^mc_`+mode+`_[0-9A-Za-z]{32}$`, key, "stdout holds the key and nothing else")
	return key
}

// do sends a JSON request with the given key and decodes the JSON answer.
func (s *stack) do(key, method, path string, body any, headers ...string) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.baseURL+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var out map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	require.NoError(s.t, dec.Decode(&out))
	return resp.StatusCode, out
}

func obj(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func str(m map[string]any, key string) string {
	switch v := m[key].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

var shipTo = map[string]any{
	"name": "Ada Lovelace", "phone": "+1 415 555 0100", "line1": "1 Market St",
	"city": "San Francisco", "region": "CA", "postal_code": "94107", "country": "US",
}

// newCart creates a cart of the given product URLs with the key.
func (s *stack) newCart(key string, urls ...string) string {
	s.t.Helper()
	items := make([]map[string]any, len(urls))
	for i, u := range urls {
		items[i] = map[string]any{"product_url": u, "quantity": 1}
	}
	code, body := s.do(key, "POST", "/v1/carts", map[string]any{"items": items, "ship_to_country": "US"})
	require.Equal(s.t, http.StatusCreated, code, body)
	return str(obj(body, "cart"), "id")
}

func orderBody(cartID string) map[string]any {
	return map[string]any{"cart_id": cartID, "customer_email": "ada@example.com", "payment_asset": "USDC", "shipping_address": shipTo}
}

// newOrder creates an order from a fresh cart and returns it.
func (s *stack) newOrder(key string, urls ...string) map[string]any {
	s.t.Helper()
	code, body := s.do(key, "POST", "/v1/orders", orderBody(s.newCart(key, urls...)))
	require.Equal(s.t, http.StatusCreated, code, body)
	return obj(body, "order")
}

// waitStatus polls GET /v1/orders/{ref} until the status is want, and
// returns every distinct status seen on the way, in order.
func (s *stack) waitStatus(key, ref, want string) (map[string]any, []string) {
	s.t.Helper()
	var seen []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := s.do(key, "GET", "/v1/orders/"+ref, nil)
		require.Equal(s.t, http.StatusOK, code, body)
		o := obj(body, "order")
		st := str(o, "status")
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		if st == want {
			return o, seen
		}
		require.False(s.t, time.Now().After(deadline), "order %s stuck in %s waiting for %s", ref, st, want)
		time.Sleep(50 * time.Millisecond)
	}
}

// paidOrder creates an order, pays it in full with the test helper, and
// returns it once it reads until.
func (s *stack) paidOrder(key, until string) map[string]any {
	s.t.Helper()
	o := s.newOrder(key, product)
	code, body := s.do(key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	require.Equal(s.t, http.StatusCreated, code, body)
	s.waitStatus(key, str(o, "number"), until)
	return o
}

// soleRefund polls GET /v1/orders/{ref} until the order shows one refund
// (why: what creates it), and returns that refund.
func (s *stack) soleRefund(key, ref, why string) map[string]any {
	s.t.Helper()
	var refund map[string]any
	require.Eventually(s.t, func() bool {
		_, b := s.do(key, "GET", "/v1/orders/"+ref, nil)
		rs, _ := obj(b, "order")["refunds"].([]any)
		if len(rs) != 1 {
			return false
		}
		refund = rs[0].(map[string]any)
		return true
	}, 30*time.Second, 50*time.Millisecond, why)
	return refund
}

// partlyPaidOrder creates an order and pays 1 of it with the test helper,
// and returns it once it reads partial.
func (s *stack) partlyPaidOrder(key string) map[string]any {
	s.t.Helper()
	o := s.newOrder(key, product)
	code, body := s.do(key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", map[string]any{"amount": "1"})
	require.Equal(s.t, http.StatusCreated, code, body)
	require.Eventually(s.t, func() bool {
		_, b := s.do(key, "GET", "/v1/orders/"+str(o, "number"), nil)
		return str(obj(b, "order"), "payment_status") == "partial"
	}, 20*time.Second, 50*time.Millisecond)
	return o
}

func dialects() []string {
	return sqlstoretest.Dialects()
}

const product = "https://www.amazon.com/dp/B08N5WRWNW"

func TestE2EPreviewToDelivered(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			s := startDev(t, d, nil)
			code, body := s.do(s.key, "POST", "/v1/products/preview", map[string]any{"url": product})
			require.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, "in_stock", str(obj(body, "product"), "availability"))

			cartID := s.newCart(s.key, product, "https://www.ebay.com/itm/123456789012")
			code, body = s.do(s.key, "POST", "/v1/orders", orderBody(cartID))
			require.Equal(t, http.StatusCreated, code, body)
			o := obj(body, "order")
			number := str(o, "number")
			assert.Equal(t, "created", str(o, "status"))
			assert.Equal(t, number, str(o, "payment_memo"), "the memo is the order number")
			assert.True(t, models.ValidOrderNumber(number), number)
			amount := decimal.RequireFromString(str(o, "payment_amount"))
			assert.True(t, amount.Equal(decimal.RequireFromString(str(o, "total"))), "USDC is quoted 1:1")
			assert.Equal(t, "https://track.example.test/track/"+number, str(o, "tracking_url"))

			// The workflow is visible and searchable by order number.
			require.Eventually(t, func() bool {
				resp, err := s.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: fmt.Sprintf("OrderNumber = %q", number)})
				return err == nil && len(resp.GetExecutions()) == 1
			}, 20*time.Second, 100*time.Millisecond, "workflow searchable by OrderNumber")

			code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+number+"/payments", nil)
			require.Equal(t, http.StatusCreated, code, body)
			assert.Equal(t, "matched", str(obj(body, "payment"), "outcome"))

			final, seen := s.waitStatus(s.key, number, "delivered")
			assert.Equal(t, "created", seen[0])
			assert.Subset(t, []string{"created", "paid", "ordered", "shipped", "delivered"}, seen, "only the linear sequence is ever seen")
			assert.Equal(t, "confirmed", str(final, "payment_status"))
			tr := obj(final, "tracking")
			assert.Equal(t, "delivered", str(tr, "current_step"))
			assert.Equal(t, "Sandbox Express", str(tr, "carrier"))
			assert.NotEmpty(t, str(tr, "tracking_number"))
			assert.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, str(tr, "estimated_delivery"))
			steps, _ := tr["steps"].([]any)
			require.Len(t, steps, 5)
			var prev time.Time
			for i, name := range []string{"created", "paid", "ordered", "shipped", "delivered"} {
				st := steps[i].(map[string]any)
				assert.Equal(t, name, st["name"])
				assert.Equal(t, true, st["completed"], name)
				ts, err := time.Parse(time.RFC3339, str(st, "timestamp"))
				require.NoError(t, err, name)
				assert.False(t, ts.Before(prev), "step %s is not earlier than the one before", name)
				prev = ts
			}
			// By id as well as by number.
			code, body = s.do(s.key, "GET", "/v1/orders/"+str(o, "id"), nil)
			require.Equal(t, http.StatusOK, code)
			assert.Equal(t, number, str(obj(body, "order"), "number"))

			if *recordHistories && d == "sqlite" {
				writeHistory(t, s, str(o, "id"), "order_delivered_polling.json")
				// Started with its search attributes set (no upsert in
				// the first task: OrderInput.SearchAttributesSet).
				writeHistory(t, s, str(o, "id"), "order_delivered_attrs_at_start.json")
				// Paid before its deadline: the timer is cancelled
				// (version cancel-payment-deadline), OrderMode set at start.
				writeHistory(t, s, str(o, "id"), "order_delivered_deadline_cancelled.json")
				// Its writes as local activities (version local-writes).
				writeHistory(t, s, str(o, "id"), "order_delivered_local_writes.json")
				// From the baseline (one version marker) on, followed by
				// WatchOrder retries (version watch-by-retry).
				writeHistory(t, s, str(o, "id"), "order_delivered_baseline.json")
				// Its steps written by the watch that found them
				// (WatchOrderInput.Written), taken as written.
				writeHistory(t, s, str(o, "id"), "order_delivered_watch_writes.json")
				// From baseline-2026-12 on: the run records each step its
				// watches found (version watch-reports).
				writeHistory(t, s, str(o, "id"), "order_delivered_single_writer.json")
				// Its activities given one input struct each (version
				// input-structs, in baseline-2026-12).
				writeHistory(t, s, str(o, "id"), "order_delivered_input_structs.json")
			}
		})
	}
}

func TestE2EUnpaidOrderIsCancelledAtDeadline(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			s := startDev(t, d, map[string]string{"MEMOCART_PAYMENT_WINDOW": "2s"})
			o := s.newOrder(s.key, product)
			final, _ := s.waitStatus(s.key, str(o, "number"), "cancelled")
			assert.Equal(t, "expired", str(final, "payment_status"))
			steps := obj(final, "tracking")["steps"].([]any)
			assert.Equal(t, false, steps[1].(map[string]any)["completed"], "never paid")
			assert.Nil(t, steps[1].(map[string]any)["timestamp"])

			// A payment after the deadline is kept and marked for refund,
			// never lost: "late" if the workflow has finished, "matched" if
			// it is still closing (it then records the refund itself).
			code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
			require.Equal(t, http.StatusCreated, code, body)
			assert.Contains(t, []string{"late", "matched"}, str(obj(body, "payment"), "outcome"))
			require.Eventually(t, func() bool {
				_, b := s.do(s.key, "GET", "/v1/orders/"+str(o, "number"), nil)
				return str(obj(b, "order"), "payment_status") == "refund_due" && str(obj(b, "order"), "status") == "cancelled"
			}, 20*time.Second, 50*time.Millisecond, "the order shows the refund due")
			if *recordHistories && d == "sqlite" {
				writeHistory(t, s, str(o, "id"), "order_cancelled_unpaid.json")
			}
		})
	}
}

func TestE2EPartialPaymentThenTopUp(t *testing.T) {
	s := startDev(t, "sqlite", nil)
	o := s.newOrder(s.key, product)
	number := str(o, "number")
	amount := decimal.RequireFromString(str(o, "payment_amount"))
	part := amount.Div(decimal.NewFromInt(3)).Round(2)
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+number+"/payments", map[string]any{"amount": part.String()})
	require.Equal(t, http.StatusCreated, code, body)
	require.Eventually(t, func() bool {
		_, b := s.do(s.key, "GET", "/v1/orders/"+number, nil)
		return str(obj(b, "order"), "payment_status") == "partial"
	}, 20*time.Second, 50*time.Millisecond)
	_, body = s.do(s.key, "GET", "/v1/orders/"+number, nil)
	p := obj(obj(body, "order"), "payment")
	assert.Equal(t, amount.Sub(part).String(), str(p, "amount_due"), "GET shows what remains")
	assert.Equal(t, "created", str(obj(body, "order"), "status"))

	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+number+"/payments", map[string]any{"amount": amount.Sub(part).String()})
	require.Equal(t, http.StatusCreated, code, body)
	final, _ := s.waitStatus(s.key, number, "delivered")
	assert.Equal(t, "confirmed", str(final, "payment_status"))
	assert.Equal(t, amount.String(), str(obj(final, "payment"), "amount_received"))
	if *recordHistories {
		writeHistory(t, s, str(o, "id"), "order_partial_then_topup_polling.json")
	}
}

func TestE2EExpiredCart(t *testing.T) {
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_CART_TTL": "1s"})
	cartID := s.newCart(s.key, product)
	time.Sleep(1500 * time.Millisecond)
	code, body := s.do(s.key, "POST", "/v1/orders", orderBody(cartID))
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "cart_not_found", str(obj(body, "error"), "code"))
}

func TestE2EIsolationBetweenAccountsAndModes(t *testing.T) {
	s := startDev(t, "sqlite", nil)
	o := s.newOrder(s.key, product)
	other := s.createKey("other", "test", "free")
	live := s.createKey("dev", "live", "pro") // same account as the dev key, other mode

	for name, key := range map[string]string{"other account": other, "other mode": live} {
		for _, ref := range []string{str(o, "id"), str(o, "number")} {
			code, body := s.do(key, "GET", "/v1/orders/"+ref, nil)
			assert.Equal(t, http.StatusNotFound, code, name)
			assert.Equal(t, "order_not_found", str(obj(body, "error"), "code"), name)
		}
	}
	code, body := s.do(other, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	assert.Equal(t, http.StatusNotFound, code, "another account cannot pay through the helper")
	assert.Equal(t, "order_not_found", str(obj(body, "error"), "code"))
	code, body = s.do(live, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	assert.Equal(t, http.StatusForbidden, code, "live keys cannot use test helpers")
	assert.Equal(t, "test_mode_only", str(obj(body, "error"), "code"))

	// Another account's cart cannot be ordered either.
	cartID := s.newCart(s.key, product)
	code, body = s.do(other, "POST", "/v1/orders", orderBody(cartID))
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "cart_not_found", str(obj(body, "error"), "code"))
}

func TestE2EOneOrderPerCartUnderConcurrencyAndRetries(t *testing.T) {
	for _, d := range dialects() {
		t.Run(d, func(t *testing.T) {
			s := startDev(t, d, nil)
			cartID := s.newCart(s.key, product)
			const n = 6
			var wg sync.WaitGroup
			var created atomic.Int32
			ids := make([]string, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, body := s.do(s.key, "POST", "/v1/orders", orderBody(cartID))
					if code == http.StatusCreated {
						created.Add(1)
					}
					ids[i] = str(obj(body, "order"), "id")
				}()
			}
			wg.Wait()
			assert.Equal(t, int32(1), created.Load(), "exactly one request creates the order")
			for i := range n {
				assert.Equal(t, ids[0], ids[i], "all requests see the same order")
			}
			// Retry with an Idempotency-Key, and reuse of the key with another body.
			cart2 := s.newCart(s.key, product)
			c1, b1 := s.do(s.key, "POST", "/v1/orders", orderBody(cart2), "Idempotency-Key", "retry-1")
			c2, b2 := s.do(s.key, "POST", "/v1/orders", orderBody(cart2), "Idempotency-Key", "retry-1")
			require.Equal(t, http.StatusCreated, c1, b1)
			require.Equal(t, http.StatusCreated, c2, b2, "a replay under the key answers the first status")
			assert.Equal(t, str(obj(b1, "order"), "id"), str(obj(b2, "order"), "id"))
			c3, b3 := s.do(s.key, "POST", "/v1/orders", orderBody(s.newCart(s.key, product)), "Idempotency-Key", "retry-1")
			assert.Equal(t, http.StatusUnprocessableEntity, c3)
			assert.Equal(t, "idempotency_mismatch", str(obj(b3, "error"), "code"))

			// One workflow per order, and every workflow has its order.
			for _, id := range []string{ids[0], str(obj(b1, "order"), "id")} {
				desc, err := s.client.DescribeWorkflowExecution(context.Background(), models.WorkflowID(id), "")
				require.NoError(t, err, id)
				assert.NotNil(t, desc.GetWorkflowExecutionInfo())
			}
		})
	}
}

// TestE2ECrashBetweenCommitAndWorkflowStart kills the request after the
// order is committed and before its workflow starts, as a process crash
// would, and shows the order is not stranded: the reconciler starts its
// workflow, and a client retry returns the same order.
func TestE2ECrashBetweenCommitAndWorkflowStart(t *testing.T) {
	var crashes atomic.Int32
	app.TestHooks.AfterOrderCommit = func(o models.Order) error {
		if crashes.Add(1) <= 2 {
			return fmt.Errorf("simulated crash after committing order %s", o.ID)
		}
		return nil
	}
	t.Cleanup(func() { app.TestHooks.AfterOrderCommit = nil })
	s := startDev(t, "sqlite", nil)

	// 1. No retry: the reconciler must start the workflow on its own.
	cartA := s.newCart(s.key, product)
	code, _ := s.do(s.key, "POST", "/v1/orders", orderBody(cartA))
	require.Equal(t, http.StatusInternalServerError, code)
	// The order exists even though the request "died".
	code, body := s.do(s.key, "GET", "/v1/carts/"+cartA, nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ordered", str(obj(body, "cart"), "status"))

	// 2. A retry of the same request gets the same order, with its workflow.
	cartB := s.newCart(s.key, product)
	code, _ = s.do(s.key, "POST", "/v1/orders", orderBody(cartB))
	require.Equal(t, http.StatusInternalServerError, code)
	code, body = s.do(s.key, "POST", "/v1/orders", orderBody(cartB))
	require.Equal(t, http.StatusOK, code, body)
	orderB := obj(body, "order")
	_, err := s.client.DescribeWorkflowExecution(context.Background(), models.WorkflowID(str(orderB, "id")), "")
	require.NoError(t, err, "the retry started the workflow")

	// Order A's client never retried: its workflow appears in Temporal once
	// the reconciler runs, and paying the order then delivers it.
	var orderAID string
	require.Eventually(t, func() bool {
		resp, err := s.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: "OrderStatus = 'created'"})
		if err != nil {
			return false
		}
		for _, e := range resp.GetExecutions() {
			if id := strings.TrimPrefix(e.GetExecution().GetWorkflowId(), "order-"); id != str(orderB, "id") {
				orderAID = id
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the reconciler started the stranded order's workflow")
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+orderAID+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	s.waitStatus(s.key, orderAID, "delivered")
}

func TestE2ESourcingFailure(t *testing.T) {
	s := startDev(t, "sqlite", nil)
	o := s.newOrder(s.key, "https://www.amazon.com/dp/B0FAILSRC0")
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	final, seen := s.waitStatus(s.key, str(o, "number"), "failed")
	assert.Equal(t, "refund_due", str(final, "payment_status"))
	assert.NotContains(t, seen, "ordered")
	// The customer reads the sentence, never the fulfiller's chain.
	assert.Equal(t, models.FulfilmentFailureReason("product_unavailable"), str(final, "failure_reason"))
	if *recordHistories {
		writeHistory(t, s, str(o, "id"), "order_sourcing_failed_polling.json")
	}
}

// requireOrderEnded requires the order's workflow to end with status want
// and, with -record-histories, writes its history as history.
func (s *stack) requireOrderEnded(orderID string, want models.OrderStatus, history string) {
	s.t.Helper()
	ctx := context.Background()
	var res workflows.OrderResult
	require.NoError(s.t, s.client.GetWorkflow(ctx, models.WorkflowID(orderID), "").Get(ctx, &res), "the workflow ends")
	assert.Equal(s.t, want, res.Status)
	if *recordHistories {
		writeHistory(s.t, s, orderID, history)
	}
}

// writeHistory saves a finished order workflow's history as JSON for the
// replay test in package workflows.
func writeHistory(t testing.TB, s *stack, orderID, name string) {
	t.Helper()
	recordHistory(t, s, models.WorkflowID(orderID), name, func(err error) {
		// A failed order's workflow ends Failed: its history is recorded
		// all the same.
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, workflows.OrderFailedError, appErr.Type(), "%v", err)
	})
}

// writeWorkflowHistory saves the history of another workflow than Order,
// which must have completed.
func writeWorkflowHistory(t testing.TB, s *stack, workflowID, name string) {
	t.Helper()
	recordHistory(t, s, workflowID, name, func(err error) { require.NoError(t, err) })
}

// recordHistory waits for workflow id to finish (its failure goes to
// failed) and writes its history to workflows/testdata/name.
func recordHistory(t testing.TB, s *stack, id, name string, failed func(error)) {
	t.Helper()
	path := filepath.Join("..", "..", "workflows", "testdata", name)
	// Recorded histories stand for runs of older code: never replace one.
	if _, err := os.Stat(path); err == nil {
		t.Logf("%s exists; kept", path)
		return
	}
	ctx := context.Background()
	if err := s.client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		failed(err)
	}
	iter := s.client.GetWorkflowHistory(ctx, id, "", false, 0)
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}

// TestE2EOperatorSignals sends the two operator signals of
// docs/operators.md to real workflows, with the JSON an operator types.
func TestE2EOperatorSignals(t *testing.T) {
	s := startDev(t, "sqlite", nil)
	ctx := context.Background()

	unpaid := s.newOrder(s.key, product)
	var cancel workflows.CancelSignal
	require.NoError(t, json.Unmarshal([]byte(`{"Reason": "customer asked to cancel", "RequestedBy": "ops@memocart.com"}`), &cancel))
	require.NoError(t, s.client.SignalWorkflow(ctx, models.WorkflowID(str(unpaid, "id")), "", workflows.SignalCancel, cancel))
	final, _ := s.waitStatus(s.key, str(unpaid, "number"), "cancelled")
	assert.Equal(t, "cancelled", str(final, "payment_status"))
	if *recordHistories {
		writeHistory(t, s, str(unpaid, "id"), "order_operator_cancel.json")
	}

	manual := s.newOrder(s.key, product)
	var pay workflows.PaymentSignal
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(
		`{"PaymentID": "manual:ticket-4711", "Asset": "USDC", "Amount": %q, "ReceivedAt": "2026-11-21T23:40:00Z", "Sender": "ops"}`,
		str(manual, "payment_amount"))), &pay))
	for range 2 { // sent twice by mistake: counted once
		require.NoError(t, s.client.SignalWorkflow(ctx, models.WorkflowID(str(manual, "id")), "", workflows.SignalPaymentMatched, pay))
	}
	final, _ = s.waitStatus(s.key, str(manual, "number"), "delivered")
	assert.Equal(t, "confirmed", str(final, "payment_status"))
	assert.Equal(t, str(manual, "payment_amount"), str(obj(final, "payment"), "amount_received"), "the duplicate signal was not counted")
	if *recordHistories {
		writeHistory(t, s, str(manual, "id"), "order_manual_payment_twice.json")
	}
}
