package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// TestE2EDatabaseOutage runs the whole dev stack (API, worker, embedded
// Temporal) on a Postgres of the test's own, then stops it, crashes it and
// freezes it while orders are in flight. Every API answer during the
// outage is 503 in the envelope with Retry-After, within the request
// deadline; afterwards the API, the workflows' activities and the payment
// path carry on without restarting anything, and every order is delivered
// exactly as if nothing had happened.
func TestE2EDatabaseOutage(t *testing.T) {
	pg := sqlstoretest.StartPostgres(t)
	const timeout = 2 * time.Second
	s := startDev(t, "postgres", map[string]string{
		"MEMOCART_DATABASE_URL":    pg.URL(),
		"MEMOCART_REQUEST_TIMEOUT": timeout.String(),
	})
	// One order paid before the outage, one waiting for payment through it.
	paid := s.newOrder(s.key, product)
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(paid, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	waiting := s.newOrder(s.key, product)

	unavailable := func(what string) {
		t.Helper()
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/orders/" + str(waiting, "id")},
			{"POST", "/v1/test_helpers/orders/" + str(waiting, "number") + "/payments"},
		} {
			start := time.Now()
			code, body := s.do(s.key, r.method, r.path, nil)
			took := time.Since(start)
			require.Equalf(t, http.StatusServiceUnavailable, code, "%s %s with the database %s: %v", r.method, r.path, what, body)
			assert.Equal(t, "service_unavailable", str(obj(body, "error"), "code"))
			assert.Lessf(t, took, timeout+3*time.Second, "%s %s answered after %s with the database %s", r.method, r.path, took, what)
		}
	}
	recovered := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			code, _ := s.do(s.key, "GET", "/v1/orders/"+str(waiting, "id"), nil)
			return code == http.StatusOK
		}, 30*time.Second, 200*time.Millisecond, "the API did not recover")
	}

	pg.Stop()
	unavailable("stopped")
	pg.Start()
	recovered()

	pg.Kill()
	unavailable("crashed")
	pg.Start()
	recovered()

	pg.Pause()
	unavailable("hung")
	pg.Resume()
	recovered()

	// Nothing was lost or doubled: the paid order finishes, the waiting one
	// is paid once and finishes too.
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(waiting, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	for _, o := range []map[string]any{paid, waiting} {
		final, _ := s.waitStatus(s.key, str(o, "id"), "delivered")
		assert.Equal(t, "confirmed", str(final, "payment_status"))
		assert.Equal(t, str(o, "payment_amount"), str(obj(final, "payment"), "amount_received"), "credited exactly once")
	}
}
