package amazon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/memocart/memocart/activities/upstream"
	"github.com/memocart/memocart/models"
)

// Defaults of Config.
const (
	DefaultAPIURL            = "https://creatorsapi.amazon"
	DefaultRequestsPerSecond = 1 // what new Creators API credentials start with
	DefaultTimeout           = 10 * time.Second
)

// getItemsPath is getItems' path under the API's base URL.
const getItemsPath = "/catalog/v1/getItems"

// The retry policy for throttling, outages and timeouts. Three attempts
// ride out a blip; more would spend a one-request-per-second quota on an
// outage and keep a client waiting for an answer that is "retry later"
// anyway.
const (
	maxAttempts  = 3
	backoffMin   = 250 * time.Millisecond
	backoffMax   = 2 * time.Second
	maxRetryWait = 5 * time.Second // a longer Retry-After is answered at once
)

// maxBodySize bounds a getItems answer; one item with the resources asked
// for is a few kilobytes.
const maxBodySize = 4 << 20

// msgUnavailable is what API clients see when Amazon is down, throttling,
// refusing Memocart or too slow.
const msgUnavailable = "Amazon product data is unavailable right now; retry later"

// Credential is one region group's Creators API credential and the
// Associates partner tag its calls carry.
type Credential struct {
	ClientID     string
	ClientSecret string
	PartnerTag   string
	// Version is the credential version Amazon shows with it: "3.1",
	// "3.2", "3.3" (Login with Amazon) or "2.1", "2.2", "2.3" (Cognito),
	// the minor number naming the region group; "3.x" or "2.x" says only
	// the kind. It decides the token endpoint and the token request's
	// shape. Empty means 3.x, what Amazon issues today.
	Version string
}

// Config configures a Catalog.
type Config struct {
	// APIURL is the API's base URL; getItems is APIURL+"/catalog/v1/getItems".
	// Default DefaultAPIURL.
	APIURL string
	// TokenURL, when set, is the token endpoint of every region group
	// (a test server's). Empty uses each group's documented endpoint for
	// the credential's version (RegionGroup.TokenURL for 3.x).
	TokenURL string
	// Credentials holds the credential of each region group Memocart has
	// one for. Storefronts of a group without one answer
	// live_mode_unavailable. A zero Credential counts as absent.
	Credentials map[RegionGroup]Credential
	// RequestsPerSecond paces getItems calls, per credential (Amazon's
	// limits are). Default 1, with no burst.
	RequestsPerSecond float64
	// Timeout bounds each HTTP request, token requests included; short
	// link hops get at most 5s. Default 10s.
	Timeout time.Duration
	// HTTPClient makes the API and token requests. Default a fresh client.
	HTTPClient *http.Client
	// ShortLinkClient follows short links; its redirect policy and cookie
	// jar are replaced (the catalog follows redirects itself, without
	// cookies). Default HTTPClient.
	ShortLinkClient *http.Client
	// Logger receives the failures API clients only see as a code.
	// Default: discard.
	Logger *slog.Logger
	// Now is the catalog's clock: token lifetimes, request pacing and the
	// short-link cache. Default time.Now.
	Now func() time.Time
}

// Catalog is the live product catalog of the large retailer. It is safe
// for concurrent use.
type Catalog struct {
	apiURL  string
	groups  map[RegionGroup]*group // configured groups only
	timeout time.Duration
	client  *http.Client
	short   *shortLinks
	log     *slog.Logger
	now     func() time.Time
	warned  map[RegionGroup]*sync.Once

	// The retry policy and the waits, fields so tests can shorten them
	// or move a fake clock instead.
	backoff upstream.Backoff
	sleep   func(ctx context.Context, d time.Duration) error
}

// group is a configured region group.
type group struct {
	name       RegionGroup
	partnerTag string
	tokenURL   string
	tokens     *upstream.TokenCache
	limiter    *rate.Limiter // shared by groups with the same credential
}

// New returns a catalog for cfg, or an error if cfg is inconsistent.
func New(cfg Config) (*Catalog, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !isBaseURL(cfg.APIURL) {
		return nil, fmt.Errorf("amazon: APIURL %q is not an http(s) base URL", cfg.APIURL)
	}
	if cfg.TokenURL != "" && !isBaseURL(cfg.TokenURL) {
		return nil, fmt.Errorf("amazon: TokenURL %q is not an http(s) URL", cfg.TokenURL)
	}
	var err error
	if cfg.RequestsPerSecond, err = upstream.OrDefault("amazon", "RequestsPerSecond", cfg.RequestsPerSecond, DefaultRequestsPerSecond); err != nil {
		return nil, err
	}
	if cfg.Timeout, err = upstream.OrDefault("amazon", "Timeout", cfg.Timeout, DefaultTimeout); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.ShortLinkClient == nil {
		cfg.ShortLinkClient = cfg.HTTPClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Catalog{
		apiURL:  strings.TrimSuffix(cfg.APIURL, "/"),
		groups:  map[RegionGroup]*group{},
		timeout: cfg.Timeout,
		client:  cfg.HTTPClient,
		short:   newShortLinks(cfg.ShortLinkClient, min(hopTimeout, cfg.Timeout), cfg.Now, cfg.Logger),
		log:     cfg.Logger,
		now:     cfg.Now,
		warned:  map[RegionGroup]*sync.Once{"": {}, NA: {}, EU: {}, FE: {}},
		backoff: upstream.Backoff{Min: backoffMin, Max: backoffMax},
		sleep:   upstream.Sleep,
	}
	limiters := map[string]*rate.Limiter{}
	for g, cred := range cfg.Credentials {
		if g.TokenURL() == "" {
			return nil, fmt.Errorf("amazon: unknown region group %q", g)
		}
		if cred == (Credential{}) {
			continue
		}
		if cred.ClientID == "" || cred.ClientSecret == "" || cred.PartnerTag == "" {
			return nil, fmt.Errorf("amazon: the %s credential needs ClientID, ClientSecret and PartnerTag", g)
		}
		version, err := credentialVersion(cred.Version, g)
		if err != nil {
			return nil, fmt.Errorf("amazon: the %s credential: %w", g, err)
		}
		tokenURL := cfg.TokenURL
		switch {
		case tokenURL != "":
		case version == versionCognito:
			tokenURL = cognitoTokenURL(g)
		default:
			tokenURL = g.TokenURL()
		}
		lim := limiters[cred.ClientID]
		if lim == nil {
			// No burst: new credentials are allowed one request per
			// second, and a burst would be throttled at once.
			lim = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), 1)
			limiters[cred.ClientID] = lim
		}
		c.groups[g] = &group{
			name:       g,
			partnerTag: cred.PartnerTag,
			tokenURL:   tokenURL,
			tokens:     newTokenCache(tokenRequester{url: tokenURL, version: version, cred: cred, client: cfg.HTTPClient}, cfg.Now),
			limiter:    lim,
		}
	}
	return c, nil
}

// Product returns the product ref names, resolving a short link first.
// A product that cannot be bought now (out of stock, pre-order only, no
// offer, only a members-only deal price, unknown to the API: a 404
// ResourceNotFoundException) is a product_unavailable error saying why. A
// storefront without credentials on this deployment, or that the API does
// not serve, is live_mode_unavailable, and so is Amazon refusing this
// deployment's account or partner tag (403 AccessDeniedException, 400
// ValidationException), logged for the operator. Amazon being down,
// throttling, rejecting Memocart's token or too slow for ctx is
// marketplace_unavailable after a few attempts. A ref no parser would
// produce, or a short link that does not lead to an Amazon product page,
// is invalid_url.
func (c *Catalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	if ref.Marketplace != models.MarketplaceAmazon {
		return models.Product{}, badRef("not an Amazon link")
	}
	if len(c.groups) == 0 {
		// Nothing configured: not worth resolving a short link for.
		c.warned[""].Do(func() {
			c.log.Warn("amazon: live product data is off: no Creators API credentials are configured")
		})
		return models.Product{}, models.Errorf(models.CodeLiveUnavailable,
			"Live product data from Amazon is not configured on this deployment")
	}
	page := ref
	switch {
	case ref.IsShortLink():
		if !shortLinkHosts[ref.Host] {
			return models.Product{}, badRef("unknown short-link host")
		}
		var err error
		if page, err = c.short.resolve(ctx, ref); err != nil {
			return models.Product{}, err
		}
	case !models.IsASIN(ref.ID):
		return models.Product{}, badRef("malformed product id")
	}
	sf, ok := storefrontOf(page.Host)
	if !ok {
		return models.Product{}, badRef("unknown Amazon storefront")
	}
	if sf.group == "" {
		return models.Product{}, models.Errorf(models.CodeLiveUnavailable,
			"Live product data for %s is not available: Amazon's product data API does not serve that storefront", sf.bare)
	}
	g := c.groups[sf.group]
	if g == nil {
		c.warned[sf.group].Do(func() {
			c.log.Warn("amazon: no Creators API credential for a region group: its storefronts answer live_mode_unavailable",
				"region_group", string(sf.group))
		})
		return models.Product{}, models.Errorf(models.CodeLiveUnavailable,
			"Live product data for %s (%s) is not configured on this deployment", sf.bare, sf.group)
	}
	return c.product(ctx, g, sf, page.ID)
}

// product looks asin up on sf, retrying what may pass (upstream.Do).
func (c *Catalog) product(ctx context.Context, g *group, sf storefront, asin string) (models.Product, error) {
	log := c.log.With("asin", asin, "storefront", sf.bare)
	retry := upstream.Retry{Attempts: maxAttempts, Backoff: c.backoff, MaxWait: maxRetryWait, Sleep: c.sleep}
	p, stop, attempts, err := upstream.Do(ctx, retry, func() (models.Product, error) { return c.lookup(ctx, g, sf, asin) })
	var ue *upstreamError
	errors.As(err, &ue)
	switch {
	case err == nil:
		return p, nil
	case stop == upstream.Answered:
		// An answer about the product, or an error already decided.
		return models.Product{}, err
	case stop == upstream.Unauthorized:
		log.Error("amazon: credentials rejected by the Creators API",
			"region_group", string(g.name), "status", ue.Status, "codes", ue.Codes)
	case stop == upstream.Final && (ue.Status == http.StatusForbidden || ue.Status == http.StatusBadRequest):
		// AccessDeniedException (the Associates account is not eligible,
		// the tag is not its own) or ValidationException (a field Amazon
		// refuses, usually the partner tag): the deployment's setup,
		// which retrying cannot fix and only an operator can.
		log.Error("amazon: the Creators API refuses this deployment's requests: check the Associates account and partner tag",
			"region_group", string(g.name), "status", ue.Status, "codes", ue.Codes, "fields", ue.Fields)
		return models.Product{}, fmt.Errorf("amazon: %w: %w", models.Errorf(models.CodeLiveUnavailable,
			"Live product data from Amazon is not available on this deployment right now"), ue)
	case stop == upstream.Final:
		log.Warn("amazon: unexpected getItems answer", "status", ue.Status, "codes", ue.Codes, "err", ue.Err)
	case stop == upstream.Exhausted:
		log.Warn("amazon: giving up", "attempts", attempts, "status", ue.Status, "codes", ue.Codes, "err", ue.Err)
	case ue != nil:
		log.Warn("amazon: no time to retry", "attempts", attempts, "status", ue.Status, "codes", ue.Codes)
	}
	return models.Product{}, marketplaceUnavailable(err)
}

// lookup makes one getItems call, fetching a token first if needed, and
// interprets the answer. Throttling, outages and rejected tokens come back
// as *upstreamError for product to act on.
func (c *Catalog) lookup(ctx context.Context, g *group, sf storefront, asin string) (models.Product, error) {
	token, err := g.tokens.TokenWithin(ctx, c.timeout, func(err error) error {
		c.log.Error("amazon: credentials rejected by the token endpoint", "region_group", string(g.name),
			"status", upstream.TokenStatus(err), "oauth_error", upstream.TokenErrorCode(err))
		return marketplaceUnavailable(err)
	}, func(status int, err error) error { return &upstreamError{Status: status, Err: err} })
	if err != nil {
		return models.Product{}, err
	}

	if err := c.pace(ctx, g); err != nil {
		return models.Product{}, err
	}

	body, err := json.Marshal(getItemsRequest{
		ItemIDs:    []string{asin},
		ItemIDType: "ASIN",
		PartnerTag: g.partnerTag,
		Resources:  resources,
	})
	if err != nil {
		return models.Product{}, fmt.Errorf("amazon: encoding getItems request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.apiURL+getItemsPath, bytes.NewReader(body))
	if err != nil {
		return models.Product{}, fmt.Errorf("amazon: building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("x-marketplace", sf.host)
	// A body cut short is retried as if no answer arrived (Status 0).
	resp, data, err := upstream.Exchange(ctx, c.client, req, maxBodySize, func(_ int, err error) error {
		return &upstreamError{Err: fmt.Errorf("getItems: %w", err)}
	})
	if err != nil {
		return models.Product{}, err
	}

	p, err := readAnswer(resp.StatusCode, data, asin, sf)
	var ue *upstreamError
	if errors.As(err, &ue) {
		ue.RetryAfter = max(ue.RetryAfter, upstream.RetryAfter(resp.Header.Get("Retry-After"), time.Now()))
		if ue.Status == http.StatusUnauthorized {
			g.tokens.Invalidate(token)
		}
	}
	return p, err
}

// pace waits for the credential's next request slot, on the catalog's
// clock. Waiting is not the request being slow, so it is bounded by ctx
// only, and refused at once if ctx's deadline would pass first.
func (c *Catalog) pace(ctx context.Context, g *group) error {
	now := c.now()
	r := g.limiter.ReserveN(now, 1)
	if !r.OK() {
		return upstream.ErrNoTime
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	if !upstream.Fits(ctx, d) {
		r.CancelAt(now)
		return upstream.ErrNoTime
	}
	if err := c.sleep(ctx, d); err != nil {
		r.CancelAt(c.now())
		return err
	}
	return nil
}

// marketplaceUnavailable is the answer for Amazon being down, throttling,
// refusing Memocart, or too slow for the caller: safe to retry later. The
// cause stays in the chain for logs and errors.Is, never in the message.
func marketplaceUnavailable(cause error) error {
	return fmt.Errorf("amazon: %w: %w", models.Errorf(models.CodeMarketplaceUnavailable, msgUnavailable), cause)
}

func isBaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.RawQuery == "" && u.User == nil
}
