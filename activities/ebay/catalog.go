package ebay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/memocart/memocart/activities/upstream"
	"github.com/memocart/memocart/models"
)

// Defaults of Config.
const (
	DefaultAPIURL            = "https://api.ebay.com"
	SandboxAPIURL            = "https://api.sandbox.ebay.com"
	DefaultRequestsPerSecond = 2
	DefaultTimeout           = 10 * time.Second
)

// The retry policy for throttling, outages and timeouts. Three attempts
// ride out a blip; more would spend the daily quota on an outage and keep
// a client waiting for an answer that is "retry later" anyway.
const (
	maxAttempts  = 3
	backoffMin   = 250 * time.Millisecond
	backoffMax   = 2 * time.Second
	maxRetryWait = 5 * time.Second // a longer Retry-After is answered at once
)

// maxBodySize bounds an item body. Real ones run to a few hundred
// kilobytes (the seller's description is inline).
const maxBodySize = 8 << 20

// Config configures a Catalog.
type Config struct {
	// APIURL is the API's base URL: DefaultAPIURL, SandboxAPIURL, or a
	// test server's. Default DefaultAPIURL.
	APIURL string
	// ClientID and ClientSecret are the application keyset's App ID and
	// Cert ID. Both empty leaves live eBay data off: every lookup answers
	// live_mode_unavailable.
	ClientID     string
	ClientSecret string
	// RequestsPerSecond paces calls to the Browse API for the whole
	// application (eBay's limits are per application). Default 2.
	RequestsPerSecond float64
	// Timeout bounds each HTTP request, the token request included.
	// Default 10s.
	Timeout time.Duration
	// HTTPClient makes every request. Default a fresh client.
	HTTPClient *http.Client
	// Logger receives the failures API clients only see as a code.
	// Default: discard.
	Logger *slog.Logger
	// Now decides whether a listing has ended. Default time.Now.
	Now func() time.Time
}

// Catalog is the live product catalog of the auction marketplace: it looks
// listings up in eBay's Browse API and prices those that can be bought at
// a fixed price now. It is safe for concurrent use.
type Catalog struct {
	apiURL  string
	tokens  *upstream.TokenCache // nil when not configured
	limiter *rate.Limiter
	timeout time.Duration
	client  *http.Client
	log     *slog.Logger
	now     func() time.Time

	// The retry policy, a field so tests can shorten the waits.
	backoff upstream.Backoff
}

// New returns a catalog for cfg, or an error if cfg is inconsistent.
func New(cfg Config) (*Catalog, error) {
	var err error
	if cfg.APIURL, err = upstream.BaseURL("ebay", "APIURL", cfg.APIURL, DefaultAPIURL); err != nil {
		return nil, err
	}
	if (cfg.ClientID == "") != (cfg.ClientSecret == "") {
		return nil, errors.New("ebay: set both ClientID and ClientSecret, or neither")
	}
	if cfg.RequestsPerSecond, err = upstream.OrDefault("ebay", "RequestsPerSecond", cfg.RequestsPerSecond, DefaultRequestsPerSecond); err != nil {
		return nil, err
	}
	if cfg.Timeout, err = upstream.OrDefault("ebay", "Timeout", cfg.Timeout, DefaultTimeout); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Catalog{
		apiURL: strings.TrimSuffix(cfg.APIURL, "/"),
		// A burst of one second's worth lets the few items of a cart go
		// out together while the average stays at the rate.
		limiter: rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), max(1, int(cfg.RequestsPerSecond))),
		timeout: cfg.Timeout,
		client:  cfg.HTTPClient,
		log:     cfg.Logger,
		now:     cfg.Now,
		backoff: upstream.Backoff{Min: backoffMin, Max: backoffMax},
	}
	if cfg.ClientID != "" {
		c.tokens = newTokenCache(c.apiURL, cfg.ClientID, cfg.ClientSecret, cfg.HTTPClient)
	}
	return c, nil
}

// Product returns the listing ref names, priced for ref.ShipTo's country
// when set. A listing that cannot be bought at a fixed price now (auction,
// ended, out of stock, gone, a multi-variation listing linked without its
// variation) is a product_unavailable error saying why. eBay being down,
// throttling or rejecting Memocart's credentials is marketplace_unavailable
// after a few attempts; a ref no parser would produce is invalid_url.
func (c *Catalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	if c.tokens == nil {
		return models.Product{}, models.Errorf(models.CodeLiveUnavailable, msgNotConfigured)
	}
	marketplace, err := checkRef(ref)
	if err != nil {
		return models.Product{}, err
	}
	log := c.log.With("item", ref.ID, "marketplace", marketplace)

	retry := upstream.Retry{Attempts: maxAttempts, Backoff: c.backoff, MaxWait: maxRetryWait}
	p, stop, attempts, err := upstream.Do(ctx, retry, func() (models.Product, error) { return c.lookup(ctx, ref, marketplace) })
	var ue *upstreamError
	errors.As(err, &ue)
	switch {
	case err == nil:
		return p, nil
	case stop == upstream.Answered:
		// An answer about the listing itself.
		return models.Product{}, err
	case stop == upstream.Unauthorized || (stop == upstream.Final && ue.Status == http.StatusForbidden):
		log.Error("ebay: credentials rejected by the Browse API", "status", ue.Status, "error_ids", ue.ErrorIDs)
	case stop == upstream.Final && ue.final != nil:
		// An answer whose meaning eBay's status gives (upstreamError.final).
		return models.Product{}, ue
	case stop == upstream.Final:
		log.Warn("ebay: unexpected answer", "status", ue.Status, "error_ids", ue.ErrorIDs, "err", ue.Err)
	case stop == upstream.Exhausted:
		log.Warn("ebay: giving up", "attempts", attempts, "status", ue.Status, "error_ids", ue.ErrorIDs, "err", ue.Err)
	case ue != nil:
		log.Warn("ebay: no time to retry", "attempts", attempts, "status", ue.Status, "error_ids", ue.ErrorIDs)
	}
	return models.Product{}, marketplaceUnavailable(err)
}

// lookup makes one getItemByLegacyId call, fetching a token first if
// needed, and interprets the answer. Throttling, outages and rejected
// tokens come back as *upstreamError for Product to act on.
func (c *Catalog) lookup(ctx context.Context, ref models.ProductRef, marketplace string) (models.Product, error) {
	token, err := c.tokens.TokenWithin(ctx, c.timeout, func(err error) error {
		c.log.Error("ebay: credentials rejected by the token endpoint",
			"status", upstream.TokenStatus(err), "oauth_error", upstream.TokenErrorCode(err))
		return marketplaceUnavailable(err)
	}, func(status int, err error) error { return &upstreamError{Status: status, Err: err} })
	if err != nil {
		return models.Product{}, err
	}

	// The pacing wait uses the caller's context, not the request timeout:
	// waiting for a slot is not the request being slow.
	if err := c.limiter.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return models.Product{}, ctx.Err()
		}
		return models.Product{}, fmt.Errorf("%w: %w", upstream.ErrNoTime, err)
	}

	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.itemURL(ref), nil)
	if err != nil {
		return models.Product{}, fmt.Errorf("ebay: building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-EBAY-C-MARKETPLACE-ID", marketplace)
	if ctxHeader := endUserContext(ref.ShipTo); ctxHeader != "" {
		req.Header.Set("X-EBAY-C-ENDUSERCTX", ctxHeader)
	}
	resp, body, err := upstream.Exchange(ctx, c.client, req, maxBodySize, func(status int, err error) error {
		return &upstreamError{Status: status, Err: fmt.Errorf("getItem: %w", err)}
	})
	if err != nil {
		return models.Product{}, err
	}

	p, err := readAnswer(ref, resp.StatusCode, body, c.now())
	var ue *upstreamError
	if errors.As(err, &ue) {
		ue.RetryAfter = upstream.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if ue.Status == http.StatusUnauthorized {
			c.tokens.Invalidate(token)
		}
	}
	return p, err
}

// itemURL is the getItemByLegacyId call for ref.
func (c *Catalog) itemURL(ref models.ProductRef) string {
	q := url.Values{"legacy_item_id": {ref.ID}}
	if ref.Variation != "" {
		q.Set("legacy_variation_id", ref.Variation)
	}
	return c.apiURL + "/buy/browse/v1/item/get_item_by_legacy_id?" + q.Encode()
}

// endUserContext is the X-EBAY-C-ENDUSERCTX header that makes eBay quote
// availability and shipping for a destination country. Its
// contextualLocation value is itself URL-encoded, as eBay documents:
// "contextualLocation=country%3DUS". A malformed country sends nothing.
func endUserContext(shipTo string) string {
	cc := strings.ToUpper(shipTo)
	if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' {
		return ""
	}
	return "contextualLocation=" + url.QueryEscape("country="+cc)
}

// checkRef returns the marketplace id of ref, or invalid_url for a ref
// ParseProductURL would not have produced.
func checkRef(ref models.ProductRef) (string, error) {
	bad := func(why string) error {
		return models.Errorf(models.CodeInvalidURL, "%s: %s", models.DefaultMessage(models.CodeInvalidURL), why)
	}
	if ref.Marketplace != models.MarketplaceEbay {
		return "", bad("not an eBay link")
	}
	if !models.IsEbayItemID(ref.ID) {
		return "", bad("malformed item id")
	}
	if v := ref.Variation; v != "" && (len(v) > 19 || strings.Trim(v, "0123456789") != "") {
		return "", bad("malformed variation id")
	}
	marketplace, ok := marketplaceID(ref.Host)
	if !ok {
		return "", bad("unknown eBay site")
	}
	return marketplace, nil
}

// marketplaceUnavailable is the answer for eBay being down, throttling,
// refusing Memocart, or too slow for the caller: safe to retry later. The
// cause stays in the chain for logs and errors.Is, never in the message.
func marketplaceUnavailable(cause error) error {
	return fmt.Errorf("ebay: %w: %w", models.Errorf(models.CodeMarketplaceUnavailable, msgUnavailable), cause)
}
