package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/workflows"
)

// claimCSPRE is the claim page's policy: the tracking page's, but for a
// form that posts back to itself.
var claimCSPRE = regexp.MustCompile(`^default-src 'none'; style-src 'nonce-([A-Za-z0-9_-]{16,})'; script-src 'nonce-([A-Za-z0-9_-]{16,})'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$`)

// claimPrefix is where every claim_url of ordersEnv starts.
const claimPrefix = ordersPublicURL + "/claim/"

// requireClaimPage asserts what every page under /claim sends: HTML with
// the security headers, whose policy's nonce is the one every inline style
// and script carries, nothing loaded from anywhere, and nothing personal:
// not the shopper's details, not the order, not a destination.
func requireClaimPage(t *testing.T, r response, status int, secrets ...string) string {
	t.Helper()
	csp := requireHTMLPage(t, r, status)
	m := claimCSPRE.FindStringSubmatch(csp)
	require.NotNilf(t, m, "the claim page's policy, got %q", csp)
	require.Equal(t, m[1], m[2], "one nonce for style and script")
	body := requireNoncedBody(t, r, m[1])
	assert.Contains(t, body, `<meta name="viewport" content="width=device-width,initial-scale=1">`, "laid out for a phone")
	assert.NotContains(t, body, "href=", "the page links nowhere")
	assert.NotContains(t, body, " action=", "the form posts back to the page's own URL")
	for _, s := range append([]string{customerEmail, customerName, customerLine1, "Cupertino", "95014", "408 555", sandboxPayTo}, secrets...) {
		assert.NotContainsf(t, body, s, "the claim page must not show %q", s)
	}
	return body
}

// claimRefund is a failed order's refund, through the API, with its
// claim_url's token.
type claimRefund struct {
	orderID, number, refundID, token string
}

// newClaimRefund makes a failed order (through the API) whose refund
// waits for its destination, and reads its claim_url.
func (e *ordersEnv) newClaimRefund(t *testing.T, key string) claimRefund {
	t.Helper()
	orderID := e.newFailedOrder(t, key)
	v := decodeOrderView(t, e.get(t, "/v1/orders/"+orderID, key))
	require.Len(t, v.Refunds, 1)
	r := v.Refunds[0]
	require.Equal(t, "awaiting_destination", r.Status)
	return claimRefund{orderID: orderID, number: v.Number, refundID: r.ID, token: claimTokenOf(t, r)}
}

// claimTokenOf returns the token of a refund's claim_url, asserting its
// shape.
func claimTokenOf(t *testing.T, r refundView) string {
	t.Helper()
	require.NotNilf(t, r.ClaimURL, "refund %s (%s) has a claim_url", r.ID, r.Status)
	token, ok := strings.CutPrefix(*r.ClaimURL, claimPrefix)
	require.Truef(t, ok, "claim_url %q under MEMOCART_PUBLIC_URL", *r.ClaimURL)
	require.Regexp(t, `^[A-Za-z0-9_-]{43}$`, token)
	return token
}

// readRefund is GET /v1/refunds/{id}.
func (e *ordersEnv) readRefund(t *testing.T, key, id string) refundView {
	t.Helper()
	r := e.get(t, "/v1/refunds/"+id, key)
	require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	var body struct {
		Refund refundView `json:"refund"`
	}
	decodeStrict(t, r.body, &body)
	return body.Refund
}

// postClaim submits the claim form.
// requireClaimed asserts the refund's claim was used to send it to
// refundAccount with the memo given: it awaits approval, its link gone.
func (e *ordersEnv) requireClaimed(t *testing.T, key, refundID, memoType, memo string) {
	t.Helper()
	r := e.readRefund(t, key, refundID)
	assert.Equal(t, "awaiting_approval", r.Status)
	require.NotNil(t, r.Destination)
	assert.Equal(t, refundAccount, *r.Destination.Address)
	assert.Equal(t, memoType, *r.Destination.MemoType)
	assert.Equal(t, memo, *r.Destination.Memo)
	assert.False(t, r.Destination.ToSender)
	assert.Nil(t, r.ClaimURL, "the link is used")
}

// newClaimSubmitEnv is an env whose claims' moves are recorded, with a
// test key and a refund waiting for its claim.
func newClaimSubmitEnv(t *testing.T, dialect string) (*ordersEnv, *claimMoves, string, claimRefund) {
	t.Helper()
	moves := &claimMoves{}
	e := newOrdersEnv(t, dialect, withClaimMoves(moves))
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	return e, moves, key, e.newClaimRefund(t, key)
}

func (e *ordersEnv) postClaim(t *testing.T, token string, form url.Values) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: "/claim/" + token, body: form.Encode(),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
}

// moveRefund writes a move of refund id as its workflow's activity would.
func (e *ordersEnv) moveRefund(t *testing.T, id string, mv func(r models.Refund, now time.Time) (models.Refund, error)) models.Refund {
	t.Helper()
	now := e.clock.Now()
	r, err := e.st.UpdateRefund(t.Context(), id, now, func(r models.Refund) (models.Refund, error) { return mv(r, now) })
	require.NoError(t, err)
	return r
}

// failRefund takes a refund with a destination through approval to a
// refused payout.
func (e *ordersEnv) failRefund(t *testing.T, id, reason string) {
	t.Helper()
	e.moveRefund(t, id, func(r models.Refund, now time.Time) (models.Refund, error) { return models.ApproveRefund(r, now) })
	e.moveRefund(t, id, func(r models.Refund, now time.Time) (models.Refund, error) {
		return models.FailRefund(r, reason, now)
	})
}

// claimMoves records the moves asked of the refunds' workflows, and
// passes them on.
type claimMoves struct {
	checkout.RefundWorkflows
	mu  sync.Mutex
	got []workflows.RefundDestinationRequest
	// before, when set, runs once before the next move is passed on: a
	// move that reached the refund's workflow first.
	before func()
}

func (m *claimMoves) MoveRefund(ctx context.Context, id string, move workflows.RefundMove) (models.Refund, error) {
	m.mu.Lock()
	before := m.before
	m.before = nil
	if d, ok := move.(workflows.SetRefundDestination); ok {
		m.got = append(m.got, workflows.RefundDestinationRequest(d))
	}
	m.mu.Unlock()
	if before != nil {
		before()
	}
	return m.RefundWorkflows.MoveRefund(ctx, id, move)
}

func (m *claimMoves) requests() []workflows.RefundDestinationRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]workflows.RefundDestinationRequest(nil), m.got...)
}

func withClaimMoves(m *claimMoves) ordersOption {
	return func(s *ordersSetup) {
		m.RefundWorkflows = s.deps.Workflows.(checkout.RefundWorkflows)
		s.refunds = m
	}
}

// The API client reads a claim_url on a refund while it waits for a
// destination and the link works: in the refund, the list and the order;
// not once the destination is set (by the client here), nor on a refund
// that started with one; a failed refund shows a new one, and the link
// expires 30 days after its issue. The tracking page never shows it.
func TestClaimURLInTheRefund(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		c := e.newClaimRefund(t, key)

		list := e.get(t, "/v1/refunds?order_id="+c.orderID, key)
		require.Equal(t, http.StatusOK, list.status)
		assert.Contains(t, string(list.body), `"claim_url":"`+claimPrefix+c.token+`"`, "the list shows it")
		assert.Equal(t, claimPrefix+c.token, *e.readRefund(t, key, c.refundID).ClaimURL, "GET shows it again, the same")

		track := e.get(t, "/track/"+c.number, "")
		require.Equal(t, http.StatusOK, track.status)
		assert.Contains(t, string(track.body), "Waiting for where to send it", "the tracking page shows the refund")
		assert.NotContains(t, string(track.body), c.token, "but never its claim link")
		assert.NotContains(t, string(track.body), "/claim/")

		// A refund that starts with the order's destination has none.
		withDest := e.newFailedOrder(t, key, withRefundDestination(map[string]any{"address": refundAccount}))
		v := e.getOrder(t, key, withDest)
		require.Len(t, v.Refunds, 1)
		assert.Equal(t, "awaiting_approval", v.Refunds[0].Status)
		assert.Nil(t, v.Refunds[0].ClaimURL)

		// The client sets the destination: the link dies with it.
		set := e.setDestination(t, key, c.orderID, `{"address":"`+refundAccount+`","memo_type":"id","memo":"7"}`)
		require.Equalf(t, http.StatusOK, set.status, "body %s", set.body)
		after := decodeOrderView(t, set)
		assert.Nil(t, after.Refunds[0].ClaimURL)
		requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusNotFound)

		// Its payout fails: a new link, the old one stays dead, and the
		// page shows why the payout was refused but not where it went.
		e.clock.Advance(time.Hour)
		e.failRefund(t, c.refundID, "The account has no USDC trustline: add one, then ask again.")
		failed := e.readRefund(t, key, c.refundID)
		assert.Equal(t, "failed", failed.Status)
		second := claimTokenOf(t, failed)
		assert.NotEqual(t, c.token, second)
		requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusNotFound)
		body := requireClaimPage(t, e.get(t, "/claim/"+second, ""), http.StatusOK, refundAccount, c.number, c.orderID, c.refundID)
		assert.Contains(t, body, "The account has no USDC trustline: add one, then ask again.")

		// 30 days after its issue the link no longer works, nor shows.
		e.clock.Advance(models.RefundClaimTTL - time.Second)
		requireClaimPage(t, e.get(t, "/claim/"+second, ""), http.StatusOK)
		e.clock.Advance(time.Second)
		assert.Nil(t, e.readRefund(t, key, c.refundID).ClaimURL, "expired")
		requireClaimPage(t, e.get(t, "/claim/"+second, ""), http.StatusNotFound)
	})
}

// The form shows the amount and asset and asks for an address and a
// memo; nothing else about the refund, its order or its payer.
func TestClaimPage(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	c := e.newClaimRefund(t, key)
	r := e.readRefund(t, key, c.refundID)

	res := e.get(t, "/claim/"+c.token, "")
	body := requireClaimPage(t, res, http.StatusOK, c.number, c.orderID, c.refundID, accountID, refundAccount2, c.token,
		ordersPublicURL, "/track/")
	assert.Contains(t, body, `<p class="amount" id="amount">`+r.Amount+` USDC</p>`)
	assert.Contains(t, body, "Test refund", "a test-mode refund says so")
	assert.Contains(t, body, "accept USDC (have a USDC trustline)", "a USDC refund needs a trustline")
	assert.Contains(t, body, `<form method="post" id="claim-form" autocomplete="off">`)
	assert.Contains(t, body, `<input id="address" name="address" type="text" required`)
	assert.Contains(t, body, `value=""`, "nothing filled in")
	for _, opt := range []string{`<option value="none" selected>`, `<option value="text">`, `<option value="id">`, `<option value="hash">`} {
		assert.Contains(t, body, opt)
	}
	assert.NotContains(t, body, `value="return"`, "the form offers none, text, id and hash")
	assert.NotContains(t, body, `id="error"`)
	assert.NotContains(t, body, `id="failure"`)

	again := e.get(t, "/claim/"+c.token, "")
	assert.NotEqual(t, res.header.Get("Content-Security-Policy"), again.header.Get("Content-Security-Policy"), "a nonce per response")

	// A link that names nothing: the same 404 page, whatever its shape.
	for _, token := range []string{strings.Repeat("A", 43), "x", c.token[:42], c.token + "A", url.PathEscape(c.token[:42] + "=")} {
		body := requireClaimPage(t, e.get(t, "/claim/"+token, ""), http.StatusNotFound, c.token)
		assert.Contains(t, body, "<h1>This link does not work</h1>")
	}
}

// Submitting the form: a destination refused by its shape or by the
// network shows the form again with the reason and sets nothing (the
// link still works); one accepted is set through the refund's workflow
// (By claim), the refund awaits approval, and the link is used.
func TestClaimSubmit(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, moves, key, c := newClaimSubmitEnv(t, dialect)
		stillWaiting := func(t *testing.T) {
			t.Helper()
			r := e.readRefund(t, key, c.refundID)
			assert.Equal(t, "awaiting_destination", r.Status, "nothing set")
			assert.Nil(t, r.Destination, "nothing set")
			assert.Equal(t, claimPrefix+c.token, *r.ClaimURL, "the link still works")
			requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusOK)
		}

		for _, tc := range []struct {
			name   string
			form   url.Values
			field  string
			reason string
		}{
			{"a memo that is not an id", url.Values{"address": {refundAccount}, "memo_type": {"id"}, "memo": {"x12"}},
				"memo", "An id memo must be a whole number"},
			{"a text memo too long", url.Values{"address": {refundAccount}, "memo_type": {"text"}, "memo": {strings.Repeat("m", 29)}},
				"memo", "A text memo holds at most 28 bytes, this one has 29"},
			{"a memo without its type", url.Values{"address": {refundAccount}, "memo_type": {"none"}, "memo": {"42"}},
				"memo_type", "A memo needs its memo_type"},
			{"a memo type the form does not offer", url.Values{"address": {refundAccount}, "memo_type": {"return"}, "memo": {strings.Repeat("ab", 32)}},
				"memo_type", "Choose a memo type from the list"},
			{"no address", url.Values{"memo_type": {"none"}}, "address", "An address (or to_sender: true) is required"},
			{"a typo in the address", url.Values{"address": {refundAccount[:55] + "A"}}, "address", "checksum does not match"},
			{"a secret seed", url.Values{"address": {"S" + refundAccount[1:]}}, "address", "must never be shared"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := requireClaimPage(t, e.postClaim(t, c.token, tc.form), http.StatusUnprocessableEntity)
				assert.Contains(t, body, `<p class="error" id="error" role="alert">`)
				assert.Contains(t, body, tc.reason)
				assert.Regexp(t, `id="`+tc.field+`"[^>]* aria-invalid="true"`, body, "the input at fault is marked")
				assert.Equal(t, 1, strings.Count(body, `aria-invalid="true"`))
				if a := tc.form.Get("address"); a != "" {
					assert.Contains(t, body, `value="`+a+`"`, "what the payer typed is kept")
				}
				stillWaiting(t)
			})
		}

		t.Run("refused by the network", func(t *testing.T) {
			e.wf.refuseDestinations = map[string]bool{refundAccount2: true}
			body := requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {refundAccount2}}), http.StatusUnprocessableEntity)
			assert.Contains(t, body, "No such account on the network")
			assert.Regexp(t, `id="address"[^>]* aria-invalid="true"`, body)
			stillWaiting(t)
		})

		t.Run("while another submission is being checked", func(t *testing.T) {
			now := e.clock.Now()
			_, taken, err := e.st.TakeRefundClaim(t.Context(), c.token, now, now.Add(checkout.RefundClaimLease))
			require.NoError(t, err)
			require.True(t, taken)
			body := requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {refundAccount}}), http.StatusConflict)
			assert.Contains(t, body, "<h1>This link is being used right now</h1>")
			stillWaiting(t)
			e.clock.Advance(checkout.RefundClaimLease)
		})

		require.Len(t, moves.requests(), 1, "only the network's refusal reached the workflow")
		body := requireClaimPage(t, e.postClaim(t, c.token, url.Values{
			"address": {refundAccount}, "memo_type": {"text"}, "memo": {"exchange 7"},
		}), http.StatusOK, refundAccount, "exchange 7")
		assert.Contains(t, body, "<h1>Thank you</h1>")
		assert.Contains(t, body, "Address received")
		assert.NotContains(t, body, "<form", "nothing more to fill in")

		e.requireClaimed(t, key, c.refundID, "text", "exchange 7")
		got := moves.requests()
		require.Len(t, got, 2)
		hash, _ := models.RefundClaimHash(c.token)
		assert.Equal(t, workflows.RefundDestinationRequest{
			Destination: models.RefundDestination{Address: refundAccount, MemoType: "text", Memo: "exchange 7"}, By: "claim",
			Claim: hash,
		}, got[1], "set through the refund's workflow, by the claim, named by its hash: the token is a credential")
		assert.Nil(t, decodeOrderView(t, e.get(t, "/v1/orders/"+c.orderID, key)).RefundDestination, "the order's destination is the client's")

		// Once: a second submission, or another look, finds nothing.
		again := requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {refundAccount2}}), http.StatusNotFound)
		assert.Contains(t, again, "<h1>This link does not work</h1>")
		requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusNotFound)
		assert.Equal(t, refundAccount, *e.readRefund(t, key, c.refundID).Destination.Address, "the first destination stands")
		assert.Len(t, moves.requests(), 2)
	})
}

// A submission held up past the link's lease (a worker's backlog) lets a
// second one take the link; whichever write reaches the refund second is
// refused, and its payer told the link no longer works, not a failure:
// the first destination stands.
func TestClaimSubmitRefusedOnceTheLinkIsUsed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, moves, key, c := newClaimSubmitEnv(t, dialect)
		hash, _ := models.RefundClaimHash(c.token)

		// The first submission takes the link; its write is held up.
		now := e.clock.Now()
		_, taken, err := e.st.TakeRefundClaim(t.Context(), c.token, now, now.Add(checkout.RefundClaimLease))
		require.NoError(t, err)
		require.True(t, taken)
		e.clock.Advance(checkout.RefundClaimLease + time.Second)
		// It reaches the refund's workflow just before the second one's.
		moves.before = func() {
			_, err := e.st.UpdateRefundByClaim(context.Background(), c.refundID, hash, e.clock.Now(), func(r models.Refund) (models.Refund, error) {
				return models.SetRefundDestination(r, models.RefundDestination{Address: refundAccount})
			})
			require.NoError(t, err)
		}

		body := requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {refundAccount2}}), http.StatusNotFound, refundAccount)
		assert.Contains(t, body, "<h1>This link does not work</h1>")
		assert.Contains(t, body, "If you already entered your address, nothing more is needed.")
		require.Len(t, moves.requests(), 1, "the second submission reached the workflow")

		r := e.readRefund(t, key, c.refundID)
		assert.Equal(t, "awaiting_approval", r.Status)
		require.NotNil(t, r.Destination)
		assert.Equal(t, refundAccount, *r.Destination.Address, "the first destination stands")
		assert.Nil(t, r.ClaimURL, "used")
	})
}

// A failed refund's payer gives a new address through the new link: the
// refund waits for approval again.
func TestClaimAfterAFailedPayout(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	c := e.newClaimRefund(t, key)
	e.moveRefund(t, c.refundID, func(r models.Refund, _ time.Time) (models.Refund, error) {
		return models.SetRefundDestination(r, models.RefundDestination{Address: refundAccount2})
	})
	e.failRefund(t, c.refundID, "No such account on the network.")
	token := claimTokenOf(t, e.readRefund(t, key, c.refundID))

	body := requireClaimPage(t, e.get(t, "/claim/"+token, ""), http.StatusOK, refundAccount2)
	assert.Contains(t, body, `<p class="note" id="failure">`)
	requireClaimPage(t, e.postClaim(t, token, url.Values{"address": {refundAccount}}), http.StatusOK, refundAccount2)
	r := e.readRefund(t, key, c.refundID)
	assert.Equal(t, "awaiting_approval", r.Status)
	assert.Equal(t, refundAccount, *r.Destination.Address)
	assert.Nil(t, r.FailureReason, "a new destination clears the failure")
	assert.Nil(t, r.ClaimURL)
}

// The pages share the tracking page's per-address budget, and refuse
// with a page of their own look.
func TestClaimPageRateLimit(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite, func(s *ordersSetup) { cfg := &s.cfg; cfg.PublicRateLimit = 3 })
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	c := e.newClaimRefund(t, key)
	requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusOK)
	requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {"G"}}), http.StatusUnprocessableEntity)
	require.Equal(t, http.StatusOK, e.get(t, "/track/"+c.number, "").status, "one budget with the tracking page")
	for _, r := range []response{e.get(t, "/claim/"+c.token, ""), e.postClaim(t, c.token, url.Values{"address": {refundAccount}})} {
		body := requireClaimPage(t, r, http.StatusTooManyRequests)
		assert.Contains(t, body, "<h1>Too many requests</h1>")
		assert.Contains(t, body, "This page shows one refund", "the claim page's look")
		assert.NotEmpty(t, r.header.Get("Retry-After"))
	}
	assert.Equal(t, "awaiting_destination", e.readRefund(t, key, c.refundID).Status, "the refused submission set nothing")
}

// failingClaims answers every claim lookup with err.
type failingClaims struct {
	api.Store
	err error
}

func (s failingClaims) RefundByClaim(context.Context, string, time.Time) (models.Refund, error) {
	return models.Refund{}, s.err
}

// A payer's browser gets pages, never the API's JSON, nor its internals:
// 503 with Retry-After when the database is down, 500 on a bug.
func TestClaimPageFailures(t *testing.T) {
	down := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err    error
		status int
		title  string
	}{
		{fmt.Errorf("reading refund claim: %w", down), http.StatusServiceUnavailable, "Refunds are unavailable for a moment"},
		{errors.New("a bug"), http.StatusInternalServerError, "Something went wrong"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			e := newOrdersEnv(t, sqlstore.DialectSQLite, func(s *ordersSetup) {
				d := &s.deps
				d.Store = failingClaims{Store: d.Store, err: tc.err}
			})
			token := strings.Repeat("A", 43)
			for _, r := range []response{e.get(t, "/claim/"+token, ""), e.postClaim(t, token, url.Values{"address": {refundAccount}})} {
				body := requireClaimPage(t, r, tc.status)
				assert.Contains(t, body, "<h1>"+tc.title+"</h1>")
				assert.NotContains(t, body, "a bug")
				assert.NotContains(t, body, "refused")
				if tc.status == http.StatusServiceUnavailable {
					assert.NotEmpty(t, r.header.Get("Retry-After"))
				}
			}
		})
	}
}

// The token is a credential: a request's trace names the route, never
// the path it was sent to, also when the rate limit refuses it.
func TestClaimTokenNotInTraces(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	e := newOrdersEnv(t, sqlstore.DialectSQLite, func(s *ordersSetup) {
		cfg, d := &s.cfg, &s.deps
		d.Tracer = tp
		cfg.PublicRateLimit = 2
	})
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
	c := e.newClaimRefund(t, key)
	spans.Reset()
	requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusOK)
	requireClaimPage(t, e.postClaim(t, c.token, url.Values{"address": {"G"}}), http.StatusUnprocessableEntity)
	requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusTooManyRequests)

	got := spans.GetSpans()
	require.Len(t, got, 3)
	for _, s := range got {
		assert.Contains(t, []string{"GET /claim/:token", "POST /claim/:token"}, s.Name)
		b, err := json.Marshal(s.Attributes)
		require.NoError(t, err)
		assert.NotContains(t, string(b), c.token, "span %s", s.Name)
		assert.Contains(t, string(b), "/claim/{token}", "the path is recorded as the route")
	}
}

// The form the page sends is what api/openapi.json documents for
// POST /claim/{token}, and the document refuses what the form cannot send.
func TestClaimFormMatchesOpenAPI(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	token := strings.Repeat("A", 43)
	for _, tc := range []struct {
		form  string
		valid bool
	}{
		{"address=" + refundAccount + "&memo_type=none&memo=", true},
		{"address=" + refundAccount + "&memo_type=text&memo=exchange+7", true},
		{"address=" + refundAccount, true},
		{"address=" + refundAccount + "&memo_type=return&memo=x", false},
		{"memo_type=none", false},
	} {
		t.Run(tc.form, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/claim/"+token, strings.NewReader(tc.form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			err := v.validateRequest(t, req)
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// capturingSender answers 200 to every delivery and keeps the last one.
type capturingSender struct {
	header http.Header
	body   []byte
}

func (s *capturingSender) Send(_ context.Context, _ models.Mode, _ string, h http.Header, body []byte) (int, error) {
	s.header, s.body = h, append([]byte(nil), body...)
	return http.StatusOK, nil
}

// refund.created and refund.failed deliver the claim_url GET shows then,
// so the API client can forward the link from the event alone, signed
// over the very bytes delivered. The stored event holds no token: the
// link is rendered at each delivery while its claim works, and a
// delivery after the link was used, replaced or expired carries null.
func TestClaimURLInRefundEvents(t *testing.T) {
	e, _ := newWebhookEnv(t, sqlstore.DialectSQLite)
	ctx := t.Context()
	key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	ep, r := createEndpoint(t, e, key, endpointReq("https://hooks.example.com/x", "refund.created", "refund.failed"))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	c := e.newClaimRefund(t, key)
	sender := &capturingSender{}
	attempter := activities.WebhookAttempter{Webhooks: e.st, Sender: sender, Now: e.clock.Now}
	eventOf := func(typ models.EventType) string {
		t.Helper()
		pending, err := e.st.PendingOrderWebhookEvents(ctx, c.orderID)
		require.NoError(t, err)
		for _, p := range pending {
			if p.Type == typ {
				return p.ID
			}
		}
		require.Failf(t, "no event", "%s", typ)
		return ""
	}
	deliver := func(evID string) *string {
		t.Helper()
		require.NoError(t, attempter.Attempt(ctx, activities.DeliverWebhookInput{EventID: evID, EndpointID: ep.ID, Dispatch: "test/" + evID}, 1))
		require.NoError(t, models.VerifyWebhookSignature(*ep.Secret, sender.header.Get(models.WebhookSignatureHeader), sender.body, e.clock.Now(), time.Minute),
			"signed over the bytes delivered")
		var body struct {
			Data struct {
				Refund struct {
					ClaimURL *string `json:"claim_url"`
				} `json:"refund"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sender.body, &body))
		return body.Data.Refund.ClaimURL
	}
	stored := func(evID string) string {
		t.Helper()
		ev, err := e.st.WebhookEventForAccount(ctx, accountID, models.ModeTest, evID)
		require.NoError(t, err)
		return string(ev.Payload)
	}

	created := eventOf(models.EventRefundCreated)
	assert.NotContains(t, stored(created), c.token, "the stored event holds no link")
	link := deliver(created)
	require.NotNil(t, link, "refund.created carries the claim_url: %s", sender.body)
	assert.Equal(t, claimPrefix+c.token, *link)
	requireClaimPage(t, e.get(t, "/claim/"+c.token, ""), http.StatusOK)

	e.moveRefund(t, c.refundID, func(r models.Refund, _ time.Time) (models.Refund, error) {
		return models.SetRefundDestination(r, models.RefundDestination{Address: refundAccount})
	})
	assert.Nil(t, deliver(created), "a link no longer working is not delivered")
	e.failRefund(t, c.refundID, "No such account on the network.")
	second := claimTokenOf(t, e.readRefund(t, key, c.refundID))
	failed := eventOf(models.EventRefundFailed)
	assert.NotContains(t, stored(failed), second)
	link = deliver(failed)
	require.NotNil(t, link, "refund.failed carries the new claim_url: %s", sender.body)
	assert.Equal(t, claimPrefix+second, *link)
	assert.Nil(t, deliver(created), "an older event does not take up the newer link")
	e.clock.Advance(models.RefundClaimTTL)
	assert.Nil(t, deliver(failed), "expired")
}
