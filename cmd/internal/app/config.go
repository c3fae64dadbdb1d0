package app

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"strings"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/models"
)

// Config is every setting of the process, parsed from MEMOCART_* variables
// once in run and validated before anything starts.
type Config struct {
	DatabaseURL string
	DataDir     string
	HTTPAddr    string
	AdminAddr   string
	RedisURL    string
	KeyPrefix   string
	CartTTL     time.Duration
	PricingFile string
	DevAPIKey   string
	LogFormat   string
	LogLevel    string

	TemporalAddress   string
	TemporalNamespace string
	TemporalTaskQueue string
	TemporalUIPort    int
	TemporalSecurity  TemporalSecurity
	// TemporalGzip: the SDK's gzip of requests to Temporal (TemporalOptions).
	TemporalGzip     bool
	PaymentWindow    time.Duration
	SandboxStepDelay time.Duration
	SandboxPayTo     string
	PublicURL        string
	ReconcileEvery   time.Duration
	// EventRetention is how long events stay readable through the events
	// API; older ones are pruned (pruneEvents).
	EventRetention time.Duration

	StellarNetwork    models.StellarNetwork
	StellarAccount    string
	StellarHorizonURL string
	USDCIssuer        string
	// Refunds: the file holding the payout account's secret seed (read by
	// the worker only; "" = live refunds wait for one), and the limits on
	// approving refunds without an operator, in the order's currency.
	StellarPayoutSecretFile string
	// StellarPayoutAccount is that account's address (G…), so that the
	// API, which never reads the seed, refuses it as a refund destination;
	// a worker with the seed checks that they match.
	StellarPayoutAccount string
	// StellarPayoutMaxFee is the most a payout bids per operation under
	// surge pricing, in stroops (payout.Config.MaxFee).
	StellarPayoutMaxFee  int64
	RefundAutoApproveMax decimal.Decimal
	RefundDailyMax       decimal.Decimal
	XLMRateURL           string
	RateMaxAge           time.Duration
	RequestTimeout       time.Duration
	KeyCacheTTL          time.Duration
	// PublicRateLimit is each client address's requests per minute on
	// the routes that need no key; negative: no limit. TrustedProxies
	// are the reverse proxies whose X-Forwarded-For names the client.
	PublicRateLimit int
	TrustedProxies  []string

	// Traces: the OTLP/gRPC collector ("" = traces off) and the share
	// of new traces kept.
	OTLPEndpoint     string
	TraceSampleRatio float64

	WorkerStickyCacheSize  int
	WorkerMaxWorkflowTasks int
	WorkerMaxActivities    int
	SandboxXLMRate         decimal.Decimal

	// Webhooks: the key endpoint secrets are sealed with (32 bytes; nil:
	// stored in plain), and whether test keys may use loopback endpoints.
	WebhookSecretsKey   []byte
	WebhookTestLoopback bool

	// Live marketplaces and purchasing. A provider left unconfigured
	// answers live_mode_unavailable naming it.
	AmazonAPIURL      string
	AmazonTokenURL    string                      // empty: each region group's own token URL
	AmazonCredentials map[string]AmazonCredential // by region group: NA, EU, FE
	EbayAPIURL        string
	EbayClientID      string
	EbayClientSecret  string
	ZincAPIURL        string
	ZincAPIKey        string
	ZincWebhookSecret string
	ZincPoll          models.PollSchedule
	PreviewCacheTTL   time.Duration // negative: no cache
	DevLive           string        // dev only: "testservers"

	Pricing models.PricingRules // loaded from PricingFile or the default table
}

// AmazonCredential is one region group's Creators API credential.
// Version is the credential version Amazon shows with it ("3.1", "2.2"):
// it decides how its token is requested; empty means 3.x.
type AmazonCredential struct {
	ClientID, ClientSecret, PartnerTag, Version string
}

// parseAmazonCredential reads "client_id:client_secret:partner_tag" with
// an optional ":version".
func parseAmazonCredential(v string) (AmazonCredential, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 && len(parts) != 4 || strings.Contains(v, "::") || strings.HasPrefix(v, ":") || strings.HasSuffix(v, ":") {
		return AmazonCredential{}, errors.New("must be client_id:client_secret:partner_tag[:version]")
	}
	cred := AmazonCredential{ClientID: parts[0], ClientSecret: parts[1], PartnerTag: parts[2]}
	if len(parts) == 4 {
		cred.Version = parts[3]
	}
	return cred, nil
}

func parseHTTPURL(v string, dst *string) error {
	if v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("must be an http(s) URL")
		}
	}
	*dst = strings.TrimRight(v, "/")
	return nil
}

// parseOptionalStellarAccount accepts a Stellar account (G...) or empty
// (the setting is unset): wallets and Horizon refuse an account that fails
// the StrKey check, so a bad value is refused at startup instead.
func parseOptionalStellarAccount(v string, dst *string) error {
	if v != "" {
		if err := models.ValidateStellarAccount(v); err != nil {
			return err
		}
	}
	*dst = v
	return nil
}

func amazonCredentialVar(group string) envVar {
	return envVar{name: "MEMOCART_AMAZON_" + group + "_CREDENTIALS", def: "", secret: true,
		help: "live mode: Creators API credential of the " + group + " region group, client_id:client_secret:partner_tag[:version] (version as Amazon shows it, e.g. 3.1 or 2.1; default 3.x); empty = that group's storefronts are not served",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			cred, err := parseAmazonCredential(v)
			if err != nil {
				return err
			}
			if c.AmazonCredentials == nil {
				c.AmazonCredentials = map[string]AmazonCredential{}
			}
			c.AmazonCredentials[group] = cred
			return nil
		}}
}

// envVar documents one variable; the same list drives parsing, --help and
// the masked print at start, so they cannot drift apart.
type envVar struct {
	name, def, help string
	secret          bool
	set             func(*Config, string) error
}

// VariableNames are the names of every configuration variable.
func VariableNames() []string {
	names := make([]string, len(envVars))
	for i, v := range envVars {
		names[i] = v.name
	}
	return names
}

var envVars = []envVar{
	{name: "MEMOCART_DATABASE_URL", def: "", secret: true,
		help: "postgres://USER:PASS@HOST:5432/DB?sslmode=... for production; empty = SQLite file DATA_DIR/memocart.db",
		set:  func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
	{name: "MEMOCART_DATA_DIR", def: ".data",
		help: "directory for the embedded SQLite databases (app and, in dev, Temporal)",
		set:  func(c *Config, v string) error { c.DataDir = v; return nil }},
	{name: "MEMOCART_ADMIN_ADDR", def: "",
		help: "opt-in admin listener serving /metrics, /healthz, /readyz and net/http/pprof at /debug/pprof/ (e.g. 127.0.0.1:6060); never the public address; empty = off",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("must be host:port")
			}
			c.AdminAddr = v
			return nil
		}},
	{name: "MEMOCART_OTLP_ENDPOINT", def: "",
		help: "OpenTelemetry collector traces are sent to over OTLP/gRPC, e.g. http://127.0.0.1:4317 (https:// for TLS); empty = $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then $OTEL_EXPORTER_OTLP_ENDPOINT; none = traces off",
		set:  func(c *Config, v string) error { return parseOTLPEndpoint(v, &c.OTLPEndpoint) }},
	{name: "MEMOCART_TRACE_SAMPLE_RATIO", def: "1",
		help: "share of new traces kept when traces are on, 0 to 1; a trace started elsewhere (a worker's workflow) follows its parent's choice",
		set: func(c *Config, v string) error {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 || r > 1 {
				return errors.New("must be a number from 0 to 1")
			}
			c.TraceSampleRatio = r
			return nil
		}},
	{name: "MEMOCART_HTTP_ADDR", def: "127.0.0.1:8080",
		help: "address the HTTP API listens on",
		set: func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("must be host:port: %w", err)
			}
			c.HTTPAddr = v
			return nil
		}},
	{name: "MEMOCART_REDIS_URL", def: "", secret: true,
		help: "redis://HOST:6379/0 to share rate limits across API replicas; empty = in-process limiter",
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") {
				return errors.New("must start with redis:// or rediss://")
			}
			c.RedisURL = v
			return nil
		}},
	{name: "MEMOCART_KEY_PREFIX", def: models.DefaultKeyPrefix,
		help: "service word API keys start with: <prefix>_live_... and <prefix>_test_...",
		set: func(c *Config, v string) error {
			for _, r := range v {
				if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
					return errors.New("must be lowercase letters and digits")
				}
			}
			if v == "" {
				return errors.New("must not be empty")
			}
			c.KeyPrefix = v
			return nil
		}},
	{name: "MEMOCART_CART_TTL", def: "30m",
		help: "how long a cart can be turned into an order (Go duration)",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.CartTTL) }},
	{name: "MEMOCART_PRICING_FILE", def: "",
		help: "JSON pricing rule table (see docs/pricing.md); empty = built-in table",
		set:  func(c *Config, v string) error { c.PricingFile = v; return nil }},
	{name: "MEMOCART_DEV_API_KEY", def: "", secret: true,
		help: "dev only: use exactly this test key (<prefix>_test_ + 16 or more letters/digits) instead of a random one",
		set:  func(c *Config, v string) error { c.DevAPIKey = v; return nil }},
	{name: "MEMOCART_TEMPORAL_ADDRESS", def: "127.0.0.1:7233",
		help: "Temporal frontend host:port (api, worker); dev runs an embedded server here",
		set: func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("must be host:port: %w", err)
			}
			c.TemporalAddress = v
			return nil
		}},
	{name: "MEMOCART_TEMPORAL_NAMESPACE", def: "default",
		help: "Temporal namespace",
		set:  func(c *Config, v string) error { c.TemporalNamespace = v; return nil }},
	{name: "MEMOCART_TEMPORAL_TASK_QUEUE", def: "memocart-orders",
		help: "task queue the order workflows and activities run on",
		set:  func(c *Config, v string) error { c.TemporalTaskQueue = v; return nil }},
	{name: "MEMOCART_TEMPORAL_TLS", def: "",
		help: "TLS to Temporal (api, worker, operator commands): true, false, or empty = on when a CA, client certificate, server name or API key is set",
		set:  func(c *Config, v string) error { return parseTLSMode(v, &c.TemporalSecurity.TLSMode) }},
	{name: "MEMOCART_TEMPORAL_TLS_CA_FILE", def: "",
		help: "PEM file of the roots that sign the Temporal server's certificate; empty = the system's roots",
		set:  func(c *Config, v string) error { c.TemporalSecurity.CAFile = v; return nil }},
	{name: "MEMOCART_TEMPORAL_TLS_CERT_FILE", def: "",
		help: "mTLS: PEM client certificate chain for Temporal, with MEMOCART_TEMPORAL_TLS_KEY_FILE; re-read at each connection, so rotation needs no restart",
		set:  func(c *Config, v string) error { c.TemporalSecurity.CertFile = v; return nil }},
	{name: "MEMOCART_TEMPORAL_TLS_KEY_FILE", def: "",
		help: "mTLS: PEM private key of MEMOCART_TEMPORAL_TLS_CERT_FILE",
		set:  func(c *Config, v string) error { c.TemporalSecurity.KeyFile = v; return nil }},
	{name: "MEMOCART_TEMPORAL_TLS_SERVER_NAME", def: "",
		help: "name expected in the Temporal server's certificate when it differs from the host of MEMOCART_TEMPORAL_ADDRESS",
		set:  func(c *Config, v string) error { c.TemporalSecurity.ServerName = v; return nil }},
	{name: "MEMOCART_TEMPORAL_API_KEY", def: "", secret: true,
		help: "Temporal Cloud API key, sent as a bearer token over TLS (turns TLS on)",
		set:  func(c *Config, v string) error { c.TemporalSecurity.APIKey = v; return nil }},
	{name: "MEMOCART_TEMPORAL_COMPRESSION", def: "gzip",
		help: "compression of requests to Temporal: gzip (the SDK's default) or none; none saves the CPU of both ends where Temporal is on the same network (the cluster and docker-compose set it)",
		set: func(c *Config, v string) error {
			switch v {
			case "gzip", "none":
				c.TemporalGzip = v == "gzip"
				return nil
			}
			return errors.New("must be gzip or none")
		}},
	{name: "MEMOCART_TEMPORAL_UI_PORT", def: "8233",
		help: "dev only: port of the embedded Temporal Web UI (-1 disables it)",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 || n > 65535 {
				return errors.New("must be a port number or -1")
			}
			c.TemporalUIPort = n
			return nil
		}},
	{name: "MEMOCART_PAYMENT_WINDOW", def: "30m",
		help: "how long a payer has to pay a new order (payment_expires_at)",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.PaymentWindow) }},
	{name: "MEMOCART_SANDBOX_STEP_DELAY", def: "2s",
		help: "test mode: time between the sandbox fulfilment steps ordered, shipped, delivered",
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return errors.New("must be a non-negative Go duration")
			}
			c.SandboxStepDelay = d
			return nil
		}},
	{name: "MEMOCART_SANDBOX_PAYMENT_ADDRESS", def: sandbox.PaymentAddress,
		help: "test mode: the payment_address shown on orders, a Stellar account id (G...); nothing is ever sent there",
		set: func(c *Config, v string) error {
			// Wallets refuse a payment link whose destination fails the
			// StrKey check, so a bad value is refused here, not there.
			if err := models.ValidateStellarAccount(v); err != nil {
				return err
			}
			c.SandboxPayTo = v
			return nil
		}},
	{name: "MEMOCART_PUBLIC_URL", def: "",
		help: "base URL of tracking_url links; empty = http://MEMOCART_HTTP_ADDR",
		set: func(c *Config, v string) error {
			if v != "" {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return errors.New("must be an http(s) URL")
				}
			}
			c.PublicURL = v
			return nil
		}},
	{name: "MEMOCART_RECONCILE_INTERVAL", def: "10s",
		help: "how often the api re-drives orders whose workflow did not start and payments not yet handed to their workflow",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.ReconcileEvery) }},
	{name: "MEMOCART_EVENT_RETENTION", def: "720h",
		help: "how long events stay listed by GET /v1/events (30 days by default); older ones, once delivered, are deleted with their delivery attempts",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.EventRetention) }},
	{name: "MEMOCART_STELLAR_NETWORK", def: "pubnet",
		help: "Stellar network of live payments: pubnet or testnet",
		set: func(c *Config, v string) error {
			c.StellarNetwork = models.StellarNetwork(v)
			if !c.StellarNetwork.Valid() {
				return errors.New("must be pubnet or testnet")
			}
			return nil
		}},
	{name: "MEMOCART_STELLAR_ACCOUNT", def: "",
		help: "live mode: the Stellar account (G...) payers pay to; empty = live orders are refused",
		set:  func(c *Config, v string) error { return parseOptionalStellarAccount(v, &c.StellarAccount) }},
	{name: "MEMOCART_STELLAR_HORIZON_URL", def: "",
		help: "Horizon server the payment watcher reads; empty = SDF's public Horizon of the network",
		set:  func(c *Config, v string) error { return parseHTTPURL(v, &c.StellarHorizonURL) }},
	{name: "MEMOCART_STELLAR_USDC_ISSUER", def: "",
		help: "issuer of the USDC accepted; empty = Circle's issuer on the network",
		set:  func(c *Config, v string) error { return parseOptionalStellarAccount(v, &c.USDCIssuer) }},
	{name: "MEMOCART_STELLAR_PAYOUT_SECRET_FILE", def: "",
		help: "live mode: file holding the secret seed (S...) of the Stellar account refunds are paid from; read by the worker only, never logged; empty = live refunds wait for approval and a payout account",
		set:  func(c *Config, v string) error { c.StellarPayoutSecretFile = v; return nil }},
	{name: "MEMOCART_STELLAR_PAYOUT_ACCOUNT", def: "",
		help: "live mode: the address (G...) of the payout account of MEMOCART_STELLAR_PAYOUT_SECRET_FILE, which the api refuses as a refund destination (as it does MEMOCART_STELLAR_ACCOUNT); a worker with the secret file refuses to start if they differ; empty = only the worker refuses it",
		set:  func(c *Config, v string) error { return parseOptionalStellarAccount(v, &c.StellarPayoutAccount) }},
	{name: "MEMOCART_STELLAR_PAYOUT_MAX_FEE", def: strconv.Itoa(payout.DefaultMaxFee),
		help: "live mode: the most a refund payout bids per operation under surge pricing, in stroops (100 to 10000000; the network charges its fee of the ledger, not the bid); a payout the network wants more for waits, with the alert refund_payout_fee_too_low",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < payout.DefaultBaseFee || n > maxPayoutFee {
				return fmt.Errorf("must be an integer number of stroops from %d to %d", payout.DefaultBaseFee, maxPayoutFee)
			}
			c.StellarPayoutMaxFee = n
			return nil
		}},
	{name: "MEMOCART_REFUND_AUTO_APPROVE_MAX", def: "0",
		help: "live mode: a refund worth at most this (in the order's currency) is paid without an operator's approval; 0 = every live refund waits for `memocart refunds approve` (test mode approves all)",
		set:  func(c *Config, v string) error { return parseNonNegativeDecimal(v, &c.RefundAutoApproveMax) }},
	{name: "MEMOCART_REFUND_DAILY_MAX", def: "0",
		help: "live mode: what refunds approved without an operator may add up to per UTC day; beyond it they wait for approval; 0 = no daily limit",
		set:  func(c *Config, v string) error { return parseNonNegativeDecimal(v, &c.RefundDailyMax) }},
	{name: "MEMOCART_XLM_RATE_URL", def: "https://api.coinbase.com",
		help: "live mode: base URL of the XLM-USD spot price endpoint ({url}/v2/prices/XLM-USD/spot)",
		set: func(c *Config, v string) error {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return errors.New("must be an http(s) URL")
			}
			c.XLMRateURL = strings.TrimRight(v, "/")
			return nil
		}},
	{name: "MEMOCART_REQUEST_TIMEOUT", def: "10s",
		help: "longest an API request may take: past it, whatever it waits on is cancelled and the answer is 503 service_unavailable",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.RequestTimeout) }},
	{name: "MEMOCART_KEY_CACHE_TTL", def: "5s",
		help: "how long an API replica reuses the database's answer about a key: the bound on how long a revoked key keeps working; 0 = read the database on every request",
		set:  func(c *Config, v string) error { return parseCacheTTL(v, &c.KeyCacheTTL) }},
	{name: "MEMOCART_PUBLIC_RATE_LIMIT", def: "60",
		help: "requests per minute each client address may make to the routes that need no key (the tracking page, /v1/openapi.json; not health checks or provider webhooks); 0 = no limit",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("must be a non-negative integer")
			}
			if n == 0 {
				n = -1
			}
			c.PublicRateLimit = n
			return nil
		}},
	{name: "MEMOCART_TRUSTED_PROXIES", def: "",
		help: "comma-separated addresses or CIDR ranges of the reverse proxies in front of the API, whose X-Forwarded-For names the client for the per-address limit; empty = trust none (the client is the connection's peer)",
		set: func(c *Config, v string) error {
			c.TrustedProxies = nil
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p == "" {
					continue
				}
				if _, err := netip.ParsePrefix(p); err != nil {
					if _, err := netip.ParseAddr(p); err != nil {
						return fmt.Errorf("%q is not an IP address or CIDR range", p)
					}
				}
				c.TrustedProxies = append(c.TrustedProxies, p)
			}
			return nil
		}},
	{name: "MEMOCART_WORKER_STICKY_CACHE_SIZE", def: "10000",
		help: "worker: workflows kept in memory between their tasks (Temporal's sticky cache); a smaller cache trades memory per waiting order for replays",
		set:  func(c *Config, v string) error { return parsePositiveInt(v, &c.WorkerStickyCacheSize) }},
	{name: "MEMOCART_WORKER_MAX_WORKFLOW_TASKS", def: "1000",
		help: "worker: workflow tasks one process runs at once",
		set:  func(c *Config, v string) error { return parsePositiveInt(v, &c.WorkerMaxWorkflowTasks) }},
	{name: "MEMOCART_WORKER_MAX_ACTIVITIES", def: "1000",
		help: "worker: activities one process runs at once",
		set:  func(c *Config, v string) error { return parsePositiveInt(v, &c.WorkerMaxActivities) }},
	{name: "MEMOCART_RATE_MAX_AGE", def: "60s",
		help: "oldest exchange rate an XLM order may be quoted on; older or missing = the order is refused",
		set:  func(c *Config, v string) error { return parsePositiveDuration(v, &c.RateMaxAge) }},
	{name: "MEMOCART_SANDBOX_XLM_RATE", def: "0.25",
		help: "test mode: fixed USD price of one XLM",
		set: func(c *Config, v string) error {
			d, err := decimal.NewFromString(v)
			if err != nil || !d.IsPositive() {
				return errors.New("must be a positive decimal")
			}
			c.SandboxXLMRate = d
			return nil
		}},
	{name: "MEMOCART_WEBHOOK_SECRETS_KEY", def: "", secret: true,
		help: "base64 of 32 random bytes (openssl rand -base64 32): webhook endpoint secrets and refund claim links are stored sealed with it (AES-256-GCM); empty = stored in plain (development)",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			key, err := base64.StdEncoding.DecodeString(v)
			if err != nil || len(key) != 32 {
				return errors.New("must be the base64 of exactly 32 bytes")
			}
			c.WebhookSecretsKey = key
			return nil
		}},
	{name: "MEMOCART_WEBHOOK_TEST_LOOPBACK", def: "true",
		help: "true = test keys may register webhook endpoints on loopback (http://localhost:...) for development; false on a shared deployment whose own loopback services test keys must not reach. Live keys never may",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return errors.New("must be true or false")
			}
			c.WebhookTestLoopback = b
			return nil
		}},
	{name: "MEMOCART_AMAZON_API_URL", def: "https://creatorsapi.amazon",
		help: "live mode: base URL of Amazon's Creators API (product data)",
		set:  func(c *Config, v string) error { return parseHTTPURL(v, &c.AmazonAPIURL) }},
	{name: "MEMOCART_AMAZON_TOKEN_URL", def: "",
		help: "live mode: OAuth2 token URL for every region group; empty = each group's documented one",
		set:  func(c *Config, v string) error { return parseHTTPURL(v, &c.AmazonTokenURL) }},
	amazonCredentialVar("NA"),
	amazonCredentialVar("EU"),
	amazonCredentialVar("FE"),
	{name: "MEMOCART_EBAY_API_URL", def: "https://api.ebay.com",
		help: "live mode: base URL of eBay's APIs (Browse API and OAuth token)",
		set:  func(c *Config, v string) error { return parseHTTPURL(v, &c.EbayAPIURL) }},
	{name: "MEMOCART_EBAY_CLIENT_ID", def: "",
		help: "live mode: eBay application's client id; empty = eBay links are not served",
		set:  func(c *Config, v string) error { c.EbayClientID = v; return nil }},
	{name: "MEMOCART_EBAY_CLIENT_SECRET", def: "", secret: true,
		help: "live mode: eBay application's client secret",
		set:  func(c *Config, v string) error { c.EbayClientSecret = v; return nil }},
	{name: "MEMOCART_ZINC_API_URL", def: "https://api.zinc.com",
		help: "live mode: base URL of the Zinc buying API",
		set:  func(c *Config, v string) error { return parseHTTPURL(v, &c.ZincAPIURL) }},
	{name: "MEMOCART_ZINC_API_KEY", def: "", secret: true,
		help: "live mode: Zinc API key (zn_live_... buys for real, zn_test_... in Zinc's sandbox); empty = live orders are refused",
		set:  func(c *Config, v string) error { c.ZincAPIKey = v; return nil }},
	{name: "MEMOCART_ZINC_WEBHOOK_SECRET", def: "", secret: true,
		help: "live mode: secret Zinc signs webhooks to /webhooks/zinc with; empty = webhooks are refused and orders are polled only",
		set:  func(c *Config, v string) error { c.ZincWebhookSecret = v; return nil }},
	{name: "MEMOCART_ZINC_POLL_SCHEDULE", def: "",
		help: "live mode: when to check a Zinc order: first after placing, then while buying, bought, shipped (Go durations); empty = 7m,4m,6h,6h with MEMOCART_ZINC_WEBHOOK_SECRET (webhooks prompt each check), 7m,4m,30m,1h without",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			parts := strings.Split(v, ",")
			if len(parts) != 4 {
				return errors.New("must be four durations: first,pending,ordered,shipped")
			}
			ds := make([]time.Duration, 4)
			for i, p := range parts {
				if err := parsePositiveDuration(strings.TrimSpace(p), &ds[i]); err != nil {
					return fmt.Errorf("%q: %w", p, err)
				}
			}
			c.ZincPoll = models.PollSchedule{First: ds[0], Pending: ds[1], Ordered: ds[2], Shipped: ds[3]}
			return nil
		}},
	{name: "MEMOCART_PREVIEW_CACHE_TTL", def: "10m",
		help: "live mode: how long a marketplace's answer about a product is reused (the oldest price shown); 0 = ask every time",
		set:  func(c *Config, v string) error { return parseCacheTTL(v, &c.PreviewCacheTTL) }},
	{name: "MEMOCART_DEV_LIVE", def: "",
		help: "dev only: testservers = run test servers of the marketplaces, Zinc and Horizon inside dev and point live mode at them",
		set: func(c *Config, v string) error {
			if v != "" && v != "testservers" {
				return errors.New("must be empty or testservers")
			}
			c.DevLive = v
			return nil
		}},
	{name: "MEMOCART_LOG_FORMAT", def: "",
		help: "text or json; empty = text for dev, json otherwise",
		set: func(c *Config, v string) error {
			if v != "" && v != "text" && v != "json" {
				return errors.New("must be text or json")
			}
			c.LogFormat = v
			return nil
		}},
	{name: "MEMOCART_LOG_LEVEL", def: "info",
		help: "debug, info, warn or error",
		set: func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return errors.New("must be debug, info, warn or error")
		}},
}

// parseCacheTTL reads a cache lifetime: a non-negative duration, where 0
// (off) is stored as -1 so that the zero value can keep meaning "default".
func parseCacheTTL(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New("must be a non-negative Go duration")
	}
	if d == 0 {
		d = -1
	}
	*dst = d
	return nil
}

// maxPayoutFee caps MEMOCART_STELLAR_PAYOUT_MAX_FEE at 1 XLM per
// operation, so that a typo cannot bid a fortune.
const maxPayoutFee = 10_000_000

func parsePositiveInt(v string, dst *int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return errors.New("must be a positive integer")
	}
	*dst = n
	return nil
}

func parsePositiveDuration(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	if d <= 0 {
		return errors.New("must be positive")
	}
	*dst = d
	return nil
}

// loadConfig reads and validates every variable; all problems are reported
// together so an operator fixes them in one go.
func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	for _, v := range envVars {
		val := getenv(v.name)
		if val == "" {
			val = v.def
		}
		if err := v.set(&cfg, val); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if err := cfg.TemporalSecurity.validate(); err != nil {
		return Config{}, err
	}
	if err := otlpEndpointFallback(&cfg, getenv); err != nil {
		return Config{}, err
	}
	if cfg.StellarHorizonURL == "" {
		cfg.StellarHorizonURL = map[models.StellarNetwork]string{
			models.StellarPubnet:  "https://horizon.stellar.org",
			models.StellarTestnet: "https://horizon-testnet.stellar.org",
		}[cfg.StellarNetwork]
	}
	if cfg.USDCIssuer == "" {
		cfg.USDCIssuer = models.DefaultUSDCIssuer(cfg.StellarNetwork)
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + cfg.HTTPAddr
	}
	if cfg.ZincPoll == (models.PollSchedule{}) {
		cfg.ZincPoll = zinc.ScheduleFor(cfg.ZincWebhookSecret != "")
	}
	cfg.Pricing = models.DefaultPricingRules()
	if cfg.PricingFile != "" {
		data, err := os.ReadFile(cfg.PricingFile)
		if err != nil {
			return Config{}, fmt.Errorf("MEMOCART_PRICING_FILE: %w", err)
		}
		if cfg.Pricing, err = models.ParsePricingRules(data); err != nil {
			return Config{}, fmt.Errorf("MEMOCART_PRICING_FILE %s: %w", cfg.PricingFile, err)
		}
	}
	return cfg, nil
}

// databaseDSN is the app database: the configured URL or the embedded
// SQLite file.
func (c Config) databaseDSN() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return "sqlite://" + filepath.Join(c.DataDir, "memocart.db")
}

// Masked renders the configuration for the start-up log with secrets
// hidden: URLs keep their host, keys keep their display prefix.
func (c Config) Masked(getenv func(string) string) string { return masked(getenv, true) }

// Overrides is Masked for the variables the environment sets only: what
// makes this process differ from the defaults.
func (c Config) Overrides(getenv func(string) string) string { return masked(getenv, false) }

func masked(getenv func(string) string, withDefaults bool) string {
	var b strings.Builder
	for _, v := range envVars {
		val := getenv(v.name)
		if val == "" && !withDefaults {
			continue
		}
		if val == "" {
			val = v.def
		}
		if v.secret && val != "" {
			val = maskSecret(val)
		}
		fmt.Fprintf(&b, "%s=%s ", v.name, val)
	}
	return strings.TrimSpace(b.String())
}

func maskSecret(v string) string {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Redacted()
	}
	// A key with a display prefix (mc_live_…, zn_live_…) keeps it; a bare
	// secret (a base64 key, a client secret) shows nothing of itself.
	prefix, _ := models.APIKeyDisplay(v)
	if strings.Contains(v, "_") && len(prefix) < len(v) {
		return prefix + "…"
	}
	return "****"
}

// writeEnvHelp prints the variable table for --help.
func writeEnvHelp(w *tabwriter.Writer) {
	for _, v := range envVars {
		def := v.def
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", v.name, def, v.help)
	}
	w.Flush()
}

// parseNonNegativeDecimal reads an amount of money: a decimal, zero or
// more.
func parseNonNegativeDecimal(v string, dst *decimal.Decimal) error {
	d, err := decimal.NewFromString(v)
	if err != nil || d.IsNegative() {
		return errors.New("must be a decimal amount, 0 or more")
	}
	*dst = d
	return nil
}
