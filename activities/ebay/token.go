package ebay

import (
	"context"
	"errors"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// tokenMargin is how long before its expiry a token is replaced, so a
// token never expires between being read and reaching eBay.
const tokenMargin = 2 * time.Minute

// tokenCache holds the application access token (client-credentials
// grant) shared by every call.
//
// It is not oauth2.ReuseTokenSourceWithExpiry, for two reasons: a reuse
// source cannot be told that eBay rejected its token (a 401 must fetch a
// new one), and it fetches with the context it was built with, so the
// token request would not honour the caller's deadline. It still uses
// clientcredentials for the request itself.
type tokenCache struct {
	conf   clientcredentials.Config
	client *http.Client
	now    func() time.Time
	// sem serialises fetches, so concurrent callers share one token
	// request instead of each making their own; a channel rather than a
	// mutex so a waiting caller can give up with its context.
	sem chan struct{}
	tok *oauth2.Token
}

func newTokenCache(apiURL, clientID, clientSecret string, client *http.Client) *tokenCache {
	return &tokenCache{
		conf: clientcredentials.Config{
			ClientID:     clientID,
			ClientSecret: clientSecret,
			TokenURL:     apiURL + "/identity/v1/oauth2/token",
			Scopes:       []string{"https://api.ebay.com/oauth/api_scope"},
			AuthStyle:    oauth2.AuthStyleInHeader,
		},
		client: client,
		now:    time.Now,
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
	// A zero expiry means eBay gave none: keep the token until a 401.
	if t.tok != nil && (t.tok.Expiry.IsZero() || t.now().Add(tokenMargin).Before(t.tok.Expiry)) {
		return t.tok.AccessToken, nil
	}
	tok, err := t.conf.Token(context.WithValue(ctx, oauth2.HTTPClient, t.client))
	if err != nil {
		return "", err
	}
	if tok.AccessToken == "" {
		return "", errors.New("token response without an access token")
	}
	t.tok = tok
	return tok.AccessToken, nil
}

// drop forgets access if it is still the cached token; a token another
// caller already replaced stays.
func (t *tokenCache) drop(access string) {
	t.sem <- struct{}{}
	defer func() { <-t.sem }()
	if t.tok != nil && t.tok.AccessToken == access {
		t.tok = nil
	}
}

// credentialsRejected reports whether a token request failed because eBay
// refused the application's credentials (or scope), which retrying cannot
// fix, as opposed to an outage, which it may.
func credentialsRejected(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	switch re.Response.StatusCode {
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
