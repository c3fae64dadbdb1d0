// Package creatorstest is an in-process Amazon Creators API server for
// tests, end-to-end tests and `memocart dev`. On one TLS listener it
// serves what Memocart's live Amazon catalog talks to, in the documented
// formats:
//
//   - the token endpoint of version 3.x credentials (Login with Amazon,
//     POST /auth/o2/token), which wants a JSON body {grant_type
//     client_credentials, client_id, client_secret, scope
//     creatorsapi::default} (names spelled exactly) and refuses a form
//     body or HTTP Basic, and the one of version 2.x credentials
//     (Cognito, POST /oauth2/token), which wants a form with scope
//     creatorsapi/default and the credentials as HTTP Basic or in the
//     form; both grant bearer tokens for 3600 seconds;
//   - getItems (POST /catalog/v1/getItems), which wants a live token, an
//     x-marketplace header naming a storefront (www.amazon.<tld>) and a
//     JSON body (Content-Type application/json, charset UTF-8 if any) with
//     1 to 10 itemIds, itemIdType ASIN, a partnerTag, known resources and
//     no other field (names match exactly, so "ItemIds", PA-API 5's
//     spelling, is an unknown field), and serves only the resources asked
//     for. Failed calls answer the documented top-level body {type,
//     message, reason, fieldList, resourceType, resourceId,
//     retryAfterSeconds}; when no requested item is accessible, 404
//     ResourceNotFoundException. The result container is spelled
//     itemsResult (Amazon's SDK and cURL page), or itemResults (its
//     GetItems reference page) with WithContainer(ItemResults);
//   - the short-link hosts amzn.to, a.co, amzn.eu and amzn.asia, and the
//     storefronts' product pages, for following short links.
//
// Requests are told apart by their Host. Client returns an http.Client
// that reaches this server whatever host a URL names, and trusts its
// certificate, which is valid for all those names: code under test sees
// the real host names, without DNS.
//
// Any well-formed ASIN is a new, in-stock product sold by Amazon, whose
// title says it comes from this server ("Creators Test ...") and whose
// price is derived from a hash of the ASIN (see Price), in the
// storefront's currency: USD on amazon.com, GBP on amazon.co.uk, EUR on
// amazon.de and the other euro storefronts, JPY (whole yen) on
// amazon.co.jp, and so on for every storefront. The reserved ASINs below,
// all starting with B0CAT, take the other paths a client must handle:
//
//	B0CATOOS01 OutOfStockASIN    one offer, OUT_OF_STOCK (with a price)
//	B0CATPRE01 PreorderASIN      one offer, PREORDER (with a price)
//	B0CATNOOF1 NoOffersASIN      the item without offersV2
//	B0CATNOPR1 NoPriceASIN       one IN_STOCK offer without a price
//	B0CATNF001 NotFoundASIN      left out of the items; errors lists ItemNotAccessible
//	                             (asked for alone: 404 ResourceNotFoundException)
//	B0CATBBX01 BuyBoxSecondASIN  two offers: first a reseller at BuyBoxOtherPrice,
//	                             second the buy-box winner at BuyBoxWinnerPrice
//	B0CATSCR01 ScarceASIN        one offer, IN_STOCK_SCARCE
//	B0CATSLW01 SlowASIN          answers after the delay set with SetSlowDelay (default 5s)
//	B0CATPRM01 PrimeDealASIN     two offers: first the buy-box winner at PrimeDealPrice,
//	                             a PRIME_EXCLUSIVE deal, second a standard one at
//	                             PrimeStandardPrice
//	B0CATPRM02 PrimeOnlyASIN     one offer, at a PRIME_EXCLUSIVE deal price
//
// SetItem adds or overrides any ASIN. A malformed id is reported in the
// errors list with code InvalidParameterValue; found items are still
// listed (partial results).
//
// Short links: any code answers 301 (302 on a.co) to
// https://www.amazon.com/dp/<ShortLinkASIN(code)>?... (www.amazon.de
// from amzn.eu, www.amazon.co.jp from amzn.asia), on HEAD and GET. The
// reserved codes:
//
//	catEvil1   CodeEvil         redirects to https://evil.example/dp/B0CATEVIL1
//	catIPLit1  CodeIPLiteral    redirects to https://169.254.169.254/dp/B0CATIPLT1
//	catLoop1   CodeLoop         redirects to itself, forever
//	catTwoHop1 CodeTwoHops      on a.co: to https://amzn.to/catTwoHop1, then to amazon.com
//	catNoHead1 CodeNoHead       HEAD answers 405; GET redirects
//	catGone1   CodeNotFound     404
//	catDown01  CodeDown         503
//	catRel01   CodeRelative     to https://www.amazon.com/exec/obidos/ASIN/<asin>, which
//	                            answers 301 with the relative Location /dp/<asin>
//
// Product pages (GET and HEAD /dp/<ASIN> on any storefront) answer 200;
// /gp/product/<ASIN> and /exec/obidos/ASIN/<ASIN> answer 301 to
// /dp/<ASIN>. evil.example and 169.254.169.254 answer 200 to anything, so
// a follower that went there would get an answer, and be seen: Requests
// records every request with its host, and Dials counts the connections
// Client opened per host name.
//
// Failures are injected with FailNext, FailTokenNext, RateLimitNext and
// SetLatency; ExpireTokens revokes the tokens issued so far.
//
// Where it knowingly differs from Amazon, or where Amazon's behaviour is
// not documented:
//   - one client id and secret is accepted for every region group and
//     both credential versions, and the token endpoints are on the same
//     host as the API;
//   - the bodies of 5xx answers, of a wrong method, of a missing or
//     unknown token, and of the token endpoints' refusals are made up, in
//     the documented shapes; a wrong Content-Type or an unknown field is
//     a 400 ValidationException naming it (the API does not document
//     these cases);
//   - a 429 carries retryAfterSeconds in its body (as documented), never
//     a Retry-After header;
//   - prices are not converted between storefronts: the same number is
//     served in each storefront's currency;
//   - tokens expire after 3600 seconds of real time; there is no clock
//     to set.
//
// It may import the standard library, models (the shape of an ASIN) and
// upstreamtest (injected faults, invented products).
package creatorstest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
)

// The credentials a server accepts unless WithCredentials says otherwise.
const (
	DefaultClientID     = "amzn1.application-oa2-client.creatorstest0000000000000000"
	DefaultClientSecret = "amzn1.oa2-cs.v1.creatorstest00000000000000000000000000000000"
)

// Scope is the only OAuth scope the Login with Amazon token endpoint
// grants; CognitoScope the Cognito one's.
const (
	Scope        = "creatorsapi::default"
	CognitoScope = "creatorsapi/default"
)

// TokenPath is the version 3.x token endpoint's path: the catalog's
// TokenURL is URL+TokenPath. CognitoTokenPath is version 2.x's.
const (
	TokenPath        = "/auth/o2/token"
	CognitoTokenPath = "/oauth2/token"
)

// Container is a spelling of getItems' result container.
type Container string

// The two spellings Amazon's documentation uses.
const (
	ItemsResult Container = "itemsResult" // the SDK and the cURL page; the default
	ItemResults Container = "itemResults" // the GetItems reference page
)

// GetItemsPath is getItems' path under the API's base URL.
const GetItemsPath = "/catalog/v1/getItems"

// tokenLifetime is how long granted tokens live, as expires_in says.
const tokenLifetime = 3600 * time.Second

// Request is what the server recorded of one request.
type Request struct {
	Method string
	Host   string // the host name asked for, without port
	Path   string
	// Marketplace and ItemIDs are getItems' x-marketplace header and
	// itemIds.
	Marketplace string
	ItemIDs     []string
	Status      int // status answered; 0 if the client gave up first
}

// Server is a Creators API test server. All methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL of the API, e.g. https://127.0.0.1:1234: the
	// catalog's APIURL. The token URL is URL+TokenPath.
	URL string

	// Faults inject getItems failures (FailNext: the documented error body
	// for 400, 401, 403 and 404; RateLimitNext: 429 ThrottleException with
	// retryAfterSeconds, rounded up) and hold answers back (SetLatency),
	// before any other check.
	upstreamtest.Faults
	// tokenFaults are FailTokenNext's failures of token requests.
	tokenFaults upstreamtest.Faults

	srv       *httptest.Server
	transport *http.Transport
	addr      string
	creds     []credential // accepted by the token endpoint; the first is Credentials'
	done      chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	tokens    upstreamtest.Tokens // on the real clock
	items     map[string]Item
	requests  []*Request
	dials     map[string]int
	slowDelay time.Duration
	container Container
}

// Option configures a Server.
type Option func(*serverOptions)

type serverOptions struct {
	creds     []credential
	listener  net.Listener
	container Container
}

type credential struct{ id, secret string }

// WithCredentials adds a client id and secret the token endpoint accepts,
// e.g. one per region group. A server given none accepts DefaultClientID
// and DefaultClientSecret.
func WithCredentials(clientID, clientSecret string) Option {
	return func(o *serverOptions) { o.creds = append(o.creds, credential{clientID, clientSecret}) }
}

// WithContainer spells getItems' result container c, so a client can be
// tested against either spelling.
func WithContainer(c Container) Option {
	return func(o *serverOptions) { o.container = c }
}

// WithListener serves on l (wrapped in TLS) instead of a fresh loopback
// port, e.g. a fixed address for `memocart dev`. The server closes l when
// it is closed.
func WithListener(l net.Listener) Option {
	return func(o *serverOptions) { o.listener = l }
}

// New starts a server. It panics if it cannot make its certificate, as
// httptest does.
func New(opts ...Option) *Server {
	var o serverOptions
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.creds) == 0 {
		o.creds = []credential{{DefaultClientID, DefaultClientSecret}}
	}
	cert, pool, err := newCertificate()
	if err != nil {
		panic(err)
	}
	s := &Server{
		creds:     o.creds,
		done:      make(chan struct{}),
		items:     make(map[string]Item),
		dials:     make(map[string]int),
		slowDelay: 5 * time.Second,
		container: o.container,
	}
	api := http.NewServeMux()
	api.HandleFunc(TokenPath, s.serveToken)
	api.HandleFunc(CognitoTokenPath, s.serveCognitoToken)
	api.HandleFunc(GetItemsPath, s.serveGetItems)
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, r, nil, http.StatusNotFound, mustJSON(errorBody{Type: "UnknownOperationException",
			Message: "The requested operation does not exist."}))
	})

	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := requestHost(r)
		switch {
		case shortLinkHosts[host] != "":
			s.serveShortLink(w, r, host)
		case storefronts[strings.TrimPrefix(host, "www.")] != "":
			s.serveStorefront(w, r, host)
		case host == EvilHost || host == IPLiteralHost:
			s.serveForbidden(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	}))
	// Clients that give up mid-handshake are part of the tests; their
	// errors are noise.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if o.listener != nil {
		_ = s.srv.Listener.Close()
		s.srv.Listener = o.listener
	}
	s.srv.StartTLS()
	s.URL = s.srv.URL
	s.addr = s.srv.Listener.Addr().String()

	dialer := &net.Dialer{Timeout: 5 * time.Second}
	s.transport = &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			s.mu.Lock()
			s.dials[strings.ToLower(host)]++
			s.mu.Unlock()
			return dialer.DialContext(ctx, "tcp", s.addr)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return s
}

// Close aborts requests in progress and shuts the server down.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.transport.CloseIdleConnections()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client returns an HTTP client that connects to this server whatever
// host a URL names (https://amzn.to/x, https://creatorsapi.amazon/...)
// and trusts its certificate. It does not follow redirects differently
// from any http.Client: the code under test decides that.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: s.transport}
}

// CertPool returns a pool trusting the server's certificate, for clients
// built elsewhere.
func (s *Server) CertPool() *x509.CertPool {
	return s.transport.TLSClientConfig.RootCAs.Clone()
}

// TokenURL is the URL of the token endpoint of version 3.x credentials.
func (s *Server) TokenURL() string { return s.URL + TokenPath }

// CognitoTokenURL is the URL of the token endpoint of version 2.x
// credentials.
func (s *Server) CognitoTokenURL() string { return s.URL + CognitoTokenPath }

// Credentials returns the (first) client id and secret the token endpoint
// accepts.
func (s *Server) Credentials() (clientID, clientSecret string) {
	return s.creds[0].id, s.creds[0].secret
}

// SetItem adds the ASIN or replaces what the server answers for it,
// reserved ASINs included.
func (s *Server) SetItem(asin string, it Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[asin] = it
}

// SetSlowDelay sets how long SlowASIN takes to answer (default 5s).
func (s *Server) SetSlowDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowDelay = d
}

// FailTokenNext makes the next n token requests answer status with an
// OAuth error body, before any other check.
func (s *Server) FailTokenNext(status, n int) { s.tokenFaults.FailNext(status, n) }

// ExpireTokens revokes every token issued so far: getItems calls bearing
// one answer 401.
func (s *Server) ExpireTokens() { s.tokens.Revoke() }

// TokensIssued returns how many access tokens the token endpoint granted.
func (s *Server) TokensIssued() int { return s.tokens.Issued() }

// Requests returns every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
		out[i].ItemIDs = slices.Clone(r.ItemIDs)
	}
	return out
}

// Dials returns how many connections Client's transport opened, by the
// host name asked for. A host that is not in it was never contacted.
func (s *Server) Dials() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.dials)
}

// record notes a request; the returned entry gets its status later.
func (s *Server) record(r *http.Request) *Request {
	rec := &Request{Method: r.Method, Host: requestHost(r), Path: r.URL.Path}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	return rec
}

// answer writes a response and records its status.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, rec *Request, status int, body []byte) {
	if rec == nil {
		rec = s.record(r)
	}
	s.mu.Lock()
	rec.Status = status
	s.mu.Unlock()
	if body != nil {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(status)
	if body != nil && r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// wait sleeps for d unless the request or the server ends first, and
// reports whether it slept the whole time.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	return upstreamtest.Wait(r, s.done, d)
}

// requestHost is the lowercase host name a request was sent to.
func requestHost(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}
