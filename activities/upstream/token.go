package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TokenCache holds the access token of one client-credentials grant,
// shared by every call made with it. It is safe for concurrent use.
//
// It is not oauth2.ReuseTokenSourceWithExpiry, for two reasons: a reuse
// source cannot be told that the API rejected its token (a 401 must fetch
// a new one), and it fetches with the context it was built with, so the
// token request would not honour the caller's deadline. It still uses
// clientcredentials for the request itself, unless built with
// NewTokenCacheFunc for an endpoint clientcredentials cannot speak. Only
// the access token is kept: callers write "Bearer" themselves, whatever
// token_type said.
type TokenCache struct {
	conf   clientcredentials.Config
	fetch  func(ctx context.Context) (*oauth2.Token, error)
	margin time.Duration
	now    func() time.Time
	// sem serialises fetches, so concurrent callers share one token
	// request instead of each making their own; a channel rather than a
	// mutex so a waiting caller can give up with its context.
	sem     chan struct{}
	tok     string
	expires time.Time // zero: keep until Invalidate
}

// NewTokenCache returns a cache that fetches tokens for conf through
// client (nil: oauth2's default) and replaces each margin before it
// expires, on the clock now (nil: time.Now). A token whose lifetime is
// under twice the margin is kept for half of it instead.
func NewTokenCache(conf clientcredentials.Config, client *http.Client, margin time.Duration, now func() time.Time) *TokenCache {
	fetch := func(ctx context.Context) (*oauth2.Token, error) {
		if client != nil {
			ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
		}
		return conf.Token(ctx)
	}
	c := NewTokenCacheFunc(fetch, margin, now)
	c.conf = conf
	return c
}

// NewTokenCacheFunc returns a cache that fetches tokens with fetch, for a
// token endpoint whose request clientcredentials cannot make (a JSON
// body). fetch must report an endpoint's refusal as *oauth2.RetrieveError
// with its Response, so CredentialsRejected and TokenStatus read it as
// they read clientcredentials' errors.
func NewTokenCacheFunc(fetch func(ctx context.Context) (*oauth2.Token, error), margin time.Duration, now func() time.Time) *TokenCache {
	if now == nil {
		now = time.Now
	}
	return &TokenCache{fetch: fetch, margin: margin, now: now, sem: make(chan struct{}, 1)}
}

// Config returns the grant the cache fetches tokens for; zero for a cache
// made by NewTokenCacheFunc.
func (t *TokenCache) Config() clientcredentials.Config {
	c := t.conf
	c.Scopes = slices.Clone(c.Scopes)
	c.EndpointParams = maps.Clone(c.EndpointParams)
	return c
}

// Token returns a live access token, fetching one with ctx if needed.
func (t *TokenCache) Token(ctx context.Context) (string, error) {
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-t.sem }()
	if t.tok != "" && (t.expires.IsZero() || t.now().Before(t.expires)) {
		return t.tok, nil
	}
	tok, err := t.fetch(ctx)
	if err == nil && tok == nil {
		err = errors.New("token request answered no token")
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The caller gave up: that is the cause, whatever the token
			// request made of its cut-off answer (an aborted exchange can
			// surface as an empty body oauth2 fails to parse).
			return "", fmt.Errorf("%w: %w", ctxErr, err)
		}
		return "", err
	}
	if tok.AccessToken == "" {
		return "", errors.New("token response without an access token")
	}
	t.tok = tok.AccessToken
	// oauth2 turned expires_in into an instant on the real clock; the
	// lifetime is carried over to the cache's clock, so tests can move
	// time.
	var lifetime time.Duration
	if !tok.Expiry.IsZero() {
		lifetime = time.Until(tok.Expiry)
	}
	switch {
	case lifetime > 2*t.margin:
		t.expires = t.now().Add(lifetime - t.margin)
	case lifetime > 0:
		t.expires = t.now().Add(lifetime / 2)
	default:
		// No expires_in: keep the token until the API rejects it.
		t.expires = time.Time{}
	}
	return t.tok, nil
}

// TokenWithin returns a live access token for one call, fetching one
// within timeout if needed. The caller's ctx ending is ctx.Err(). The
// endpoint refusing the credentials (CredentialsRejected), which retrying
// cannot fix, is refused(err), for the caller to log and answer; any other
// failure is failed(its status, err), retried like an outage.
func (t *TokenCache) TokenWithin(ctx context.Context, timeout time.Duration,
	refused func(err error) error, failed func(status int, err error) error) (string, error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	token, err := t.Token(tctx)
	cancel()
	switch {
	case err == nil:
		return token, nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case CredentialsRejected(err):
		return "", refused(err)
	}
	return "", failed(TokenStatus(err), fmt.Errorf("token: %w", err))
}

// Invalidate forgets access, a token the API just rejected (a 401), if it
// is still the cached one; a token another caller already replaced stays.
func (t *TokenCache) Invalidate(access string) {
	t.sem <- struct{}{}
	defer func() { <-t.sem }()
	if t.tok == access {
		t.tok = ""
	}
}

// CredentialsRejected reports whether a token request failed because the
// endpoint refused the credentials (or scope), which retrying cannot fix,
// as opposed to an outage, which it may.
func CredentialsRejected(err error) bool {
	switch TokenStatus(err) {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return false
}

// TokenErrorCode returns the OAuth error code of a refused token request
// ("invalid_client"): safe to log, unlike the response body.
func TokenErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// TokenStatus returns the HTTP status of a failed token request, 0 if no
// answer arrived.
func TokenStatus(err error) int {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}
