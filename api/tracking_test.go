package api_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

var (
	cspNonceRE    = regexp.MustCompile(`style-src 'nonce-([A-Za-z0-9_-]{16,})'`)
	nonceAttrRE   = regexp.MustCompile(`<(style|script) nonce="([^"]*)"`)
	openTagRE     = regexp.MustCompile(`<(style|script)[\s>]`)
	statusLabelRE = regexp.MustCompile(`<p class="status (progress|done|stopped)" id="status">([^<]*)</p>`)
	hrefRE        = regexp.MustCompile(`href="([^"]*)"`)
	payLinkRE     = regexp.MustCompile(`id="pay-link" href="([^"]*)"`)
	refundBadgeRE = regexp.MustCompile(`<span class="pill (progress|done|stopped|settled) refund-status">([^<]*)</span>`)
)

// requireTrackingPage asserts what every page under /track sends: HTML
// with the security headers, whose policy's nonce is the one every inline
// style and script carries, and nothing loaded from anywhere.
func requireTrackingPage(t *testing.T, r response, status int) string {
	t.Helper()
	csp := requireHTMLPage(t, r, status)
	m := cspNonceRE.FindStringSubmatch(csp)
	require.NotNilf(t, m, "a style nonce in the policy %q", csp)
	nonce := m[1]
	for _, d := range []string{"default-src 'none'", "script-src 'nonce-" + nonce + "'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"} {
		assert.Containsf(t, csp, d, "policy %q", csp)
	}
	body := requireNoncedBody(t, r, nonce)
	for _, secret := range trackingSecrets {
		assert.Falsef(t, showsSecret(body, secret), "a public page must not show %q", secret)
	}
	return body
}

// requireHTMLPage asserts what every public page (tracking, claim) sends
// with its status: HTML, never cached or sniffed, no referrer. It returns
// the page's Content-Security-Policy.
func requireHTMLPage(t *testing.T, r response, status int) string {
	t.Helper()
	require.Equalf(t, status, r.status, "body %s", clip(r.body, 600))
	assert.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-referrer", r.header.Get("Referrer-Policy"))
	return r.header.Get("Content-Security-Policy")
}

// requireNoncedBody asserts the body of a public page whose policy's nonce
// is nonce: every inline style and script carries it, no inline style
// attribute (the policy would block it), nothing loaded, no value refused
// by html/template. It returns the body.
func requireNoncedBody(t *testing.T, r response, nonce string) string {
	t.Helper()
	body := string(r.body)
	assert.Contains(t, body, "<!doctype html>")
	tags := nonceAttrRE.FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, tags, "the page is styled")
	assert.Len(t, tags, len(openTagRE.FindAllString(body, -1)), "every style and script carries the nonce")
	for _, tag := range tags {
		assert.Equal(t, nonce, tag[2], "nonce of a <%s>", tag[1])
	}
	assert.NotContains(t, body, " style=", "inline style attributes would be blocked by the policy")
	assert.NotContains(t, body, " src=", "the page loads nothing")
	assert.NotContains(t, body, "ZgotmplZ", "html/template refused a value")
	return body
}

func TestTrackingPageStates(t *testing.T) {
	clock := newFakeClock()
	cases := trackingCases(t, clock.Now())
	e := newTrackingCasesEnv(t, clock, api.Config{}, cases)
	var nonces []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.get(t, "/track/"+tc.order.Number, "")
			body := requireTrackingPage(t, r, http.StatusOK)
			nonces = append(nonces, cspNonceRE.FindStringSubmatch(r.header.Get("Content-Security-Policy"))[1])

			m := statusLabelRE.FindStringSubmatch(body)
			require.NotNil(t, m, "the status label")
			assert.Equal(t, tc.label, m[2])
			assert.NotContains(t, m[2], string(tc.order.Status), "a human label, not the status word")
			assert.Contains(t, body, "Order "+tc.order.Number)
			for _, s := range tc.shows {
				assert.Containsf(t, body, s, "the %s page shows %q", tc.name, s)
			}
			for _, s := range tc.hides {
				assert.NotContainsf(t, body, s, "the %s page does not show %q", tc.name, s)
			}
			assert.Equal(t, len(tc.order.Steps), strings.Count(body, `<li class="reached">`), "steps reached")

			text, ok := decodeQRSVG(t, body)
			if tc.qr == "" {
				assert.False(t, ok, "no QR code once the order does not wait for a payment")
				assert.NotContains(t, body, "web+stellar:")
			} else {
				require.True(t, ok, "a QR code of the payment link")
				assert.Equal(t, tc.qr, text, "the QR code scans to the SEP-0007 link")
				m := payLinkRE.FindStringSubmatch(body)
				require.NotNil(t, m, "a wallet button")
				assert.Equal(t, tc.qr, html.UnescapeString(m[1]), "the wallet button opens the same link")
			}

			var external, want []string
			for _, h := range hrefRE.FindAllStringSubmatch(body, -1) {
				if strings.HasPrefix(h[1], "https://") {
					external = append(external, html.UnescapeString(h[1]))
				}
			}
			for _, l := range []string{tc.explorer, tc.link} {
				if l != "" {
					want = append(want, l)
				}
			}
			if len(want) == 0 {
				assert.Empty(t, external, "no link: no carrier known, no refund sent on a public network")
			} else {
				assert.Equal(t, want, external, "the sent refund's transaction and the carrier's tracking page, and no other link")
				assert.Equal(t, len(want), strings.Count(body, `rel="noopener noreferrer"`))
			}

			// Each refund is shown, with its status in words, never the
			// status word.
			badges := refundBadgeRE.FindAllStringSubmatch(body, -1)
			require.Len(t, badges, len(tc.refunds), "one entry per refund")
			for i, r := range tc.refunds {
				assert.NotEqualf(t, string(r.Status), badges[i][2], "a human label, not %q", r.Status)
				assert.NotEmpty(t, badges[i][2])
			}
		})
	}
	t.Run("a nonce per response", func(t *testing.T) {
		seen := map[string]bool{}
		for _, n := range nonces {
			assert.False(t, seen[n], "nonce %s reused", n)
			seen[n] = true
		}
	})
}

func TestTrackingPageTimeLeft(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderCreated)
	o.PaymentExpiresAt = clock.Now().Add(90*time.Minute + 30*time.Second)
	e := newTrackingEnv(t, clock, api.Config{}, o)
	for _, tc := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "1 h 30 min"},
		{30 * time.Minute, "1 h"},
		{31 * time.Minute, "29 min"},
		{29 * time.Minute, "less than a minute"},
	} {
		clock.Advance(tc.advance)
		body := requireTrackingPage(t, e.get(t, "/track/"+o.Number, ""), http.StatusOK)
		assert.Regexp(t, `<time id="time-left" datetime="[^"]+" data-seconds="\d+">`+regexp.QuoteMeta(tc.want)+`</time>`, body)
	}
	clock.Advance(time.Minute)
	body := requireTrackingPage(t, e.get(t, "/track/"+o.Number, ""), http.StatusOK)
	assert.NotContains(t, body, `id="time-left"`, "past the deadline: no instructions")
	assert.Contains(t, body, "Do not send a payment now")
}

func TestTrackingPageNotFound(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	e := newTrackingEnv(t, clock, api.Config{}, o)
	for name, tc := range map[string]struct{ path, title string }{
		"unknown valid number": {"/track/" + otherOrderNumber(t, o.Number), "No order with this number"},
		"too short":            {"/track/12345", "That is not an order number"},
		"letters":              {"/track/abc", "That is not an order number"},
		"bad check digit":      {"/track/" + o.Number[:10] + string('0'+(o.Number[10]-'0'+1)%10), "That is not an order number"},
		"markup in the number": {"/track/%3Cscript%3Ealert(1)%3C%5Cscript%3E", "That is not an order number"},
	} {
		t.Run(name, func(t *testing.T) {
			body := requireTrackingPage(t, e.get(t, tc.path, ""), http.StatusNotFound)
			assert.Contains(t, body, "<h1>"+tc.title+"</h1>")
			assert.Contains(t, body, `<section class="card" id="message">`, "the page's look")
			assert.NotContains(t, body, o.Number)
			assert.NotContains(t, body, "<script>", "the path is never echoed")
		})
	}
}

func TestPublicRateLimitPerAddress(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	// The test's connections come from loopback, trusted as a proxy here so
	// X-Forwarded-For can play the clients.
	e := newTrackingEnv(t, clock, api.Config{PublicRateLimit: 3, TrustedProxies: []string{"127.0.0.1", "::1"}}, o)
	from := func(ip, path string) response {
		return e.send(t, request{method: http.MethodGet, path: path, header: map[string]string{"X-Forwarded-For": ip}})
	}
	track := "/track/" + o.Number

	for range 3 {
		requireTrackingPage(t, from("203.0.113.7", track), http.StatusOK)
	}
	r := from("203.0.113.7", track)
	body := requireTrackingPage(t, r, http.StatusTooManyRequests)
	assert.Equal(t, "20", r.header.Get("Retry-After"), "3 a minute: one every 20 s")
	assert.Contains(t, body, "<h1>Too many requests</h1>")
	assert.Contains(t, body, "Wait 20 seconds")

	r = from("203.0.113.7", "/v1/openapi.json")
	requireError(t, r, http.StatusTooManyRequests, models.CodeRateLimited, "")
	assert.Equal(t, "20", r.header.Get("Retry-After"), "one budget per address across the public routes")

	requireTrackingPage(t, from("198.51.100.9", track), http.StatusOK)
	assert.Equal(t, http.StatusOK, from("198.51.100.9", "/v1/openapi.json").status, "another address has its own budget")
	assert.Equal(t, http.StatusOK, from("203.0.113.7", "/healthz").status, "health checks are not limited")
	assert.Equal(t, http.StatusOK, from("203.0.113.7", "/readyz").status, "readiness checks are not limited")

	t.Run("an IPv6 client is its /64", func(t *testing.T) {
		for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"} {
			requireTrackingPage(t, from(ip, track), http.StatusOK)
		}
		requireTrackingPage(t, from("2001:db8:1:2::4", track), http.StatusTooManyRequests)
		requireTrackingPage(t, from("2001:db8:1:3::1", track), http.StatusOK)
	})

	clock.Advance(20 * time.Second)
	requireTrackingPage(t, from("203.0.113.7", track), http.StatusOK)
	requireTrackingPage(t, from("203.0.113.7", track), http.StatusTooManyRequests)
}

func TestPublicRateLimitIgnoresForwardedHeadersByDefault(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	e := newTrackingEnv(t, clock, api.Config{PublicRateLimit: 2}, o)
	send := func(forwarded string) response {
		return e.send(t, request{method: http.MethodGet, path: "/track/" + o.Number,
			header: map[string]string{"X-Forwarded-For": forwarded, "X-Real-Ip": forwarded}})
	}
	requireTrackingPage(t, send("203.0.113.1"), http.StatusOK)
	requireTrackingPage(t, send("203.0.113.2"), http.StatusOK)
	requireTrackingPage(t, send("203.0.113.3"), http.StatusTooManyRequests)
}

func TestPublicRateLimitOff(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	e := newTrackingEnv(t, clock, api.Config{PublicRateLimit: -1}, o)
	for range api.DefaultPublicRateLimit + 5 {
		require.Equal(t, http.StatusOK, e.get(t, "/track/"+o.Number, "").status)
	}
}

func TestPublicRateLimitDefault(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	e := newTrackingEnv(t, clock, api.Config{}, o)
	for range api.DefaultPublicRateLimit {
		require.Equal(t, http.StatusOK, e.get(t, "/track/"+o.Number, "").status)
	}
	requireTrackingPage(t, e.get(t, "/track/"+o.Number, ""), http.StatusTooManyRequests)
}

// failingOrders answers every order lookup with err.
type failingOrders struct {
	api.Store
	err error
}

func (s failingOrders) OrderByNumber(context.Context, string) (models.Order, error) {
	return models.Order{}, s.err
}

// A payer's browser gets pages, never the API's JSON: when the database is
// down (503, with Retry-After), on a bug (500), and on a mangled link (404).
func TestTrackingPageFailures(t *testing.T) {
	clock := newFakeClock()
	o := baseTrackingOrder(t, clock.Now(), models.OrderPaid)
	serve := func(err error) *env {
		st := sqlstoretest.Open(t, sqlstore.DialectSQLite)
		srv := newTestServer(t, api.Config{}, api.Deps{
			Store: failingOrders{Store: st, err: err}, Limiter: ratelimit.NewMemory(clock.Now), Now: clock.Now,
		})
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		return &env{st: st, clock: clock, ts: ts}
	}

	down := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	require.True(t, api.DependencyDown(fmt.Errorf("reading order: %w", down)))
	r := serve(fmt.Errorf("reading order: %w", down)).get(t, "/track/"+o.Number, "")
	body := requireTrackingPage(t, r, http.StatusServiceUnavailable)
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	assert.Contains(t, body, "<h1>Tracking is unavailable for a moment</h1>")
	assert.NotContains(t, body, "refused", "no internals on a public page")

	body = requireTrackingPage(t, serve(errors.New("a bug")).get(t, "/track/"+o.Number, ""), http.StatusInternalServerError)
	assert.Contains(t, body, "<h1>Something went wrong</h1>")
	assert.NotContains(t, body, "a bug")

	e := newTrackingEnv(t, clock, api.Config{}, o)
	for _, path := range []string{"/track/" + o.Number + "/extra", "/track/a/b"} {
		body := requireTrackingPage(t, e.get(t, path, ""), http.StatusNotFound)
		assert.Contains(t, body, "<h1>No such tracking page</h1>", path)
	}
	requireError(t, e.get(t, "/nowhere", ""), http.StatusNotFound, models.CodeNotFound, "")
}

// The page reads an order's refunds from the store, as the order's
// workflow and the refund's leave them: a failed order's refund, given a
// destination by the shop, approved and sent in the sandbox.
func TestTrackingPageRefundsFromTheStore(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		o := e.newFailedStoredOrder(t, key)
		ctx := t.Context()
		track := func(t *testing.T) string {
			t.Helper()
			return requireTrackingPage(t, e.get(t, "/track/"+o.Number, ""), http.StatusOK)
		}

		body := track(t)
		assert.Contains(t, body, "Waiting for where to send it")
		assert.Contains(t, body, "The order could not be fulfilled")
		assert.NotContains(t, body, "owed back", "the refund exists: no note that it is coming")

		r := e.setDestination(t, key, o.ID, `{"address":"`+trackRefundAddress+`","memo_type":"text","memo":"`+trackRefundMemo+`"}`)
		require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
		body = track(t)
		assert.Contains(t, body, "Waiting for approval")

		refunds, err := e.st.RefundsForOrder(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, refunds, 1)
		now := e.clock.Now()
		_, err = e.st.UpdateRefund(ctx, refunds[0].ID, now, func(r models.Refund) (models.Refund, error) {
			if r, err = models.ApproveRefund(r, now); err != nil {
				return r, err
			}
			return models.RecordRefundTransaction(r, trackRefundTx, "")
		})
		require.NoError(t, err)
		body = track(t)
		assert.Contains(t, body, "Being sent")
		assert.NotContains(t, body, trackRefundTx, "a payout not known to be on the chain")

		_, err = e.st.UpdateRefund(ctx, refunds[0].ID, now, func(r models.Refund) (models.Refund, error) {
			return models.MarkRefundSent(r, trackRefundTx, now)
		})
		require.NoError(t, err)
		body = track(t)
		assert.Contains(t, body, "It was sent on "+now.UTC().Format("2 Jan 2006, 15:04 UTC")+".")
		assert.Contains(t, body, trackRefundTx, "the sandbox's hash, as text")
		assert.NotContains(t, body, "stellar.expert", "the sandbox's hashes are on no chain")
		assert.Equal(t, 1, strings.Count(body, `<div class="refund">`))
	})
}
