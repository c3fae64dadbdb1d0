package amazon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// scope is the one OAuth scope the Creators API's tokens carry.
const scope = "creatorsapi::default"

// tokenMargin is how long before its expiry a token is replaced, so a
// token never expires between being read and reaching Amazon.
const tokenMargin = 60 * time.Second

// tokenCache holds the access token of one credential.
//
// It is not oauth2.ReuseTokenSourceWithExpiry, for two reasons: a reuse
// source cannot be told that Amazon rejected its token (a 401 must fetch
// a new one), and it fetches with the context it was built with, so the
// token request would not honour the caller's deadline. It still uses
// clientcredentials for the request itself.
type tokenCache struct {
	conf   clientcredentials.Config
	client *http.Client
	now    func() time.Time
	// sem serialises fetches, so concurrent callers share one token
	// request instead of each making their own; a channel rather than a
	// mutex so a waiting caller can give up with its context.
	sem     chan struct{}
	tok     string
	expires time.Time // zero: keep until a 401
}

func newTokenCache(tokenURL string, cred Credential, client *http.Client, now func() time.Time) *tokenCache {
	return &tokenCache{
		conf: clientcredentials.Config{
			ClientID:     cred.ClientID,
			ClientSecret: cred.ClientSecret,
			TokenURL:     tokenURL,
			Scopes:       []string{scope},
			// HTTP Basic, as the Creators API documents for version 3.x
			// credentials.
			AuthStyle: oauth2.AuthStyleInHeader,
		},
		client: client,
		now:    now,
		sem:    make(chan struct{}, 1),
	}
}

// get returns a live access token, fetching one if needed.
func (t *tokenCache) get(ctx context.Context) (string, error) {
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-t.sem }()
	if t.tok != "" && (t.expires.IsZero() || t.now().Before(t.expires)) {
		return t.tok, nil
	}
	tok, err := t.conf.Token(context.WithValue(ctx, oauth2.HTTPClient, t.client))
	if err != nil {
		return "", err
	}
	if tok.AccessToken == "" {
		return "", errors.New("token response without an access token")
	}
	t.tok = tok.AccessToken
	// oauth2 turned expires_in into an instant on the real clock; the
	// lifetime is carried over to the catalog's clock, so tests can move
	// time.
	var lifetime time.Duration
	if !tok.Expiry.IsZero() {
		lifetime = time.Until(tok.Expiry)
	}
	switch {
	case lifetime > 2*tokenMargin:
		t.expires = t.now().Add(lifetime - tokenMargin)
	case lifetime > 0:
		t.expires = t.now().Add(lifetime / 2)
	default:
		t.expires = time.Time{}
	}
	return t.tok, nil
}

// drop forgets access if it is still the cached token; a token another
// caller already replaced stays.
func (t *tokenCache) drop(access string) {
	t.sem <- struct{}{}
	defer func() { <-t.sem }()
	if t.tok == access {
		t.tok = ""
	}
}

// credentialsRejected reports whether a token request failed because the
// endpoint refused the credentials (or scope), which retrying cannot fix,
// as opposed to an outage, which it may.
func credentialsRejected(err error) bool {
	switch tokenStatus(err) {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return false
}

// tokenErrorCode returns the OAuth error code of a refused token request
// ("invalid_client"): safe to log, unlike the response body.
func tokenErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// tokenStatus returns the HTTP status of a failed token request, 0 if none
// arrived.
func tokenStatus(err error) int {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}
