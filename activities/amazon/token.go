package amazon

import (
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/memocart/memocart/activities/upstream"
)

// scope is the one OAuth scope the Creators API's tokens carry.
const scope = "creatorsapi::default"

// tokenMargin is how long before its expiry a token is replaced, so a
// token never expires between being read and reaching Amazon.
const tokenMargin = 60 * time.Second

// newTokenCache returns the token cache of one credential, on the
// catalog's clock so tests can move time.
func newTokenCache(tokenURL string, cred Credential, client *http.Client, now func() time.Time) *upstream.TokenCache {
	return upstream.NewTokenCache(clientcredentials.Config{
		ClientID:     cred.ClientID,
		ClientSecret: cred.ClientSecret,
		TokenURL:     tokenURL,
		Scopes:       []string{scope},
		// HTTP Basic, as the Creators API documents for version 3.x
		// credentials.
		AuthStyle: oauth2.AuthStyleInHeader,
	}, client, tokenMargin, now)
}
