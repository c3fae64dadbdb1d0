// Package api is Memocart's HTTP API: a Gin engine with every route in one
// function, the middleware (request id, logging, recovery, authentication,
// rate limits, plan gates), request and response types that follow the
// contract in shared/seed, and the one table from error code to HTTP status.
//
// Handlers decode a request, call the order use cases of package
// checkout (api/checkout) where there is a decision to make, and encode
// the result.
//
// It may import models, the rate limiter, checkout, (for orders)
// workflows and the Temporal client, OpenTelemetry's Gin instrumentation
// for request spans, and a QR encoder for the tracking page's payment
// code. It never imports a concrete store or provider, nor a metrics
// library: cmd wires those in through the small interfaces declared here.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
)

// Store is the persistence the API needs: what the handlers read and
// write themselves, and the use cases' parts (checkout.OrderStore,
// checkout.RefundStore) that the one store cmd builds both on provides.
type Store interface {
	checkout.OrderStore
	AuthenticateAPIKey(ctx context.Context, hash string) (models.APIKey, error)
	CreateCart(ctx context.Context, c models.Cart) error
	Cart(ctx context.Context, accountID string, mode models.Mode, id string) (models.Cart, error)
	// ListOrders returns a page of orders and whether more follow; an
	// unknown StartingAfter is models.ErrOrderNotFound.
	ListOrders(ctx context.Context, q models.OrderListQuery) ([]models.Order, bool, error)
	OrderByNumber(ctx context.Context, number string) (models.Order, error)
	OrderIDBySupplierRef(ctx context.Context, ref string) (string, error)
	RefundStore
	checkout.RefundStore
	WebhookStore
	EventStore
	Ping(ctx context.Context) error
	IdempotencyStore
}

// IdempotencyStore keeps the Idempotency-Key records of POST requests (see
// idempotency.go). Reservations must be atomic across API replicas.
type IdempotencyStore interface {
	ReserveIdempotencyKey(ctx context.Context, req models.IdempotentRequest, now time.Time, staleAfter time.Duration) (models.IdempotencyClaim, error)
	CompleteIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string, resp models.StoredResponse, now time.Time) (bool, error)
	ReleaseIdempotencyKey(ctx context.Context, sc models.IdempotencyScope, token string) (bool, error)
	PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error)
}

// Catalog looks up marketplace products (checkout.Catalog).
type Catalog = checkout.Catalog

// RateLimiter decides whether a key may make one more request.
type RateLimiter interface {
	Allow(ctx context.Context, key string, perMinute int) (ratelimit.Result, error)
}

// Config is the API's behaviour, parsed once by cmd; how orders are taken
// is the use cases' (checkout.Config).
type Config struct {
	KeyPrefix string
	// Payments says where and how payers pay, per mode, as the order use
	// cases were given it (the payment instructions' network).
	Payments map[models.Mode]PaymentSetup
	// PublicURL is the base of tracking_url, e.g. https://track.memocart.com.
	PublicURL string
	// RequestTimeout bounds every request: past it, whatever the request
	// waits on (a hung database, Temporal, a marketplace) is cancelled and
	// the answer is 503 service_unavailable. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// KeyCacheTTL is how long a replica reuses the database's answer about
	// an API key (DefaultKeyCacheTTL): the bound on how long a revoked key
	// keeps working. Negative turns the cache off.
	KeyCacheTTL time.Duration
	// WebhookTestLoopback lets test keys register webhook endpoints on
	// loopback addresses (localhost): a developer's machine. Live keys
	// never may (models.WebhookPolicyFor).
	WebhookTestLoopback bool
	// PublicRateLimit is each client address's budget of requests per
	// minute on the routes that need no key (publicRateLimit): 0 means
	// DefaultPublicRateLimit, negative turns the limit off.
	PublicRateLimit int
	// TrustedProxies are the addresses and CIDR ranges of the reverse
	// proxies in front of the API, whose X-Forwarded-For names the
	// client. Empty trusts none: the client is the connection's peer, and
	// a forwarded header anyone can send is ignored.
	TrustedProxies []string
}

// DefaultRequestTimeout is Config.RequestTimeout's default: above the
// slowest legitimate request (a live preview following a short link, whose
// clients budget their own calls inside it), far below a client's patience.
const DefaultRequestTimeout = 10 * time.Second

// PaymentSetup is the receiving side of one mode (checkout.PaymentSetup).
type PaymentSetup = checkout.PaymentSetup

// RateProvider prices one asset in another, XLM in USD
// (checkout.RateProvider).
type RateProvider = checkout.RateProvider

// DefaultStartMarkDelay is how long `memocart api` lets an order's
// "workflow started" mark wait to share one write with others.
const DefaultStartMarkDelay = 100 * time.Millisecond

// Deps are the adapters and use cases the API talks to.
type Deps struct {
	Store     Store
	Limiter   RateLimiter
	Workflows OrderWorkflows
	// Carts, Orders and Refunds are the use cases the handlers call,
	// built by cmd (required).
	Carts   *checkout.Carts
	Orders  *checkout.Orders
	Refunds *checkout.Refunds
	// TestHelpers are test mode's helpers (required).
	TestHelpers *checkout.TestHelpers
	// Webhooks reads the buying providers' webhook deliveries, by the
	// provider's name in the path (/webhooks/zinc).
	Webhooks map[string]FulfilmentWebhook
	Logger   *slog.Logger
	Now      func() time.Time

	// Events dispatches webhook endpoints' events (nil: the outbox sweep
	// alone, and no resends). Resolver checks an endpoint's host at
	// registration (nil: no lookup; deliveries check every address).
	Events   WebhookEvents
	Resolver Resolver

	// Observability (observability.go): Metrics is told about every
	// request (nil: nothing); Tracer traces every request (nil: off);
	// Readiness lists what /readyz checks besides the database.
	Metrics   RequestMetrics
	Tracer    trace.TracerProvider
	Readiness []ReadinessCheck
}

// Server holds the API's configuration and dependencies.
type Server struct {
	cfg    Config
	deps   Deps
	engine *gin.Engine
	keys   *keyCache
}

// NewServer builds the API; it refuses deps without their required parts
// (Store, Limiter and the use cases).
func NewServer(cfg Config, deps Deps) (*Server, error) {
	var missing []string
	for name, isNil := range map[string]bool{"Store": deps.Store == nil, "Limiter": deps.Limiter == nil,
		"Carts": deps.Carts == nil, "Orders": deps.Orders == nil, "Refunds": deps.Refunds == nil,
		"TestHelpers": deps.TestHelpers == nil} {
		if isNil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("api: the server needs %s", strings.Join(missing, ", "))
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = models.DefaultKeyPrefix
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.KeyCacheTTL == 0 {
		cfg.KeyCacheTTL = DefaultKeyCacheTTL
	}
	if cfg.PublicRateLimit == 0 {
		cfg.PublicRateLimit = DefaultPublicRateLimit
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Server{cfg: cfg, deps: deps, keys: newKeyCache(cfg.KeyCacheTTL, deps.Now)}
	s.engine = s.routes()
	return s, nil
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return normalizePath(s.engine) }

// Routes lists the routes served, for tests that check each one.
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }

// routes is the whole URL space of the service in one place.
func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// Trailing slashes are removed before routing (normalizePath), never
	// answered with an empty redirect a POST cannot follow.
	r.RedirectTrailingSlash = false
	r.ContextWithFallback = true
	// Gin trusts every proxy unless told otherwise, which would let any
	// client pick its own address for the per-address limit.
	if err := r.SetTrustedProxies(s.cfg.TrustedProxies); err != nil {
		// cmd validates the list; a bad one here trusts none rather than all.
		s.deps.Logger.Error("invalid trusted proxies; trusting none", slog.Any("error", err))
		_ = r.SetTrustedProxies(nil)
	}
	if s.deps.Tracer != nil {
		r.Use(s.tracing())
	}
	r.Use(s.requestID, s.accessLog, s.recover, s.deadline)
	r.NoRoute(func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/track/") {
			// A browser following a mangled tracking link gets the page's
			// own 404, not the API's JSON.
			s.trackingNotFound(c, "No such tracking page",
				"A tracking link looks like /track/1234-5678-901. Check the link in your order confirmation.")
			return
		}
		if strings.HasPrefix(c.Request.URL.Path, "/claim/") {
			hideClaimToken(c)
			s.claimNotFound(c)
			return
		}
		abort(c, models.NewError(models.CodeNotFound))
	})
	r.NoMethod(func(c *gin.Context) { abort(c, models.NewError(models.CodeMethodNotAllowed)) })

	r.GET("/healthz", func(c *gin.Context) { render(c, http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	// The routes that need no key and read data are limited per client
	// address (publicRateLimit).
	r.GET("/track/:number", s.publicRateLimit(s.renderMessage), s.trackingPage)
	// The payer's claim page (claim.go): the token in the path is the
	// credential; the form posts back to the same URL.
	r.GET("/claim/:token", hideClaimToken, s.publicRateLimit(s.renderClaimMessage), s.claimPage)
	r.POST("/claim/:token", hideClaimToken, s.publicRateLimit(s.renderClaimMessage), s.claimSubmit)
	// Buying providers' webhooks: authenticated by their signature.
	r.POST("/webhooks/:provider", s.providerWebhook)
	// The API's OpenAPI document: public, outside the authenticated group
	// below, limited per address like the tracking page.
	r.GET("/v1/openapi.json", s.publicRateLimit(nil), serveOpenAPI)

	// Every POST under /v1 honours Idempotency-Key (idempotency.go): a
	// route added here gets it without doing anything.
	// Every route under /v1 reads its query through strictQuery's rules.
	v1 := r.Group("/v1", s.authenticate, s.rateLimit, strictQuery, s.idempotency)
	// The contract's four endpoints are the basic ones: every tier has them.
	v1.POST("/products/preview", s.previewProduct)
	v1.POST("/carts", s.createCart)
	v1.POST("/orders", s.createOrder)
	v1.GET("/orders/:ref", s.getOrder)
	// Cancelling an unpaid order is part of the basic flow: every tier.
	v1.POST("/orders/:ref/cancel", s.cancelOrder)
	// Money owed back is every client's concern: every tier.
	v1.POST("/orders/:ref/refund_destination", s.setRefundDestination)
	v1.GET("/refunds", s.listRefunds)
	v1.GET("/refunds/:id", s.getRefund)
	// Test helpers: test keys only, every tier (they are how a Free
	// integration exercises the payment path).
	v1.POST("/test_helpers/orders/:ref/payments", s.createTestPayment)
	v1.POST("/test_helpers/orders/:ref/expire", s.expireTestOrder)
	v1.POST("/test_helpers/orders/:ref/advance", s.advanceTestOrder)
	v1.POST("/test_helpers/orders/:ref/fail", s.failTestOrder)
	v1.POST("/test_helpers/refunds/:id/fail", s.failTestRefund)
	// The events API: every tier, so that any client can catch up on what
	// its webhooks missed (or poll without webhooks).
	v1.GET("/events", s.listEvents)
	v1.GET("/events/:id", s.getEvent)
	// Endpoints beyond the contract need a Pro or Enterprise plan.
	pro := v1.Group("", requireTier(models.TierPro, models.TierEnterprise))
	pro.GET("/carts/:id", s.getCart)
	pro.GET("/orders", s.listOrders)
	pro.POST("/webhook_endpoints", s.createWebhookEndpoint)
	pro.GET("/webhook_endpoints", s.listWebhookEndpoints)
	pro.GET("/webhook_endpoints/:id", s.getWebhookEndpoint)
	pro.DELETE("/webhook_endpoints/:id", s.deleteWebhookEndpoint)
	pro.GET("/webhook_endpoints/:id/deliveries", s.listWebhookDeliveries)
	pro.POST("/webhook_endpoints/:id/deliveries/:event_id/resend", s.resendWebhookEvent)
	return r
}

// Serve runs an HTTP server for handler on addr until ctx is done, then
// shuts it down gracefully, letting in-flight requests finish for up to
// shutdownTimeout. ready, if not nil, receives the bound address.
func Serve(ctx context.Context, addr string, handler http.Handler, log *slog.Logger, ready chan<- string) error {
	const shutdownTimeout = 20 * time.Second
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutting down http server: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
