package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/amazon"
	"github.com/memocart/memocart/activities/ebay"
	"github.com/memocart/memocart/activities/marketplaces"
	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

// LiveClients are the HTTP clients live providers are reached with. In
// production both are plain clients; `memocart dev` with test servers
// swaps in clients that trust the test servers' certificates and dial them
// whatever host is asked (the short-link follower must see real host
// names).
type LiveClients struct {
	http       *http.Client // eBay and Zinc
	amazon     *http.Client // the Creators API and its token endpoints
	shortLinks *http.Client // following amzn.to, a.co, ... redirects
}

func defaultLiveClients() LiveClients {
	c := &http.Client{}
	return LiveClients{http: c, amazon: c, shortLinks: c}
}

// liveCatalog is the live product catalog: Amazon's Creators API and
// eBay's Browse API behind one cache. A marketplace without credentials
// answers live_mode_unavailable naming it.
func liveCatalog(cfg Config, hc LiveClients, log *slog.Logger) (*marketplaces.Router, error) {
	creds := map[amazon.RegionGroup]amazon.Credential{}
	for group, c := range cfg.AmazonCredentials {
		creds[amazon.RegionGroup(group)] = amazon.Credential{ClientID: c.ClientID, ClientSecret: c.ClientSecret, PartnerTag: c.PartnerTag, Version: c.Version}
	}
	am, err := amazon.New(amazon.Config{
		APIURL: cfg.AmazonAPIURL, TokenURL: cfg.AmazonTokenURL, Credentials: creds,
		HTTPClient: hc.amazon, ShortLinkClient: hc.shortLinks,
		Logger: log.With(slog.String("component", "amazon")),
	})
	if err != nil {
		return nil, fmt.Errorf("configuring the Amazon catalog: %w", err)
	}
	eb, err := ebay.New(ebay.Config{
		APIURL: cfg.EbayAPIURL, ClientID: cfg.EbayClientID, ClientSecret: cfg.EbayClientSecret,
		HTTPClient: hc.http, Logger: log.With(slog.String("component", "ebay")),
	})
	if err != nil {
		return nil, fmt.Errorf("configuring the eBay catalog: %w", err)
	}
	return marketplaces.NewRouter(marketplaces.Config{
		Catalogs: map[models.Marketplace]marketplaces.Catalog{models.MarketplaceAmazon: am, models.MarketplaceEbay: eb},
		TTL:      cfg.PreviewCacheTTL,
	}), nil
}

// liveFulfiller buys live orders through Zinc; nil when no Zinc key is
// configured (live orders are then refused: see noPurchasing).
func liveFulfiller(cfg Config, hc LiveClients, log *slog.Logger) (activities.Fulfiller, error) {
	if cfg.ZincAPIKey == "" {
		return nil, nil
	}
	client, err := zinc.NewClient(zinc.ClientConfig{BaseURL: cfg.ZincAPIURL, APIKey: cfg.ZincAPIKey, HTTPClient: hc.http})
	if err != nil {
		return nil, fmt.Errorf("configuring Zinc: %w", err)
	}
	f, err := zinc.NewFulfiller(zinc.FulfillerConfig{Client: client, Schedule: cfg.ZincPoll, Logger: log.With(slog.String("component", "zinc"))})
	if err != nil {
		return nil, fmt.Errorf("configuring Zinc: %w", err)
	}
	return f, nil
}

// noPurchasing says which modes cannot buy, and why, for the API to refuse
// their orders before money is taken.
func noPurchasing(cfg Config) map[models.Mode]string {
	if cfg.ZincAPIKey == "" {
		return map[models.Mode]string{models.ModeLive: "Live purchasing is not configured on this deployment"}
	}
	return nil
}

// zincWebhook verifies Zinc's deliveries with the endpoint's secret.
type zincWebhook struct {
	secret string
}

func (z zincWebhook) Read(h http.Header, body []byte) (models.FulfilmentEvent, error) {
	if err := zinc.VerifyWebhook(z.secret, h, body); err != nil {
		return models.FulfilmentEvent{}, fmt.Errorf("zinc webhook: %v: %w", err, models.NewError(models.CodeInvalidSignature))
	}
	ev, err := zinc.ParseWebhook(body)
	if err != nil {
		return models.FulfilmentEvent{}, models.Errorf(models.CodeInvalidRequest, "Webhook body is not a Zinc event")
	}
	return ev.FulfilmentEvent(), nil
}

// liveWebhooks are the providers' webhook readers; Zinc's only when its
// secret is configured (without it, orders are polled only).
func liveWebhooks(cfg Config) map[string]api.FulfilmentWebhook {
	if strings.TrimSpace(cfg.ZincWebhookSecret) == "" {
		return nil
	}
	return map[string]api.FulfilmentWebhook{"zinc": zincWebhook{secret: cfg.ZincWebhookSecret}}
}

// WithAmazon returns the clients with the Creators API, its token endpoint
// and the short-link follower reached through c (the dev stack's test
// server, which answers for every Amazon host name).
func (l LiveClients) WithAmazon(c *http.Client) LiveClients {
	l.amazon, l.shortLinks = c, c
	return l
}
