package upstreamtest

import (
	"sync"
	"time"
)

// Tokens are the access tokens a test server's token endpoint granted,
// each live until its expiry on the server's clock. The zero value holds
// none; safe for concurrent use.
type Tokens struct {
	mu     sync.Mutex
	expiry map[string]time.Time
	issued int
}

// Grant records token as granted, live until expiry.
func (t *Tokens) Grant(token string, expiry time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.expiry == nil {
		t.expiry = map[string]time.Time{}
	}
	t.expiry[token] = expiry
	t.issued++
}

// Check reports whether token was granted and not revoked (known), and
// whether its expiry is after now too (live).
func (t *Tokens) Check(token string, now time.Time) (known, live bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	exp, ok := t.expiry[token]
	return ok, ok && now.Before(exp)
}

// Revoke revokes every token granted so far.
func (t *Tokens) Revoke() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.expiry)
}

// Issued returns how many tokens were granted, revoked ones included.
func (t *Tokens) Issued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.issued
}
