package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/memocart/memocart/activities/upstream"
)

// maxPageSize bounds a page body: 200 records with their joined
// transactions, XDR included, stay far below it.
const maxPageSize = 64 << 20

// maxRetryAfter caps a server's Retry-After, so a wrong header cannot park
// the watcher for hours.
const maxRetryAfter = 10 * time.Minute

// httpError is a non-2xx answer from Horizon, with its problem details
// (Horizon answers errors as RFC 7807 problem JSON) when it sent them.
type httpError struct {
	Status int
	Type   string // e.g. https://stellar.org/horizon-errors/before_history
	Title  string
	Detail string
	// InvalidField and Reason are a bad_request's extras: the parameter
	// Horizon refused (account_id, cursor...) and why. The watcher stops
	// on a 400, so the alert must say what to fix.
	InvalidField string
	Reason       string
	RetryAfter   time.Duration // from the Retry-After header, 0 if none
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("horizon answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Type != "" {
		msg += " (" + e.Type + ")"
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.InvalidField != "" {
		msg += " [invalid " + e.InvalidField
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		msg += "]"
	}
	return msg
}

// beforeHistory reports whether the server no longer holds the history
// the request asked for.
func (e *httpError) beforeHistory() bool {
	return e.Status == http.StatusGone && strings.HasSuffix(e.Type, "before_history")
}

// permanent reports whether retrying the same request cannot succeed: the
// server rejected the request itself (a bug, or a corrupt saved cursor).
// 404 is not among them: a not-yet-funded account, or a testnet reset,
// answers 404 until it exists again.
func (e *httpError) permanent() bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusMethodNotAllowed, http.StatusNotAcceptable:
		return true
	}
	return false
}

// readError turns a non-2xx response into an *httpError.
func readError(resp *http.Response, now time.Time) *httpError {
	e := &httpError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), now)}
	// Real 429 bodies say "detail", Horizon's documentation sample says
	// "details": either is read. details and extras stay raw so that an
	// unexpected shape of either does not lose the rest of the problem.
	var p struct {
		Type    string          `json:"type"`
		Title   string          `json:"title"`
		Detail  string          `json:"detail"`
		Details json.RawMessage `json:"details"`
		Extras  json.RawMessage `json:"extras"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(body, &p) != nil {
		return e
	}
	e.Type, e.Title, e.Detail = p.Type, p.Title, p.Detail
	if e.Detail == "" && len(p.Details) > 0 {
		_ = json.Unmarshal(p.Details, &e.Detail)
	}
	var extras struct {
		InvalidField string `json:"invalid_field"`
		Reason       string `json:"reason"`
	}
	if len(p.Extras) > 0 && json.Unmarshal(p.Extras, &extras) == nil {
		e.InvalidField, e.Reason = extras.InvalidField, extras.Reason
	}
	return e
}

// retryAfter is a Retry-After header's wait (upstream.RetryAfter), capped
// at maxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	return min(upstream.RetryAfter(v, now), maxRetryAfter)
}

// paymentsURL builds the account's payments URL from the configured base,
// never from links in responses.
func (w *Watcher) paymentsURL(q url.Values) string {
	return w.base + "/accounts/" + url.PathEscape(w.cfg.Account) + "/payments?" + q.Encode()
}

// fetchPage GETs one page of the account's payments.
func (w *Watcher) fetchPage(ctx context.Context, q url.Values) ([]record, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.paymentsURL(q), nil)
	if err != nil {
		return nil, fmt.Errorf("building page request: %w", err)
	}
	req.Header.Set("Accept", "application/hal+json, application/json")
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("requesting payments page: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp, time.Now())
	}
	var p page
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxPageSize)).Decode(&p); err != nil {
		return nil, fmt.Errorf("decoding payments page: %w", err)
	}
	return p.Embedded.Records, nil
}

// errStreamContentType means the server answered a stream request with
// something other than an event stream (a proxy's page, say).
var errStreamContentType = errors.New("stream answered without text/event-stream")

// openStream starts the account's payment stream after cursor.
func (w *Watcher) openStream(ctx context.Context, cursor string) (*http.Response, error) {
	q := url.Values{}
	q.Set("cursor", cursor)
	q.Set("join", "transactions")
	// Horizon closes a stream after `limit` events (default 10); asking
	// for its maximum keeps reconnections rare.
	q.Set("limit", strconv.Itoa(w.cfg.PageLimit))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.paymentsURL(q), nil)
	if err != nil {
		return nil, fmt.Errorf("building stream request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opening payments stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer func() { _ = resp.Body.Close() }()
		return nil, readError(resp, time.Now())
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: %q", errStreamContentType, resp.Header.Get("Content-Type"))
	}
	return resp, nil
}
