package amazon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/memocart/memocart/activities/upstream"
)

// The scopes of the Creators API's tokens: Login with Amazon (version 3.x
// credentials) and Cognito (version 2.x) spell the same scope differently.
const (
	scopeLWA     = "creatorsapi::default"
	scopeCognito = "creatorsapi/default"
)

// tokenMargin is how long before its expiry a token is replaced, so a
// token never expires between being read and reaching Amazon.
const tokenMargin = 60 * time.Second

// maxTokenBodySize bounds a token answer: a few hundred bytes.
const maxTokenBodySize = 64 << 10

// Credential versions: the major number Amazon shows with a credential
// ("3.1", "2.2") decides how its token is asked for.
const (
	versionLWA     = "3"
	versionCognito = "2"
)

// credentialVersion checks a Credential.Version for group g and returns
// its major number. The minor number, when given, names the region group
// the credential was issued for (1 NA, 2 EU, 3 FE): a credential of
// another group would be refused by every token endpoint, so it is
// refused here, at start-up, instead.
func credentialVersion(v string, g RegionGroup) (string, error) {
	if v == "" {
		return versionLWA, nil
	}
	major, minor, hasMinor := strings.Cut(v, ".")
	if major != versionLWA && major != versionCognito {
		return "", fmt.Errorf("credential version %q is neither 2.x nor 3.x", v)
	}
	if hasMinor && minor != "x" {
		want := map[RegionGroup]string{NA: "1", EU: "2", FE: "3"}[g]
		if minor != want {
			return "", fmt.Errorf("credential version %q is not a %s credential (that is %s.%s)", v, g, major, want)
		}
	}
	return major, nil
}

// cognitoTokenURL is the token endpoint of a group's version 2.x
// credentials, in the AWS region Amazon's SDK uses for the group.
func cognitoTokenURL(g RegionGroup) string {
	region := map[RegionGroup]string{NA: "us-east-1", EU: "eu-south-2", FE: "us-west-2"}[g]
	if region == "" {
		return ""
	}
	return "https://creatorsapi.auth." + region + ".amazoncognito.com/oauth2/token"
}

// tokenRequester asks one credential's token endpoint for an access
// token. Version 3.x credentials (Login with Amazon) go in a JSON body,
// as Amazon's own SDK sends them and no other way is documented; version
// 2.x (Cognito) is a standard form request with HTTP Basic.
// x/oauth2/clientcredentials only sends form bodies, so both are made
// here, the same way.
type tokenRequester struct {
	url     string
	version string
	cred    Credential
	client  *http.Client
}

// newTokenCache returns the token cache of one credential, on the
// catalog's clock so tests can move time.
func newTokenCache(tr tokenRequester, now func() time.Time) *upstream.TokenCache {
	return upstream.NewTokenCacheFunc(tr.token, tokenMargin, now)
}

// tokenAnswer is both endpoints' answer: token_type is "bearer" from
// Login with Amazon and "Bearer" from Cognito, and is not used (the
// catalog always writes "Bearer").
type tokenAnswer struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int64  `json:"expires_in"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// token makes one token request. A refusal or a failure is an
// *oauth2.RetrieveError carrying the response, so upstream's helpers
// classify it; the credentials never appear in an error.
func (tr tokenRequester) token(ctx context.Context) (*oauth2.Token, error) {
	var (
		body        []byte
		contentType string
	)
	if tr.version == versionCognito {
		body = []byte(url.Values{"grant_type": {"client_credentials"}, "scope": {scopeCognito}}.Encode())
		contentType = "application/x-www-form-urlencoded"
	} else {
		var err error
		body, err = json.Marshal(map[string]string{
			"grant_type":    "client_credentials",
			"client_id":     tr.cred.ClientID,
			"client_secret": tr.cred.ClientSecret,
			"scope":         scopeLWA,
		})
		if err != nil {
			return nil, fmt.Errorf("encoding the token request: %w", err)
		}
		contentType = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tr.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the token request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if tr.version == versionCognito {
		// RFC 6749 2.3.1: each part form-encoded before joining.
		basic := url.QueryEscape(tr.cred.ClientID) + ":" + url.QueryEscape(tr.cred.ClientSecret)
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(basic)))
	}
	client := tr.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBodySize))
	if err != nil {
		return nil, fmt.Errorf("reading the token answer: %w", err)
	}
	var ans tokenAnswer
	decodeErr := json.Unmarshal(data, &ans)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &oauth2.RetrieveError{Response: resp, Body: data, ErrorCode: ans.Error, ErrorDescription: ans.ErrorDescription}
	}
	if decodeErr != nil {
		return nil, fmt.Errorf("decoding the token answer: %w", decodeErr)
	}
	if ans.AccessToken == "" {
		return nil, errors.New("token answer without an access token")
	}
	tok := &oauth2.Token{AccessToken: ans.AccessToken, TokenType: "Bearer"}
	if ans.ExpiresIn > 0 {
		tok.Expiry = time.Now().Add(time.Duration(ans.ExpiresIn) * time.Second)
	}
	return tok, nil
}
