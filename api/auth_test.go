package api_test

import (
	"cmp"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

const validPreviewURL = "https://www.amazon.com/dp/B07XJ8C8F5"

func TestAuthentication(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		good := e.key(t, "acme", models.ModeTest, models.TierFree)

		revoked, revokedKey := mustAccountKey(t, e, "acme")
		_, err := e.st.RevokeAPIKey(t.Context(), revokedKey, e.clock.Now())
		require.NoError(t, err)

		unknown, err := models.NewAPIKeySecret("mc", models.ModeTest, rand.Reader)
		require.NoError(t, err)
		unknownLive, err := models.NewAPIKeySecret("mc", models.ModeLive, rand.Reader)
		require.NoError(t, err)

		const (
			missingMsg = "No API key in Authorization header"
			invalidMsg = "API key is invalid or revoked"
		)
		const (
			noScheme    = `Authorization header must be "Bearer <API key>": the Bearer scheme is missing`
			otherScheme = `Authorization header must be "Bearer <API key>": the scheme is not Bearer`
			noKey       = `Authorization header must be "Bearer <API key>": no key follows Bearer`
		)
		tests := []struct {
			name string
			auth string // whole Authorization header; "" sends none
			code models.Code
			msg  string // of a missing_api_key; "" = the contract's
		}{
			{"no header", "", models.CodeMissingAPIKey, ""},
			{"basic scheme", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", models.CodeMissingAPIKey, otherScheme},
			{"basic scheme with a real key", "Basic " + good, models.CodeMissingAPIKey, otherScheme},
			{"bearer without a key", "Bearer ", models.CodeMissingAPIKey, noKey},
			{"bearer with blanks only", "Bearer    ", models.CodeMissingAPIKey, noKey},
			{"key without scheme", good, models.CodeMissingAPIKey, noScheme},
			{"malformed: wrong prefix", "Bearer sk_test_" + strings.Repeat("a", 32), models.CodeInvalidAPIKey, ""},
			{"malformed: unknown mode", "Bearer mc_prod_" + strings.Repeat("a", 32), models.CodeInvalidAPIKey, ""},
			{"malformed: secret too short", "Bearer mc_test_abc", models.CodeInvalidAPIKey, ""},
			{"malformed: bad characters", "Bearer mc_test_" + strings.Repeat("a", 30) + "!?", models.CodeInvalidAPIKey, ""},
			{"malformed: garbage", "Bearer hello", models.CodeInvalidAPIKey, ""},
			{"well-formed but unknown test key", "Bearer " + unknown, models.CodeInvalidAPIKey, ""},
			{"well-formed but unknown live key", "Bearer " + unknownLive, models.CodeInvalidAPIKey, ""},
			{"revoked key", "Bearer " + revoked, models.CodeInvalidAPIKey, ""},
			{"key with a character changed", "Bearer " + good[:len(good)-1] + flip(good[len(good)-1]), models.CodeInvalidAPIKey, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, path := range []string{"/v1/products/preview", "/v1/carts"} {
					r := e.send(t, request{method: http.MethodPost, path: path, auth: tt.auth, body: previewBody(validPreviewURL)})
					d := requireError(t, r, http.StatusUnauthorized, tt.code, "")
					want := invalidMsg
					if tt.code == models.CodeMissingAPIKey {
						want = cmp.Or(tt.msg, missingMsg)
					}
					assert.Equal(t, want, d.Message, path)
					assert.Empty(t, r.header.Get("X-RateLimit-Limit"), "rejected before the rate limiter")
					assert.Empty(t, r.header.Get("X-RateLimit-Remaining"), "rejected before the rate limiter")
					assert.NotContains(t, string(r.body), good, "the key is never echoed")
				}
				r := e.send(t, request{method: http.MethodGet, path: "/v1/carts/crt_anything", auth: tt.auth})
				requireError(t, r, http.StatusUnauthorized, tt.code, "")
			})
		}

		accepted := []struct {
			name string
			auth string
		}{
			{"Bearer", "Bearer " + good},
			{"lowercase bearer", "bearer " + good},
			{"uppercase BEARER", "BEARER " + good},
			{"extra blanks", "Bearer   " + good + "  "},
		}
		for _, tt := range accepted {
			t.Run("accepted "+tt.name, func(t *testing.T) {
				r := e.send(t, request{method: http.MethodPost, path: "/v1/products/preview", auth: tt.auth, body: previewBody(validPreviewURL)})
				assert.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			})
		}

		t.Run("revocation takes effect on a key that worked, within the cache's bound", func(t *testing.T) {
			secret, id := mustAccountKey(t, e, "initech")
			r := e.post(t, "/v1/products/preview", secret, previewBody(validPreviewURL))
			require.Equal(t, http.StatusOK, r.status)
			_, err := e.st.RevokeAPIKey(t.Context(), id, e.clock.Now())
			require.NoError(t, err)
			// The replica trusts its answer for DefaultKeyCacheTTL, no longer.
			e.clock.Advance(api.DefaultKeyCacheTTL - time.Millisecond)
			r = e.post(t, "/v1/products/preview", secret, previewBody(validPreviewURL))
			require.Equal(t, http.StatusOK, r.status, "still cached")
			e.clock.Advance(time.Millisecond)
			r = e.post(t, "/v1/products/preview", secret, previewBody(validPreviewURL))
			requireError(t, r, http.StatusUnauthorized, models.CodeInvalidAPIKey, "")
		})
	})
}

// mustAccountKey returns a new Free test key's secret and id.
func mustAccountKey(t *testing.T, e *env, account string) (secret, id string) {
	t.Helper()
	secret = e.key(t, account, models.ModeTest, models.TierFree)
	k, err := e.st.AuthenticateAPIKey(t.Context(), models.HashAPIKey(secret))
	require.NoError(t, err)
	return secret, k.ID
}

// flip returns a different base62 character than c.
func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func TestAuthenticationStoreFailureIsInternalError(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect, withStore(func(s api.Store) api.Store {
			return failingStore{Store: s, authErr: errors.New(secretDetail)}
		}))
		key := e.key(t, "acme", models.ModeTest, models.TierFree)
		r := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
		requireError(t, r, http.StatusInternalServerError, models.CodeInternal, "")
		assert.NotContains(t, string(r.body), "hunter2")
	})
}
