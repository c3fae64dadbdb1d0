package ebay

import (
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/memocart/memocart/activities/upstream"
)

// tokenMargin is how long before its expiry a token is replaced, so a
// token never expires between being read and reaching eBay.
const tokenMargin = 2 * time.Minute

// newTokenCache returns the cache of the application access token
// (client-credentials grant) shared by every call. eBay's token_type is
// "Application Access Token", not "Bearer": the cache keeps the access
// token only, and lookup writes "Bearer" itself.
func newTokenCache(apiURL, clientID, clientSecret string, client *http.Client) *upstream.TokenCache {
	return upstream.NewTokenCache(clientcredentials.Config{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		TokenURL:     apiURL + "/identity/v1/oauth2/token",
		Scopes:       []string{"https://api.ebay.com/oauth/api_scope"},
		AuthStyle:    oauth2.AuthStyleInHeader,
	}, client, tokenMargin, time.Now)
}
