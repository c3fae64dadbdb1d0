package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
)

// headerInt reads an integer response header.
func headerInt(t *testing.T, r response, name string) int {
	t.Helper()
	v := r.header.Get(name)
	require.NotEmptyf(t, v, "header %s missing", name)
	n, err := strconv.Atoi(v)
	require.NoErrorf(t, err, "header %s=%q is not an integer", name, v)
	return n
}

// exhaust spends a key's whole budget at one instant, checking the headers
// of every allowed request, then checks the refusal that follows and
// returns its Retry-After in seconds.
func exhaust(t *testing.T, e *env, key string, limit int) int {
	t.Helper()
	for i := range limit {
		r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
		require.Equalf(t, http.StatusOK, r.status, "request %d of %d; body %s", i+1, limit, r.body)
		require.Equal(t, limit, headerInt(t, r, "X-RateLimit-Limit"), "request %d", i+1)
		require.Equal(t, limit-1-i, headerInt(t, r, "X-RateLimit-Remaining"), "request %d", i+1)
	}
	r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
	requireError(t, r, http.StatusTooManyRequests, models.CodeRateLimited, "")
	assert.Equal(t, limit, headerInt(t, r, "X-RateLimit-Limit"))
	assert.Equal(t, 0, headerInt(t, r, "X-RateLimit-Remaining"))
	retry := headerInt(t, r, "Retry-After")
	require.GreaterOrEqual(t, retry, 1, "Retry-After is whole seconds, at least 1")
	require.LessOrEqual(t, retry, 60, "one request refills within the minute")
	return retry
}

func TestRateLimits(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)

		t.Run("free key: 60 per minute, then 429 until Retry-After", func(t *testing.T) {
			key := e.key(t, "free-co", models.ModeTest, models.TierFree)
			retry := exhaust(t, e, key, models.FreePerMinute)

			// Allowed again once Retry-After has passed.
			e.clock.Advance(time.Duration(retry) * time.Second)
			r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
			assert.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			assert.Empty(t, r.header.Get("Retry-After"), "no Retry-After on an allowed request")
		})

		t.Run("every endpoint spends the same budget", func(t *testing.T) {
			key := e.key(t, "mixed-co", models.ModeTest, models.TierFree)
			r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
			require.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, models.FreePerMinute-1, headerInt(t, r, "X-RateLimit-Remaining"))
			r = e.post(t, "/v1/carts", key, `{"items":[{"product_url":"`+validPreviewURL+`","quantity":1}],"ship_to_country":"US"}`)
			require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
			assert.Equal(t, models.FreePerMinute-2, headerInt(t, r, "X-RateLimit-Remaining"))
		})

		t.Run("pro key: 600 per minute", func(t *testing.T) {
			key := e.key(t, "pro-co", models.ModeTest, models.TierPro)
			for i := range 3 {
				r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
				require.Equal(t, http.StatusOK, r.status)
				assert.Equal(t, models.ProPerMinute, headerInt(t, r, "X-RateLimit-Limit"))
				assert.Equal(t, models.ProPerMinute-1-i, headerInt(t, r, "X-RateLimit-Remaining"))
			}
		})

		t.Run("enterprise key: its own budget", func(t *testing.T) {
			key := e.enterpriseKey(t, "ent-co", 5)
			exhaust(t, e, key, 5)
		})

		t.Run("keys are limited independently", func(t *testing.T) {
			a := e.enterpriseKey(t, "shared-co", 5)
			b := e.enterpriseKey(t, "shared-co", 5) // same account, another key
			other := e.key(t, "other-co", models.ModeTest, models.TierFree)
			exhaust(t, e, a, 5)

			r := e.post(t, "/v1/products/preview", b, previewBody(validPreviewURL))
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			assert.Equal(t, 4, headerInt(t, r, "X-RateLimit-Remaining"))
			r = e.post(t, "/v1/products/preview", other, previewBody(validPreviewURL))
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			assert.Equal(t, models.FreePerMinute-1, headerInt(t, r, "X-RateLimit-Remaining"))

			r = e.post(t, "/v1/products/preview", a, previewBody(validPreviewURL))
			requireError(t, r, http.StatusTooManyRequests, models.CodeRateLimited, "")
		})

		t.Run("unauthenticated requests carry no rate-limit headers", func(t *testing.T) {
			r := e.send(t, request{method: http.MethodPost, path: "/v1/products/preview", body: previewBody(validPreviewURL)})
			requireError(t, r, http.StatusUnauthorized, models.CodeMissingAPIKey, "")
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
				assert.Emptyf(t, r.header.Get(h), "header %s", h)
			}
		})
	})
}

// TestKeyBudgetsAreEnforceable: no key can carry a budget the limiter
// refuses (which used to serve the key unlimited, without headers).
func TestKeyBudgetsAreEnforceable(t *testing.T) {
	assert.LessOrEqual(t, models.MaxPerMinute, ratelimit.MaxPerMinute)
	k := models.APIKey{Tier: models.TierEnterprise, PerMinute: 1 << 40}
	assert.Equal(t, models.MaxPerMinute, k.RateLimit(), "a stored budget above the maximum is capped")
	_, err := ratelimit.NewMemory(nil).Allow(t.Context(), "k", k.RateLimit())
	assert.NoError(t, err)
}
