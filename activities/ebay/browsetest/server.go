// Package browsetest is an in-process eBay Browse API server for tests,
// end-to-end tests and `memocart dev`. It serves the two endpoints
// Memocart's live eBay catalog calls, in eBay's documented formats: the
// OAuth client-credentials token endpoint (POST
// /identity/v1/oauth2/token) and getItemByLegacyId (GET
// /buy/browse/v1/item/get_item_by_legacy_id). It listens on a real
// loopback port, so it works for a process as well as for a test.
//
// The token endpoint wants the client id and secret as HTTP Basic and
// grant_type and scope in an application/x-www-form-urlencoded body;
// getItemByLegacyId wants "Authorization: Bearer <application token>"
// and X-EBAY-C-MARKETPLACE-ID. Anything else is refused: 401
// invalid_client (credentials not as HTTP Basic) or 400 invalid_request
// (a body that is not a form) from the token endpoint, 401 errorId 1001
// (no bearer token) or 400 errorId 11011 (no known marketplace) from the
// item call.
//
// Any well-formed item id (9 to 15 digits) is a fixed-price, in-stock
// listing whose title says it comes from this server and whose price is
// derived from a hash of the id, in the currency of the marketplace the
// request names (USD for EBAY_US, GBP for EBAY_GB, EUR for EBAY_DE, ...).
// The reserved ids below, all starting with 1000000000, take the other
// paths a client must handle:
//
//	100000000001 AuctionItem          auction only: no price, AUCTION, currentBidPrice and bidCount
//	100000000002 AuctionBuyItNowItem  auction with Buy It Now: AUCTION and FIXED_PRICE, has a price
//	100000000003 EndedItem            fixed price, but itemEndDate is a day before the server's clock
//	100000000004 OutOfStockItem       OUT_OF_STOCK, estimatedAvailableQuantity 0
//	100000000005 NotFoundItem         404 with errorId 11003 (legacy item id not found)
//	100000000006 VariationsItem       multi-variation: 400 errorId 11006 without legacy_variation_id;
//	                                  VariationSmall and VariationLarge answer with their own price
//	                                  and itemId v1|100000000006|<variation>
//	100000000007 LimitedStockItem     LIMITED_STOCK, quantity 2 (still buyable)
//	100000000008 SlowItem             answers after the delay set with SetSlowDelay (default 5s)
//
// SetItem adds or overrides any id. The server's clock (SetNow, Advance;
// real time by default) places the end dates of the reserved auction and
// ended listings, expires tokens after their 7200 seconds and resets the
// daily quota. Failures are injected with FailNext, RateLimitNext,
// SetLatency and SetDailyQuota.
//
// Where it knowingly differs from eBay:
//   - X-EBAY-C-MARKETPLACE-ID is required and must be one of the
//     marketplaces Memocart maps a storefront to; eBay falls back to
//     EBAY_US when the header is missing or unknown. Being strict here is
//     how tests catch a client that forgets the header.
//   - prices are not converted between currencies: the same number is
//     served in each marketplace's currency;
//   - an unknown legacy_variation_id of a multi-variation listing answers
//     like an unknown item (404, errorId 11003); eBay's answer is not
//     documented;
//   - the daily quota resets at midnight UTC of the server's clock; the
//     bodies of unknown routes are made up.
//
// It may import the standard library, models (the shape of an item id)
// and upstreamtest.
package browsetest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

// Reserved item ids. See the package comment for what each answers.
const (
	AuctionItem         = "100000000001"
	AuctionBuyItNowItem = "100000000002"
	EndedItem           = "100000000003"
	OutOfStockItem      = "100000000004"
	NotFoundItem        = "100000000005"
	VariationsItem      = "100000000006"
	LimitedStockItem    = "100000000007"
	SlowItem            = "100000000008"
)

// The variations of VariationsItem (the ?var= of its links).
const (
	VariationSmall = "500000000001"
	VariationLarge = "500000000002"
)

// The credentials a server accepts unless WithCredentials says otherwise.
const (
	DefaultClientID     = "Memocart-browsete-PRD-0a1b2c3d4-e5f6a7b8"
	DefaultClientSecret = "PRD-0a1b2c3d4e5f-6a7b-8c9d-0e1f-2a3b"
)

// Scope is the only OAuth scope the token endpoint grants: the public
// Browse API scope, the same string on eBay's production and sandbox.
const Scope = "https://api.ebay.com/oauth/api_scope"

// tokenLifetime is what eBay's application tokens live for.
const tokenLifetime = 7200 * time.Second

// Hashed prices lie in [minPriceCents, maxPriceCents].
const (
	minPriceCents = 500
	maxPriceCents = 50000
)

// Item is a listing as SetItem describes it. Fields are served as given,
// except for these defaults: Title, Currency (the marketplace's), Seller
// and Condition are filled in when empty; BuyingOptions nil means
// FIXED_PRICE only; an empty Availability means IN_STOCK, and then a zero
// Quantity means 10. Price "" serves no price at all, as eBay does for an
// auction without Buy It Now.
type Item struct {
	Title         string
	Price         string // decimal string, served verbatim
	Currency      string
	BuyingOptions []string // FIXED_PRICE, AUCTION, BEST_OFFER
	CurrentBid    string   // auctions: the current bid, "" for none
	BidCount      int
	EndDate       time.Time // itemEndDate; zero for a listing without one
	Availability  string    // IN_STOCK, LIMITED_STOCK or OUT_OF_STOCK
	Quantity      int       // estimatedAvailableQuantity
	Seller        string
	Condition     string
	// Variations makes the item a multi-variation listing: a request
	// without legacy_variation_id gets eBay's errorId 11006, one naming a
	// key gets that variation.
	Variations map[string]Variation
	NotFound   bool          // answer 404, errorId 11003
	Delay      time.Duration // wait this long before answering
}

// Variation is one variation of a multi-variation Item. Empty fields
// take the item's values (Price, Availability and Quantity as for Item).
type Variation struct {
	Aspect       string // e.g. "Size: Large", appended to the title
	Price        string
	Availability string
	Quantity     int
}

// Request is what the server recorded of one item request.
type Request struct {
	Path              string // path and query
	MarketplaceID     string // X-EBAY-C-MARKETPLACE-ID
	EndUserContext    string // X-EBAY-C-ENDUSERCTX, verbatim
	ShipTo            string // the country of its contextualLocation, decoded
	LegacyItemID      string
	LegacyVariationID string
	Status            int // status answered; 0 if the client gave up first
}

// marketplaces maps each marketplace id the server knows to its currency
// and its storefront host (for itemWebUrl).
var marketplaces = map[string]struct{ currency, site, country string }{
	"EBAY_US": {"USD", "www.ebay.com", "US"},
	"EBAY_GB": {"GBP", "www.ebay.co.uk", "GB"},
	"EBAY_DE": {"EUR", "www.ebay.de", "DE"},
	"EBAY_CA": {"CAD", "www.ebay.ca", "CA"},
	"EBAY_AU": {"AUD", "www.ebay.com.au", "AU"},
	"EBAY_FR": {"EUR", "www.ebay.fr", "FR"},
	"EBAY_IT": {"EUR", "www.ebay.it", "IT"},
	"EBAY_ES": {"EUR", "www.ebay.es", "ES"},
	"EBAY_NL": {"EUR", "www.ebay.nl", "NL"},
	"EBAY_BE": {"EUR", "www.ebay.be", "BE"},
	"EBAY_AT": {"EUR", "www.ebay.at", "AT"},
	"EBAY_CH": {"CHF", "www.ebay.ch", "CH"},
	"EBAY_IE": {"EUR", "www.ebay.ie", "IE"},
	"EBAY_PL": {"PLN", "www.ebay.pl", "PL"},
	"EBAY_SG": {"SGD", "www.ebay.com.sg", "SG"},
	"EBAY_MY": {"MYR", "www.ebay.com.my", "MY"},
	"EBAY_PH": {"PHP", "www.ebay.ph", "PH"},
	"EBAY_HK": {"HKD", "www.ebay.com.hk", "HK"},
	"EBAY_IN": {"INR", "www.ebay.in", "IN"},
}

// Server is a Browse API test server. All methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:1234: the
	// catalog's APIURL.
	URL string

	// Faults inject item-request failures (FailNext: an eBay errors body,
	// errorId 11000 for 5xx, 2001 for 429, 1001 for 401; RateLimitNext:
	// 429 "Too many requests" with a Retry-After header of whole seconds,
	// rounded up) and delay every answer, tokens included (SetLatency).
	upstreamtest.Faults

	srv          *httptest.Server
	clientID     string
	clientSecret string
	done         chan struct{}
	closeOnce    sync.Once

	mu        sync.Mutex
	tokens    upstreamtest.Tokens // on the server's clock
	items     map[string]Item
	requests  []Request
	clock     upstreamtest.Clock
	slowDelay time.Duration
	quota     int
	quotaDay  string
	quotaUsed int
}

// Option configures a Server.
type Option func(*serverOptions)

type serverOptions struct {
	clientID, clientSecret string
	listener               net.Listener
}

// WithCredentials sets the client id and secret the token endpoint
// accepts.
func WithCredentials(clientID, clientSecret string) Option {
	return func(o *serverOptions) { o.clientID, o.clientSecret = clientID, clientSecret }
}

// WithListener serves on l instead of a fresh loopback port, e.g. a fixed
// address for `memocart dev`. The server closes l when it is closed.
func WithListener(l net.Listener) Option {
	return func(o *serverOptions) { o.listener = l }
}

// New starts a server.
func New(opts ...Option) *Server {
	o := serverOptions{clientID: DefaultClientID, clientSecret: DefaultClientSecret}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{
		clientID:     o.clientID,
		clientSecret: o.clientSecret,
		done:         make(chan struct{}),
		items:        make(map[string]Item),
		clock:        upstreamtest.RealClock(),
		slowDelay:    5 * time.Second,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/identity/v1/oauth2/token", s.serveToken)
	mux.HandleFunc("/buy/browse/v1/item/get_item_by_legacy_id", s.serveItem)
	mux.HandleFunc("/images/", serveImage)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeErrors(w, http.StatusNotFound, apiError{ErrorID: 2002, Domain: "ACCESS", Category: "REQUEST",
			Message: "Resource not found.", LongMessage: "The requested resource does not exist on this server."})
	})
	s.srv = upstreamtest.Serve(mux, o.listener)
	s.URL = s.srv.URL
	return s
}

// Close aborts requests in progress and shuts the server down.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Credentials returns the client id and secret the token endpoint accepts.
func (s *Server) Credentials() (clientID, clientSecret string) {
	return s.clientID, s.clientSecret
}

// SetItem adds the listing id or replaces what the server answers for it,
// reserved ids included.
func (s *Server) SetItem(id string, it Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id] = it
}

// SetNow sets the server's clock to t; it then moves only with Advance.
func (s *Server) SetNow(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = upstreamtest.FrozenAt(t)
}

// Advance moves the server's clock forward by d.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = s.clock.Advanced(d)
}

// Now returns the server's clock reading.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock.Now()
}

// TokensIssued returns how many access tokens the token endpoint has
// granted.
func (s *Server) TokensIssued() int { return s.tokens.Issued() }

// ExpireTokens revokes every token issued so far: item requests bearing
// one answer 401, as eBay does for an expired token.
func (s *Server) ExpireTokens() { s.tokens.Revoke() }

// Requests returns the item requests received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SetSlowDelay sets how long SlowItem takes to answer (default 5s).
func (s *Server) SetSlowDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowDelay = d
}

// SetDailyQuota limits authenticated item calls to n a day (server clock,
// UTC days); the calls beyond it answer 429 like eBay's exhausted quota.
// n <= 0 removes the limit. Setting it starts the day's count afresh.
func (s *Server) SetDailyQuota(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota, s.quotaDay, s.quotaUsed = n, "", 0
}

// apiError is one entry of eBay's errors body.
type apiError struct {
	ErrorID     int         `json:"errorId"`
	Domain      string      `json:"domain"`
	Category    string      `json:"category"`
	Message     string      `json:"message"`
	LongMessage string      `json:"longMessage,omitempty"`
	Parameters  []parameter `json:"parameters,omitempty"`
}

type parameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func writeErrors(w http.ResponseWriter, status int, errs ...apiError) {
	upstreamtest.WriteJSON(w, status, map[string][]apiError{"errors": errs})
}

var (
	errInvalidToken = apiError{ErrorID: 1001, Domain: "OAuth", Category: "REQUEST",
		Message:     "Invalid access token",
		LongMessage: "Invalid access token. Check the value of the Authorization HTTP request header."}
	errTooManyRequests = apiError{ErrorID: 2001, Domain: "ACCESS", Category: "REQUEST",
		Message: "Too many requests.", LongMessage: "The request limit has been reached for the resource."}
	errInternal = apiError{ErrorID: 11000, Domain: "API_BROWSE", Category: "APPLICATION",
		Message: "There was a problem with an eBay internal system or process. Contact eBay developer support for assistance."}
	errAccessDenied = apiError{ErrorID: 1100, Domain: "ACCESS", Category: "REQUEST",
		Message: "Access denied", LongMessage: "Insufficient permissions to fulfill the request."}
)

func errNotFound(id string) apiError {
	return apiError{ErrorID: 11003, Domain: "API_BROWSE", Category: "REQUEST",
		Message:    "The specified legacy item ID was not found.",
		Parameters: []parameter{{Name: "legacyItemId", Value: id}}}
}

// wait sleeps for d unless the request or the server ends first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	return upstreamtest.Wait(r, s.done, d)
}

// serveToken is the client-credentials grant of eBay's OAuth endpoint:
// the credentials as HTTP Basic (a missing or other scheme is 401
// invalid_client), grant_type and scope in a form body (another
// Content-Type is 400 invalid_request).
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if !s.wait(r, s.Latency()) {
		return
	}
	if r.Method != http.MethodPost {
		upstreamtest.WriteJSON(w, http.StatusMethodNotAllowed, oauthError{"invalid_request", "request method is not supported"})
		return
	}
	id, secret, ok := r.BasicAuth()
	// RFC 6749 §2.3.1: clients form-encode the id and secret before Basic.
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if !ok || id != s.clientID || secret != s.clientSecret {
		w.Header().Set("WWW-Authenticate", `Basic realm="eBay"`)
		upstreamtest.WriteJSON(w, http.StatusUnauthorized, oauthError{"invalid_client", "client authentication failed"})
		return
	}
	// The grant is a form body (RFC 6749 4.4.2), as eBay documents it;
	// ParseForm alone would skip a body of any other type and answer a
	// misleading unsupported_grant_type.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		upstreamtest.WriteJSON(w, http.StatusBadRequest, oauthError{"invalid_request",
			"request is missing a required parameter or malformed: the body must be application/x-www-form-urlencoded"})
		return
	}
	if err := r.ParseForm(); err != nil {
		upstreamtest.WriteJSON(w, http.StatusBadRequest, oauthError{"invalid_request", "request is missing a required parameter or malformed"})
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		upstreamtest.WriteJSON(w, http.StatusBadRequest, oauthError{"unsupported_grant_type",
			"grant type in request is not supported by the authorization server"})
		return
	}
	if scopes := strings.Fields(r.PostForm.Get("scope")); len(scopes) == 0 || !allEqual(scopes, Scope) {
		upstreamtest.WriteJSON(w, http.StatusBadRequest, oauthError{"invalid_scope",
			"The requested scope is invalid, unknown, malformed, or exceeds the scope granted to the client"})
		return
	}
	token := newToken()
	s.tokens.Grant(token, s.Now().Add(tokenLifetime))
	upstreamtest.WriteJSON(w, http.StatusOK, map[string]any{
		"access_token": token,
		"expires_in":   int(tokenLifetime / time.Second),
		"token_type":   "Application Access Token",
	})
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func allEqual(ss []string, want string) bool {
	for _, s := range ss {
		if s != want {
			return false
		}
	}
	return true
}

// newToken returns a token shaped like eBay's ("v^1.1#i^1#...").
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "v^1.1#i^1#r^0#p^1#I^3#f^0#t^" + base64.RawURLEncoding.EncodeToString(b)
}

// serveItem is getItemByLegacyId.
func (s *Server) serveItem(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rec := Request{
		Path:              r.URL.RequestURI(),
		MarketplaceID:     r.Header.Get("X-EBAY-C-MARKETPLACE-ID"),
		EndUserContext:    r.Header.Get("X-EBAY-C-ENDUSERCTX"),
		LegacyItemID:      q.Get("legacy_item_id"),
		LegacyVariationID: q.Get("legacy_variation_id"),
	}
	rec.ShipTo = contextCountry(rec.EndUserContext)

	s.mu.Lock()
	idx := len(s.requests)
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	fault := s.Take()
	latency := fault.Latency
	var injected func() int
	switch {
	case fault.Status == http.StatusTooManyRequests:
		injected = func() int {
			if fault.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(fault.RetryAfterSeconds()))
			}
			writeErrors(w, http.StatusTooManyRequests, errTooManyRequests)
			return http.StatusTooManyRequests
		}
	case fault.Status != 0:
		injected = func() int {
			writeErrors(w, fault.Status, injectedError(fault.Status))
			return fault.Status
		}
	}

	status := 0
	defer func() {
		s.mu.Lock()
		s.requests[idx].Status = status
		s.mu.Unlock()
	}()
	if !s.wait(r, latency) {
		return
	}
	if injected != nil {
		status = injected()
		return
	}
	if r.Method != http.MethodGet {
		status = http.StatusMethodNotAllowed
		writeErrors(w, status, apiError{ErrorID: 2004, Domain: "ACCESS", Category: "REQUEST",
			Message: "Method not allowed."})
		return
	}

	s.mu.Lock()
	now := s.clock.Now()
	authorized := s.liveToken(r.Header.Get("Authorization"), now)
	overQuota := false
	if authorized && s.quota > 0 {
		if day := now.UTC().Format(time.DateOnly); day != s.quotaDay {
			s.quotaDay, s.quotaUsed = day, 0
		}
		s.quotaUsed++
		overQuota = s.quotaUsed > s.quota
	}
	s.mu.Unlock()

	switch {
	case !authorized:
		status = http.StatusUnauthorized
		writeErrors(w, status, errInvalidToken)
		return
	case overQuota:
		status = http.StatusTooManyRequests
		writeErrors(w, status, errTooManyRequests)
		return
	}
	mp, ok := marketplaces[rec.MarketplaceID]
	if !ok {
		status = http.StatusBadRequest
		writeErrors(w, status, apiError{ErrorID: 11011, Domain: "API_BROWSE", Category: "REQUEST",
			Message: fmt.Sprintf("The marketplace value %s is not supported. The supported values are: %s",
				rec.MarketplaceID, supportedMarketplaces()),
			Parameters: []parameter{{Name: "marketplaceId", Value: rec.MarketplaceID}}})
		return
	}
	id := rec.LegacyItemID
	if id == "" {
		status = http.StatusBadRequest
		writeErrors(w, status, errNotFound(""))
		return
	}
	it, found := s.item(id)
	if !models.IsEbayItemID(id) || !found {
		status = http.StatusNotFound
		writeErrors(w, status, errNotFound(id))
		return
	}
	if !s.wait(r, it.Delay) {
		return
	}
	body, st, errBody := s.render(id, rec.LegacyVariationID, it, mp.currency, mp.site, mp.country, rec.MarketplaceID, rec.ShipTo, now)
	status = st
	if errBody != nil {
		writeErrors(w, status, *errBody)
		return
	}
	upstreamtest.WriteJSON(w, status, body)
}

func injectedError(status int) apiError {
	switch {
	case status == http.StatusTooManyRequests:
		return errTooManyRequests
	case status == http.StatusUnauthorized:
		return errInvalidToken
	case status == http.StatusForbidden:
		return errAccessDenied
	case status >= 500:
		return errInternal
	default:
		return apiError{ErrorID: 11000 + status, Domain: "API_BROWSE", Category: "REQUEST",
			Message: http.StatusText(status) + " (injected by browsetest)"}
	}
}

func supportedMarketplaces() string {
	return strings.Join(slices.Sorted(maps.Keys(marketplaces)), ", ")
}

// liveToken reports whether header carries a live token.
func (s *Server) liveToken(header string, now time.Time) bool {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	_, live := s.tokens.Check(token, now)
	return live
}

// contextCountry reads the country of an X-EBAY-C-ENDUSERCTX header, whose
// contextualLocation value is itself URL-encoded
// ("contextualLocation=country%3DUS%2Czip%3D94105").
func contextCountry(header string) string {
	for _, part := range strings.Split(header, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(part), "contextualLocation=")
		if !ok {
			continue
		}
		if dec, err := url.QueryUnescape(v); err == nil {
			v = dec
		}
		for _, kv := range strings.Split(v, ",") {
			if c, ok := strings.CutPrefix(kv, "country="); ok {
				return c
			}
		}
	}
	return ""
}

// item returns what the server serves for id: an override, a reserved
// listing or the default one.
func (s *Server) item(id string) (Item, bool) {
	s.mu.Lock()
	it, ok := s.items[id]
	slow := s.slowDelay
	now := s.clock.Now()
	s.mu.Unlock()
	if ok {
		return it, !it.NotFound
	}
	base := Item{Price: hashedPrice(id, "")}
	switch id {
	case AuctionItem:
		return Item{
			BuyingOptions: []string{"AUCTION"},
			CurrentBid:    hashedPrice(id, "bid"),
			BidCount:      7,
			EndDate:       now.Add(72 * time.Hour).Truncate(time.Second),
		}, true
	case AuctionBuyItNowItem:
		base.BuyingOptions = []string{"AUCTION", "FIXED_PRICE"}
		base.CurrentBid = hashedPrice(id, "bid")
		base.EndDate = now.Add(72 * time.Hour).Truncate(time.Second)
		base.Availability, base.Quantity = "IN_STOCK", 1
	case EndedItem:
		base.EndDate = now.Add(-24 * time.Hour).Truncate(time.Second)
	case OutOfStockItem:
		base.Availability, base.Quantity = "OUT_OF_STOCK", 0
	case NotFoundItem:
		return Item{}, false
	case VariationsItem:
		base.Variations = map[string]Variation{
			VariationSmall: {Aspect: "Size: Small", Price: hashedPrice(id, VariationSmall)},
			VariationLarge: {Aspect: "Size: Large", Price: hashedPrice(id, VariationLarge)},
		}
	case LimitedStockItem:
		base.Availability, base.Quantity = "LIMITED_STOCK", 2
	case SlowItem:
		base.Delay = slow
	}
	return base, true
}

// hashedPrice derives a stable price from the id (and a salt), as a
// decimal string built from integer cents.
func hashedPrice(id, salt string) string {
	sum := sha256.Sum256([]byte("browsetest:" + id + ":" + salt))
	cents := minPriceCents + binary.BigEndian.Uint64(sum[:8])%(maxPriceCents-minPriceCents+1)
	return fmt.Sprintf("%d.%02d", cents/100, cents%100)
}

// The item body, in the Browse API's Item schema (the fields a buyer's
// app reads; eBay sends many more).
type (
	amount struct {
		Value    string `json:"value"`
		Currency string `json:"currency"`
	}
	image struct {
		ImageURL string `json:"imageUrl"`
	}
	seller struct {
		Username           string `json:"username"`
		FeedbackPercentage string `json:"feedbackPercentage"`
		FeedbackScore      int    `json:"feedbackScore"`
	}
	availability struct {
		DeliveryOptions             []string `json:"deliveryOptions"`
		EstimatedAvailabilityStatus string   `json:"estimatedAvailabilityStatus"`
		EstimatedAvailableQuantity  int      `json:"estimatedAvailableQuantity"`
		EstimatedSoldQuantity       int      `json:"estimatedSoldQuantity"`
	}
	shippingOption struct {
		ShippingServiceCode      string `json:"shippingServiceCode"`
		Type                     string `json:"type"`
		ShippingCost             amount `json:"shippingCost"`
		ShippingCostType         string `json:"shippingCostType"`
		MinEstimatedDeliveryDate string `json:"minEstimatedDeliveryDate"`
		MaxEstimatedDeliveryDate string `json:"maxEstimatedDeliveryDate"`
	}
	itemGroup struct {
		ItemGroupID    string `json:"itemGroupId"`
		ItemGroupType  string `json:"itemGroupType"`
		ItemGroupHref  string `json:"itemGroupHref"`
		ItemGroupTitle string `json:"itemGroupTitle"`
	}
	aspect struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	itemBody struct {
		ItemID                    string           `json:"itemId"`
		SellerItemRevision        string           `json:"sellerItemRevision"`
		Title                     string           `json:"title"`
		Price                     *amount          `json:"price,omitempty"`
		CategoryPath              string           `json:"categoryPath"`
		CategoryIDPath            string           `json:"categoryIdPath"`
		Condition                 string           `json:"condition"`
		ConditionID               string           `json:"conditionId"`
		Image                     image            `json:"image"`
		ItemCreationDate          string           `json:"itemCreationDate"`
		ItemEndDate               string           `json:"itemEndDate,omitempty"`
		Seller                    seller           `json:"seller"`
		EstimatedAvailabilities   []availability   `json:"estimatedAvailabilities"`
		ShippingOptions           []shippingOption `json:"shippingOptions"`
		BuyingOptions             []string         `json:"buyingOptions"`
		CurrentBidPrice           *amount          `json:"currentBidPrice,omitempty"`
		BidCount                  *int             `json:"bidCount,omitempty"`
		ItemWebURL                string           `json:"itemWebUrl"`
		PrimaryItemGroup          *itemGroup       `json:"primaryItemGroup,omitempty"`
		LocalizedAspects          []aspect         `json:"localizedAspects,omitempty"`
		EnabledForGuestCheckout   bool             `json:"enabledForGuestCheckout"`
		EligibleForInlineCheckout bool             `json:"eligibleForInlineCheckout"`
		LotSize                   int              `json:"lotSize"`
		LegacyItemID              string           `json:"legacyItemId"`
		PriorityListing           bool             `json:"priorityListing"`
		AdultOnly                 bool             `json:"adultOnly"`
		CategoryID                string           `json:"categoryId"`
		ListingMarketplaceID      string           `json:"listingMarketplaceId"`
	}
)

// render builds the body for id (and variation) on a marketplace, or the
// error eBay answers instead.
func (s *Server) render(id, variation string, it Item, currency, site, country, marketplaceID, shipTo string, now time.Time) (*itemBody, int, *apiError) {
	title := it.Title
	if title == "" {
		title = "Test listing " + id + " from the Memocart Browse test server"
	}
	price, availabilityStatus, quantity := it.Price, it.Availability, it.Quantity
	itemID := "v1|" + id + "|0"
	var group *itemGroup
	var aspects []aspect
	if it.Variations != nil {
		href := s.URL + "/buy/browse/v1/item/get_items_by_item_group?item_group_id=" + id
		if variation == "" {
			return nil, http.StatusBadRequest, &apiError{ErrorID: 11006, Domain: "API_BROWSE", Category: "REQUEST",
				Message:    "The legacy ID is invalid. Use " + href + " to get the item group details.",
				Parameters: []parameter{{Name: "itemGroupHref", Value: href}}}
		}
		v, ok := it.Variations[variation]
		if !ok {
			e := errNotFound(id)
			return nil, http.StatusNotFound, &e
		}
		group = &itemGroup{ItemGroupID: id, ItemGroupType: "SELLER_DEFINED_VARIATIONS", ItemGroupHref: href, ItemGroupTitle: title}
		if v.Aspect != "" {
			title += " (" + v.Aspect + ")"
			if name, value, ok := strings.Cut(v.Aspect, ": "); ok {
				aspects = []aspect{{Type: "STRING", Name: name, Value: value}}
			}
		}
		if v.Price != "" {
			price = v.Price
		}
		if v.Availability != "" || v.Quantity != 0 {
			availabilityStatus, quantity = v.Availability, v.Quantity
		}
		itemID = "v1|" + id + "|" + variation
	}
	if availabilityStatus == "" {
		availabilityStatus = "IN_STOCK"
		if quantity == 0 {
			quantity = 10
		}
	}
	if it.Currency != "" {
		currency = it.Currency
	}
	options := it.BuyingOptions
	if options == nil {
		options = []string{"FIXED_PRICE"}
	}
	sellerName := it.Seller
	if sellerName == "" {
		sellerName = "browsetest-seller"
	}
	condition := it.Condition
	if condition == "" {
		condition = "New"
	}
	created := now.Add(-30 * 24 * time.Hour).UTC().Truncate(time.Second)

	body := &itemBody{
		ItemID:             itemID,
		SellerItemRevision: "1",
		Title:              title,
		CategoryPath:       "Collectibles|Test Listings",
		CategoryIDPath:     "1|99999",
		Condition:          condition,
		ConditionID:        "1000",
		Image:              image{ImageURL: s.URL + "/images/" + id + ".svg"},
		ItemCreationDate:   formatTime(created),
		Seller:             seller{Username: sellerName, FeedbackPercentage: "99.8", FeedbackScore: 1287},
		EstimatedAvailabilities: []availability{{
			DeliveryOptions:             []string{"SHIP_TO_HOME"},
			EstimatedAvailabilityStatus: availabilityStatus,
			EstimatedAvailableQuantity:  quantity,
			EstimatedSoldQuantity:       3,
		}},
		ShippingOptions:           []shippingOption{shipping(id, currency, country, shipTo, now)},
		BuyingOptions:             options,
		ItemWebURL:                "https://" + site + "/itm/" + id,
		PrimaryItemGroup:          group,
		LocalizedAspects:          aspects,
		EnabledForGuestCheckout:   true,
		EligibleForInlineCheckout: true,
		LegacyItemID:              id,
		CategoryID:                "99999",
		ListingMarketplaceID:      marketplaceID,
	}
	if price != "" {
		body.Price = &amount{Value: price, Currency: currency}
	}
	if it.CurrentBid != "" {
		body.CurrentBidPrice = &amount{Value: it.CurrentBid, Currency: currency}
		n := it.BidCount
		body.BidCount = &n
	}
	if !it.EndDate.IsZero() {
		body.ItemEndDate = formatTime(it.EndDate)
	}
	return body, http.StatusOK, nil
}

// shipping is the listing's one shipping option: free within the
// marketplace's country, a hashed flat rate to anywhere else.
func shipping(id, currency, country, shipTo string, now time.Time) shippingOption {
	cost := "0.00"
	if shipTo != "" && shipTo != country {
		sum := sha256.Sum256([]byte("browsetest-shipping:" + id))
		cents := 900 + binary.BigEndian.Uint16(sum[:2])%3000
		cost = fmt.Sprintf("%d.%02d", cents/100, cents%100)
	}
	day := now.UTC().Truncate(24 * time.Hour)
	return shippingOption{
		ShippingServiceCode:      "Standard Shipping",
		Type:                     "Standard Shipping",
		ShippingCost:             amount{Value: cost, Currency: currency},
		ShippingCostType:         "FIXED",
		MinEstimatedDeliveryDate: formatTime(day.Add(3*24*time.Hour + 8*time.Hour)),
		MaxEstimatedDeliveryDate: formatTime(day.Add(7*24*time.Hour + 8*time.Hour)),
	}
}

// formatTime writes times as eBay does: UTC with milliseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// serveImage serves a placeholder picture for every listing, so pages
// that show test listings have something to display.
func serveImage(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/images/"), ".svg")
	if !models.IsEbayItemID(name) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">`+
		`<rect width="400" height="400" fill="#e8eef7"/>`+
		`<text x="200" y="190" font-family="sans-serif" font-size="28" text-anchor="middle" fill="#1f3a5f">Test listing</text>`+
		`<text x="200" y="230" font-family="monospace" font-size="22" text-anchor="middle" fill="#1f3a5f">%s</text></svg>`, name)
}
