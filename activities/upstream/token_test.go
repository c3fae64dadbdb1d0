package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/memocart/memocart/models/clocktest"
)

const (
	testID     = "client-id"
	testSecret = "client-secret"
	testScope  = "api::read"
)

// tokenServer is a client-credentials token endpoint that grants tok-1,
// tok-2, … to testID and testSecret sent with HTTP Basic.
type tokenServer struct {
	*httptest.Server
	fetches atomic.Int32

	mu        sync.Mutex
	expiresIn int    // seconds; 0 leaves expires_in out
	tokenType string // default "bearer"
	status    int    // non-zero: refuse with it and refusal as the body
	refusal   string
	gate      chan struct{} // non-nil: each answer waits for it to close
	arrived   chan struct{} // told of every request before the gate
	quit      chan struct{} // closed at cleanup, so no answer outwaits Close
}

func newTokenServer(t *testing.T) *tokenServer {
	t.Helper()
	s := &tokenServer{expiresIn: 3600, tokenType: "bearer", arrived: make(chan struct{}, 100), quit: make(chan struct{})}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.quit) }) // runs first
	return s
}

func (s *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm() // read the body first, so a gone client cancels r's context
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	s.mu.Lock()
	gate, expiresIn, tokenType, status, refusal := s.gate, s.expiresIn, s.tokenType, s.status, s.refusal
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-s.quit:
			return
		case <-r.Context().Done():
			return
		}
	}
	id, secret, ok := r.BasicAuth()
	switch {
	case status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, refusal)
		return
	case r.Method != http.MethodPost || !ok || id != testID || secret != testSecret ||
		r.PostFormValue("grant_type") != "client_credentials" || r.PostFormValue("scope") != testScope:
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	n := s.fetches.Add(1)
	ans := map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": tokenType}
	if expiresIn > 0 {
		ans["expires_in"] = expiresIn
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

func (s *tokenServer) set(f func(s *tokenServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *tokenServer) conf() clientcredentials.Config {
	return clientcredentials.Config{
		ClientID:     testID,
		ClientSecret: testSecret,
		TokenURL:     s.URL + "/token",
		Scopes:       []string{testScope},
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
}

// cache returns a cache with a one-minute margin on clock.
func (s *tokenServer) cache(clock *fakeClock) *TokenCache {
	return NewTokenCache(s.conf(), s.Client(), time.Minute, clock.Now)
}

type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
}

// TestTokenLifetime: a token is reused until its lifetime less the margin
// (half of it when that is short), and forever without expires_in.
func TestTokenLifetime(t *testing.T) {
	tests := []struct {
		name      string
		expiresIn int
		advance   time.Duration
		want      string
	}{
		{"reused at once", 3600, 0, "tok-1"},
		{"reused within its life less the margin", 3600, 3600*time.Second - time.Minute - time.Second, "tok-1"},
		{"replaced a margin before it expires", 3600, 3600*time.Second - time.Minute + time.Second, "tok-2"},
		{"replaced once expired", 3600, 2 * time.Hour, "tok-2"},
		{"short life kept for half", 100, 49 * time.Second, "tok-1"},
		{"short life replaced after half", 100, 51 * time.Second, "tok-2"},
		{"life of exactly two margins kept for half", 120, 59 * time.Second, "tok-1"},
		{"no expires_in kept", 0, 1000 * time.Hour, "tok-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTokenServer(t)
			srv.set(func(s *tokenServer) { s.expiresIn = tt.expiresIn })
			clock := newFakeClock()
			c := srv.cache(clock)
			tok, err := c.Token(t.Context())
			require.NoError(t, err)
			require.Equal(t, "tok-1", tok)

			clock.Advance(tt.advance)
			tok, err = c.Token(t.Context())
			require.NoError(t, err)
			assert.Equal(t, tt.want, tok)
			wantFetches := 1
			if tt.want == "tok-2" {
				wantFetches = 2
			}
			assert.EqualValues(t, wantFetches, srv.fetches.Load())
		})
	}
}

func TestTokenInvalidate(t *testing.T) {
	tests := []struct {
		name        string
		expiresIn   int
		invalidate  string
		wantToken   string
		wantFetches int32
	}{
		{"the cached token is dropped", 3600, "tok-1", "tok-2", 2},
		{"a token without expiry is dropped", 0, "tok-1", "tok-2", 2},
		{"another token leaves the cached one", 3600, "tok-0", "tok-1", 1},
		{"an empty token leaves the cached one", 3600, "", "tok-1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTokenServer(t)
			srv.set(func(s *tokenServer) { s.expiresIn = tt.expiresIn })
			c := srv.cache(newFakeClock())
			_, err := c.Token(t.Context())
			require.NoError(t, err)

			c.Invalidate(tt.invalidate)
			tok, err := c.Token(t.Context())
			require.NoError(t, err)
			assert.Equal(t, tt.wantToken, tok)
			assert.Equal(t, tt.wantFetches, srv.fetches.Load())
		})
	}
}

// A caller that got a 401 with a token another caller already replaced
// must not drop the replacement.
func TestTokenInvalidateStale(t *testing.T) {
	srv := newTokenServer(t)
	c := srv.cache(newFakeClock())
	stale, err := c.Token(t.Context())
	require.NoError(t, err)
	c.Invalidate(stale) // the first caller's 401
	fresh, err := c.Token(t.Context())
	require.NoError(t, err)
	require.NotEqual(t, stale, fresh)

	c.Invalidate(stale) // a second caller's 401 with the old token
	tok, err := c.Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, fresh, tok)
	assert.EqualValues(t, 2, srv.fetches.Load())
}

func TestTokenConcurrentCallersShareOneFetch(t *testing.T) {
	srv := newTokenServer(t)
	gate := make(chan struct{})
	srv.set(func(s *tokenServer) { s.gate = gate })
	c := srv.cache(newFakeClock())

	const callers = 8
	tokens := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { tokens[i], errs[i] = c.Token(t.Context()) })
	}
	// Once one fetch is at the server, give the others time to ask for
	// their own before it answers.
	<-srv.arrived
	time.Sleep(50 * time.Millisecond)
	close(gate)
	wg.Wait()

	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, "tok-1", tokens[i])
	}
	assert.EqualValues(t, 1, srv.fetches.Load())
}

// The token request runs with the caller's context, and a caller waiting
// for another's fetch can give up with its own.
func TestTokenHonoursCallerContext(t *testing.T) {
	tests := []struct {
		name string
		// busy starts another caller's fetch first, to wait behind.
		busy bool
	}{
		{"fetch bounded by the caller's deadline", false},
		{"waiting for another fetch bounded by the caller's context", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTokenServer(t)
			gate := make(chan struct{}) // the server answers nobody until the end
			srv.set(func(s *tokenServer) { s.gate = gate })
			c := srv.cache(newFakeClock())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer close(gate)
			if tt.busy {
				wg.Go(func() { _, _ = c.Token(t.Context()) })
				<-srv.arrived // the other fetch holds the cache
			}

			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			wg.Go(func() {
				_, err := c.Token(ctx)
				done <- err
			})
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			case <-time.After(5 * time.Second):
				t.Error("Token outlived the caller's deadline")
			}
		})
	}
}

// The token request goes through the client given: the test server's TLS
// certificate is only trusted by its own client.
func TestTokenUsesGivenClient(t *testing.T) {
	srv := newTokenServer(t)
	_, err := NewTokenCache(srv.conf(), nil, time.Minute, nil).Token(t.Context())
	require.Error(t, err, "the default client does not trust the test server")

	tok, err := NewTokenCache(srv.conf(), srv.Client(), time.Minute, nil).Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-1", tok)
}

// Only the access token is kept, whatever token_type says: eBay's is
// "Application Access Token", and callers write "Bearer" themselves.
func TestTokenTypeIgnored(t *testing.T) {
	for _, typ := range []string{"bearer", "Bearer", "Application Access Token", ""} {
		t.Run(typ, func(t *testing.T) {
			srv := newTokenServer(t)
			srv.set(func(s *tokenServer) { s.tokenType = typ })
			tok, err := srv.cache(newFakeClock()).Token(t.Context())
			require.NoError(t, err)
			assert.Equal(t, "tok-1", tok)
		})
	}
}

func TestTokenRefused(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		rejected bool
		code     string
	}{
		{"bad client", http.StatusUnauthorized, `{"error":"invalid_client"}`, true, "invalid_client"},
		{"bad scope", http.StatusBadRequest, `{"error":"invalid_scope"}`, true, "invalid_scope"},
		{"forbidden", http.StatusForbidden, `{}`, true, ""},
		{"outage", http.StatusServiceUnavailable, `<html>down</html>`, false, ""},
		{"throttled", http.StatusTooManyRequests, `{"error":"too_many_requests"}`, false, "too_many_requests"},
		{"no access token", http.StatusOK, `{"token_type":"bearer","expires_in":3600}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTokenServer(t)
			srv.set(func(s *tokenServer) { s.status, s.refusal = tt.status, tt.body })
			c := srv.cache(newFakeClock())
			_, err := c.Token(t.Context())
			require.Error(t, err)
			assert.Equal(t, tt.rejected, CredentialsRejected(err))
			assert.Equal(t, tt.code, TokenErrorCode(err))
			wantStatus := tt.status
			if tt.status == http.StatusOK {
				wantStatus = 0 // an answer, but not a refusal
			}
			assert.Equal(t, wantStatus, TokenStatus(err))

			// TokenWithin hands a refusal to refused, anything else to
			// failed with the answer's status.
			var refusedErr, failedErr error
			failedStatus := -1
			_, err = c.TokenWithin(t.Context(), time.Second,
				func(err error) error { refusedErr = err; return errors.New("refused") },
				func(status int, err error) error { failedStatus, failedErr = status, err; return errors.New("failed") })
			require.Error(t, err)
			if tt.rejected {
				assert.Error(t, refusedErr)
				assert.NoError(t, failedErr)
			} else {
				assert.NoError(t, refusedErr)
				assert.Error(t, failedErr)
				assert.Equal(t, wantStatus, failedStatus)
			}

			// A refusal is not cached: the next call asks again.
			srv.set(func(s *tokenServer) { s.status = 0 })
			tok, err := c.Token(t.Context())
			require.NoError(t, err)
			assert.Equal(t, "tok-1", tok)
		})
	}
}

func TestTokenErrorsWithoutAnAnswer(t *testing.T) {
	for _, err := range []error{errors.New("dial tcp: connection refused"), context.DeadlineExceeded, nil} {
		assert.False(t, CredentialsRejected(err), "%v", err)
		assert.Zero(t, TokenStatus(err), "%v", err)
		assert.Empty(t, TokenErrorCode(err), "%v", err)
	}
}

func TestTokenConfigIsACopy(t *testing.T) {
	srv := newTokenServer(t)
	c := srv.cache(newFakeClock())
	conf := c.Config()
	assert.Equal(t, srv.URL+"/token", conf.TokenURL)
	assert.Equal(t, []string{testScope}, conf.Scopes)
	conf.Scopes[0] = "changed"
	assert.Equal(t, []string{testScope}, c.Config().Scopes)
}
