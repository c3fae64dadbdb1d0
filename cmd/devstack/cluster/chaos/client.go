package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// apiClient sends the load's requests the way a careful client does: each
// POST under one Idempotency-Key, retried with the same key after a
// network error, a 5xx or 409 idempotency_key_in_use, alternating between
// the two API replicas, so a retry can never make a second order.
type apiClient struct {
	bases [2]string
	key   string
	hc    *http.Client
	// giveUp bounds one operation's retries: longer than any planned
	// outage plus the idempotency takeover (request timeout + 30 s).
	giveUp time.Duration
	stats  *clientStats
}

// clientStats are counted across every load request.
type clientStats struct {
	requests, retries, netErrors, inUse        atomic.Int64
	status503, status5xxOther, notEnvelope5xx  atomic.Int64
	unexpected4xx, gaveUp, paymentsNotCredited atomic.Int64
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   map[string]any
}

// errorCode returns the envelope's error.code ("" when not an envelope).
func (a answer) errorCode() string {
	e, _ := a.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// newKey returns a fresh Idempotency-Key.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "chaos-" + hex.EncodeToString(b)
}

// do sends one request once to base.
func (c *apiClient) do(ctx context.Context, method, url, idemKey string, body []byte) (answer, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		a.body = nil
	}
	return a, nil
}

// errGaveUp is an operation whose retries ran out.
var errGaveUp = errors.New("gave up retrying")

// post sends a POST with a fresh Idempotency-Key until it gets an answer
// below 500 other than 409 idempotency_key_in_use, starting on replica
// first and switching replica at each retry. It returns that answer; a
// 4xx is returned as an answer, not an error.
func (c *apiClient) post(ctx context.Context, first int, path string, body any) (answer, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return answer{}, err
		}
	}
	key := newKey()
	deadline := time.Now().Add(c.giveUp)
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			c.stats.retries.Add(1)
		}
		c.stats.requests.Add(1)
		a, err := c.do(ctx, http.MethodPost, c.bases[(first+attempt)%2]+path, key, raw)
		wait := backoff
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return answer{}, ctx.Err()
			}
			c.stats.netErrors.Add(1)
		case a.status >= 500:
			c.count5xx(a)
			if s, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil && s > 0 {
				wait = max(wait, time.Duration(s)*time.Second)
			}
		case a.status == http.StatusConflict && a.errorCode() == "idempotency_key_in_use":
			// The key's first request still runs, or died holding it:
			// the service hands it over after its timeout.
			c.stats.inUse.Add(1)
			wait = time.Second
		default:
			if a.status >= 400 {
				c.stats.unexpected4xx.Add(1)
			}
			return a, nil
		}
		if time.Now().Add(wait).After(deadline) {
			c.stats.gaveUp.Add(1)
			return answer{}, fmt.Errorf("POST %s: %w after %d attempts", path, errGaveUp, attempt+1)
		}
		select {
		case <-ctx.Done():
			return answer{}, ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// count5xx counts a 5xx answer: a 503 in the envelope is the service's
// promise ("retry the same request"); anything else is noted.
func (c *apiClient) count5xx(a answer) {
	if a.status == http.StatusServiceUnavailable {
		c.stats.status503.Add(1)
	} else {
		c.stats.status5xxOther.Add(1)
	}
	if a.errorCode() == "" {
		c.stats.notEnvelope5xx.Add(1)
	}
}
