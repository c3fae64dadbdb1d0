// Package zinctest is an in-process Zinc API server for tests, end-to-end
// tests and `memocart dev`. It serves the order endpoints Memocart's live
// fulfiller calls, in the shapes of Zinc's API definition (the official
// SDKs' types): POST /orders (201), GET /orders/{id}, GET /orders (newest
// first, limit and offset, created_after and created_before as RFC 3339
// instants, and the metadata_key/metadata_value lookup of Zinc's newest
// SDK, which WithoutMetadataFilter turns off as older revisions of the API
// would), POST /orders/{id}/cancel (204 while
// pending, 409 order_not_cancellable after). It listens on a real loopback
// port (or the one given WithListener), so it works for a process as well
// as for a test.
//
// Requests need "Authorization: Bearer <key>" with the server's key
// (DefaultAPIKey unless WithAPIKey says otherwise); anything else, the
// legacy API's HTTP Basic included, is a 401 in Zinc's error shape,
// {"error": {"code", "message", "details"}}. POST /orders takes a JSON
// body (Content-Type application/json; another or none is 400
// bad_request) whose keys are matched exactly, case included, so
// "Max_Price" is not max_price; a key the request model does not have is
// ignored.
// Orders are validated as Zinc documents: at least one product with a URL
// and a quantity of 1 to 100, max_price a positive integer (US cents), an
// idempotency_key of at most 36 characters, and a shipping address with
// first and last name, line 1, city, phone number, lines of at most 60
// characters, an ISO 3166-1 alpha-2 country (default US; "USA" is
// refused), and for the US a state and a 5-digit ZIP (optionally +4). A
// bad field is 422 validation_error, a bad address 422
// invalid_shipping_address, with the fields in details. A repeated
// idempotency key never creates a second order: it is answered 409
// already_exists with details {"resource": "Order", "identifier": <key>},
// as Zinc documents.
//
// # Time
//
// An order's progress is a function of the time since it was created on
// the server's clock (see Timings): pending, in_progress, then the
// purchase's outcome at Placed; a placed order gets its tracking number at
// Shipped (parcel pending, label created), moves at InTransit, and is
// delivered at Delivered, each step adding a carrier checkpoint. The
// parcel's estimated_delivery_date is set when its tracking appears, and
// is the creation date plus Delivered: a date of the order, never of the
// moment it is asked. The clock is frozen at the time New was called
// until a test moves it: SetNow sets it, Advance moves it, SetAutoClock
// lets it run at any speed, and WithRealClock starts it running at wall
// time, for `memocart dev`. DevTimings makes an order go from pending to
// delivered in seconds.
//
// # Scenarios
//
// The first product of an order whose link names a reserved id (an
// Amazon ASIN at /dp/<ASIN>, an eBay item at /itm/<id>) decides the
// order's fate; every other order is bought (price_components total 90%
// of max_price, breakdown recorded), ships in one UPS parcel and is
// delivered.
//
//	B0ZNC00001  200000000001  OutOfStock      order_failed, error_type product_out_of_stock, at Placed
//	B0ZNC00002  200000000002  PriceAboveMax   order_failed, error_type max_price_exceeded, at Placed
//	B0ZNC00003  200000000003  RetailerCancels order_placed, then cancelled_by_retailer at Shipped
//	B0ZNC00004  200000000004  SplitShipment   two parcels (UPS, then FedEx SplitLag later), two
//	                                          merchant order ids; delivered only when both are
//	B0ZNC00005  200000000005  Undeliverable   the parcel ends undeliverable at Delivered
//	B0ZNC00006  200000000006  RateLimitedOnce the first order of a Memocart order (metadata
//	                                          memocart_order_id, else po_number, else the key)
//	                                          fails with retailer_rate_limited; later ones are bought
//	B0ZNC00007  200000000007  Rejected        POST /orders answers 422 out_of_stock; no order
//
// # Failures and webhooks
//
// FailNext, RateLimitNext, SetLatency inject Zinc's and the network's
// failures; FailAfterCreate and DropAfterCreate create the order and then
// answer 500 or cut the connection: the crash between placing an order
// and recording it. Counters (OrdersCreated, CreateRequests, Orders) let a
// test prove an order was placed exactly once.
//
// SetWebhook makes the server POST a signed event (zinc.SignWebhook) to a
// URL on every change: order.started when created, order.placed,
// order.failed, order.cancelled, order.tracking_received when a parcel
// appears, order.tracking_updated when a parcel moves, order.delivered
// when all parcels are delivered. Each is sent asynchronously, in its own
// goroutine, so deliveries may arrive out of order, as Zinc's may;
// DuplicateWebhooks, DropWebhooks and DelayWebhooks make delivery worse.
// The payload is Zinc's documented {event, order_id, status, timestamp,
// data}; its timestamp is wall time at sending, whatever the server's
// clock says, so a receiver checking freshness against its own clock
// accepts it.
//
// Where it knowingly differs from Zinc:
//   - no event is sent when an order moves to in_progress, and
//     order.tracking_updated is not in Zinc's documented list;
//   - webhook payloads carry the order's metadata only with
//     WithWebhookMetadata; Zinc documents none;
//   - a sync rejection (Rejected) does not use up its idempotency key;
//   - Zinc does not document its answer to a body that is not declared
//     JSON: 400 bad_request is this server's choice;
//   - prices, carriers and checkpoints are made up; product pages are
//     never fetched.
//
// It may import package zinc (for its wire constants and the webhook
// signature) and the standard library only.
package zinctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/activities/zinc"
)

// DefaultAPIKey is the key a server accepts unless WithAPIKey says
// otherwise: a test key, as Zinc's sandbox takes.
const DefaultAPIKey = "zn_test_zinctest0000000000000000"

// Reserved Amazon ASINs. See the package comment for what each does.
const (
	OutOfStockASIN      = "B0ZNC00001"
	PriceAboveMaxASIN   = "B0ZNC00002"
	RetailerCancelsASIN = "B0ZNC00003"
	SplitShipmentASIN   = "B0ZNC00004"
	UndeliverableASIN   = "B0ZNC00005"
	RateLimitedOnceASIN = "B0ZNC00006"
	RejectedASIN        = "B0ZNC00007"
)

// Reserved eBay item ids, doing what the ASIN of the same number does.
const (
	OutOfStockItem      = "200000000001"
	PriceAboveMaxItem   = "200000000002"
	RetailerCancelsItem = "200000000003"
	SplitShipmentItem   = "200000000004"
	UndeliverableItem   = "200000000005"
	RateLimitedOnceItem = "200000000006"
	RejectedItem        = "200000000007"
)

type scenario int

const (
	normal scenario = iota
	outOfStock
	priceAboveMax
	retailerCancels
	splitShipment
	undeliverable
	rateLimitedOnce
	rejected
)

var scenarios = map[string]scenario{
	OutOfStockASIN: outOfStock, OutOfStockItem: outOfStock,
	PriceAboveMaxASIN: priceAboveMax, PriceAboveMaxItem: priceAboveMax,
	RetailerCancelsASIN: retailerCancels, RetailerCancelsItem: retailerCancels,
	SplitShipmentASIN: splitShipment, SplitShipmentItem: splitShipment,
	UndeliverableASIN: undeliverable, UndeliverableItem: undeliverable,
	RateLimitedOnceASIN: rateLimitedOnce, RateLimitedOnceItem: rateLimitedOnce,
	RejectedASIN: rejected, RejectedItem: rejected,
}

var (
	asinInURL = regexp.MustCompile(`/(?:dp|gp/product|gp/aw/d)/([A-Za-z0-9]{10})`)
	itemInURL = regexp.MustCompile(`/itm/(?:[^/?#]+/)?([0-9]{9,15})`)
)

// scenarioOf returns what the first reserved product of an order makes it do.
func scenarioOf(urls []string) scenario {
	for _, u := range urls {
		for _, re := range []*regexp.Regexp{asinInURL, itemInURL} {
			if m := re.FindStringSubmatch(u); m != nil {
				if sc, ok := scenarios[strings.ToUpper(m[1])]; ok {
					return sc
				}
			}
		}
	}
	return normal
}

// Timings are when an order reaches each step, counted from its creation.
// A zero Timings is DefaultTimings. Otherwise zero steps take
// DefaultTimings' values, Processing defaults to a fifth of Placed and
// SplitLag to a quarter of Delivered-Shipped, and each step is moved to no
// earlier than the one before it.
type Timings struct {
	Processing time.Duration // pending → in_progress
	Placed     time.Duration // → order_placed, or the purchase's failure
	Shipped    time.Duration // → tracking number, parcel pending (label created); a retailer's cancellation happens here instead
	InTransit  time.Duration // → parcel in_transit
	Delivered  time.Duration // → parcel delivered (or undeliverable)
	// SplitLag is how far the second parcel of a split shipment runs
	// behind the first. Keep it below Delivered-Shipped, so both parcels
	// are listed before the first is delivered.
	SplitLag time.Duration
}

// DefaultTimings are Zinc-like: bought in about 6 minutes, delivered in 3
// days.
var DefaultTimings = Timings{
	Processing: time.Minute,
	Placed:     6 * time.Minute,
	Shipped:    2 * time.Hour,
	InTransit:  24 * time.Hour,
	Delivered:  72 * time.Hour,
	SplitLag:   12 * time.Hour,
}

// DevTimings walk an order from pending to delivered in 15 seconds, for
// `memocart dev`.
var DevTimings = Timings{
	Processing: time.Second,
	Placed:     5 * time.Second,
	Shipped:    7 * time.Second,
	InTransit:  10 * time.Second,
	Delivered:  15 * time.Second,
	SplitLag:   3 * time.Second,
}

func (t Timings) withDefaults() Timings {
	if t == (Timings{}) {
		return DefaultTimings
	}
	d := DefaultTimings
	for _, p := range []struct{ v, def *time.Duration }{
		{&t.Placed, &d.Placed}, {&t.Shipped, &d.Shipped}, {&t.InTransit, &d.InTransit}, {&t.Delivered, &d.Delivered},
	} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	t.Shipped = max(t.Shipped, t.Placed)
	t.InTransit = max(t.InTransit, t.Shipped)
	t.Delivered = max(t.Delivered, t.InTransit)
	if t.Processing <= 0 {
		t.Processing = t.Placed / 5
	}
	t.Processing = min(t.Processing, t.Placed)
	if t.SplitLag <= 0 {
		t.SplitLag = (t.Delivered - t.Shipped) / 4
	}
	return t
}

// Option configures a Server.
type Option func(*options)

type options struct {
	apiKey          string
	timings         Timings
	listener        net.Listener
	realClock       bool
	webhookMetadata bool
	noMetaFilter    bool
}

// WithAPIKey sets the bearer key the server accepts (default
// DefaultAPIKey).
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithTimings sets the order steps' timings (default DefaultTimings).
func WithTimings(t Timings) Option { return func(o *options) { o.timings = t } }

// WithRealClock starts the server's clock running at wall-time speed, for
// a process people watch; by default it is frozen at the time New was
// called until a test moves it.
func WithRealClock() Option { return func(o *options) { o.realClock = true } }

// WithListener serves on l instead of a fresh loopback port, e.g. a fixed
// address for `memocart dev`. The server closes l when it is closed.
func WithListener(l net.Listener) Option { return func(o *options) { o.listener = l } }

// WithWebhookMetadata adds the order's metadata to webhook payloads, as
// data.metadata. Zinc documents no such field; off by default so
// receivers are tested without it.
func WithWebhookMetadata() Option { return func(o *options) { o.webhookMetadata = true } }

// WithoutMetadataFilter makes GET /orders ignore metadata_key and
// metadata_value, as the API revisions that predate that filter do: a
// client must then find its order by created_after and the orders'
// metadata itself.
func WithoutMetadataFilter() Option { return func(o *options) { o.noMetaFilter = true } }

// Product is one line of an order as the server recorded it.
type Product struct {
	URL      string
	Quantity int
}

// Order is what the server recorded of an order it created.
type Order struct {
	ID             string
	IdempotencyKey string
	// Status is the order's status on the server's clock when Orders was
	// called.
	Status    string
	MaxPrice  int64
	PONumber  string
	Metadata  map[string]any
	Products  []Product
	CreatedAt time.Time
}

// Server is a Zinc API test server. All methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL of the server, e.g. http://127.0.0.1:1234: the
	// client's BaseURL.
	URL string

	// Faults inject failures before authentication and without side
	// effects (FailNext: Zinc's error body with the code Zinc uses for
	// that status) and delay every answer (SetLatency, wall time).
	upstreamtest.Faults
	// FailAfterCreate's, DropAfterCreate's and HoldAfterCreate's orders.
	failAfter, dropAfter, holdAfter upstreamtest.Next

	srv       *httptest.Server
	apiKey    string
	hookMeta  bool
	noMeta    bool            // GET /orders ignores the metadata filter
	ctx       context.Context // cancelled by Close: ends webhook deliveries
	cancel    context.CancelFunc
	hooks     sync.WaitGroup // webhook deliveries and the ticker
	hookHTTP  *http.Client
	closeOnce sync.Once

	mu         sync.Mutex
	closed     bool
	clock      upstreamtest.Clock
	timings    Timings
	orders     map[string]*order
	seq        int
	byKey      map[string]string // idempotency key → order id
	created    map[string]int    // idempotency key → orders created
	posts      map[string]int    // idempotency key → POST /orders received
	families   map[string]int    // RateLimitedOnce: orders created per Memocart order
	hookURL    string
	hookSecret string
	hookDup    bool
	hookDrop   bool
	hookDelay  time.Duration
	hooksSent  int
}

// order is one created order.
type order struct {
	seq         int
	id          string
	key         string
	req         createRequest
	created     time.Time
	scenario    scenario
	rateLimited bool
	cancelledAt time.Time
	last        state // what webhooks last reported
}

// tick is how often the server looks for orders that moved, to send their
// webhooks while its clock runs.
const tick = 50 * time.Millisecond

// New starts a server.
func New(opts ...Option) *Server {
	o := options{apiKey: DefaultAPIKey}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	s := &Server{
		apiKey:   o.apiKey,
		hookMeta: o.webhookMetadata,
		noMeta:   o.noMetaFilter,
		ctx:      ctx,
		cancel:   cancel,
		hookHTTP: &http.Client{Timeout: 10 * time.Second},
		clock:    upstreamtest.FrozenAt(now),
		timings:  o.timings.withDefaults(),
		orders:   make(map[string]*order),
		byKey:    make(map[string]string),
		created:  make(map[string]int),
		posts:    make(map[string]int),
		families: make(map[string]int),
	}
	if o.realClock {
		s.clock.Speed = 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.serveCreate)
	mux.HandleFunc("GET /orders", s.serveList)
	mux.HandleFunc("GET /orders/{id}", s.serveGet)
	mux.HandleFunc("POST /orders/{id}/cancel", s.serveCancel)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "Resource not found", nil)
	})
	s.srv = upstreamtest.Serve(s.middleware(mux), o.listener)
	s.URL = s.srv.URL
	s.hooks.Add(1)
	go s.ticker()
	return s
}

// Close stops webhook deliveries, aborts requests in progress and shuts the
// server down.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.hooks.Wait()
	})
}

// APIKey returns the bearer key the server accepts.
func (s *Server) APIKey() string { return s.apiKey }

// Now returns the server's clock reading.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock.Now()
}

// SetNow sets the server's clock to t and freezes it there: it then moves
// only with Advance (or SetAutoClock).
func (s *Server) SetNow(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = upstreamtest.FrozenAt(t)
	s.sweepLocked()
}

// Advance moves the server's clock forward by d, and sends the webhooks of
// whatever changed.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = s.clock.Advanced(d)
	s.sweepLocked()
}

// SetAutoClock makes the clock run at speed times wall time from its
// current reading (1 is real time; 60 makes a minute pass
// every second); speed <= 0 freezes it.
func (s *Server) SetAutoClock(speed float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = s.clock.Running(speed)
}

// SetTimings replaces the timings; zero fields take DefaultTimings'. Orders
// already created follow the new timings too.
func (s *Server) SetTimings(t Timings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timings = t.withDefaults()
	s.sweepLocked()
}

// RateLimitNext makes the next n requests answer 429 rate_limit_exceeded
// with Retry-After: 1.
func (s *Server) RateLimitNext(n int) { s.Faults.RateLimitNext(n, time.Second) }

// FailAfterCreate makes the next n order creations create the order, then
// answer 500 internal_error instead of 201: the client cannot tell the
// order exists.
func (s *Server) FailAfterCreate(n int) { s.failAfter.Arm(n) }

// DropAfterCreate makes the next n order creations create the order, then
// cut the connection without answering.
func (s *Server) DropAfterCreate(n int) { s.dropAfter.Arm(n) }

// HoldAfterCreate makes the next n order creations create the order, then
// hold the answer until the client gives up (or the server closes), and
// cut the connection: the window in which a caller that dies has bought
// without knowing it. Tests kill the caller inside it.
func (s *Server) HoldAfterCreate(n int) { s.holdAfter.Arm(n) }

// OrdersCreated returns how many orders the server created under the
// idempotency key.
func (s *Server) OrdersCreated(idempotencyKey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[idempotencyKey]
}

// CreateRequests returns how many POST /orders named the idempotency key,
// whatever they were answered.
func (s *Server) CreateRequests(idempotencyKey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[idempotencyKey]
}

// Orders returns every order created, oldest first.
func (s *Server) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	out := make([]Order, 0, len(s.orders))
	for _, o := range s.orders {
		rec := Order{
			ID: o.id, IdempotencyKey: o.key, Status: s.stateLocked(o, now).status,
			MaxPrice: o.req.maxPrice, PONumber: o.req.PONumber, Metadata: maps.Clone(o.req.Metadata), CreatedAt: o.created,
		}
		for _, p := range o.req.Products {
			rec.Products = append(rec.Products, Product{URL: p.URL, Quantity: p.quantity()})
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b Order) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// SetWebhook makes the server deliver events to url, signed with secret;
// an empty url stops deliveries.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookURL, s.hookSecret = url, secret
}

// DuplicateWebhooks makes every event be delivered twice.
func (s *Server) DuplicateWebhooks(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookDup = on
}

// DropWebhooks makes the server send no events at all.
func (s *Server) DropWebhooks(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookDrop = on
}

// DelayWebhooks delays every delivery by d (wall time).
func (s *Server) DelayWebhooks(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookDelay = d
}

// WebhooksSent returns how many deliveries the server has attempted (each
// copy of a duplicated event counts), whatever the receiver answered.
func (s *Server) WebhooksSent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooksSent
}

// maxRequestBody caps what the server reads of a request.
const maxRequestBody = 1 << 20

// middleware applies latency, counts creation requests per key, injects
// failures and checks the key, in that order.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !upstreamtest.Wait(r, nil, s.Latency()) {
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/orders" {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var peek struct {
				Key string `json:"idempotency_key"`
			}
			if json.Unmarshal(body, &peek) == nil && peek.Key != "" {
				s.mu.Lock()
				s.posts[peek.Key]++
				s.mu.Unlock()
			}
		}
		if status := s.Take().Status; status != 0 {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			code := codeFor(status)
			writeError(w, status, code, "Injected by zinctest: "+code, nil)
			return
		}
		auth := r.Header.Get("Authorization")
		key, ok := strings.CutPrefix(auth, "Bearer ")
		switch {
		case auth == "":
			writeError(w, http.StatusUnauthorized, "unauthorized", "Authentication is required for this action", nil)
			return
		case !ok || key != s.apiKey:
			writeError(w, http.StatusUnauthorized, "invalid_token", "The provided API token is not valid", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// codeFor returns the error code Zinc answers a status with.
func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusPaymentRequired:
		return "insufficient_funds"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "already_exists"
	case http.StatusUnprocessableEntity:
		return "validation_error"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case http.StatusBadGateway:
		return "external_service_error"
	case http.StatusServiceUnavailable:
		return "service_unavailable"
	}
	if status >= 500 {
		return "internal_error"
	}
	return "bad_request"
}

type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"`
}

// writeError writes Zinc's error body; details nil is sent as null.
func writeError(w http.ResponseWriter, status int, code, message string, details any) {
	upstreamtest.WriteJSON(w, status, errorBody{Error: errorFields{Code: code, Message: message, Details: details}})
}

// createRequest is the body of POST /orders as the server reads it.
type createRequest struct {
	Products        []productIn     `json:"products"`
	MaxPrice        json.RawMessage `json:"max_price"`
	ShippingAddress *address        `json:"shipping_address"`
	IdempotencyKey  *string         `json:"idempotency_key"`
	Metadata        map[string]any  `json:"metadata"`
	PONumber        string          `json:"po_number"`
	HandlingDaysMax *int            `json:"handling_days_max"`
	IsGift          bool            `json:"is_gift"`
	GiftMessage     string          `json:"gift_message"`

	maxPrice int64 // MaxPrice, validated
}

type productIn struct {
	URL         string    `json:"url"`
	Quantity    *int      `json:"quantity"`
	Variant     []variant `json:"variant,omitempty"`
	ConditionIn []string  `json:"condition_in,omitempty"`
}

func (p productIn) quantity() int {
	if p.Quantity == nil {
		return 1
	}
	return *p.Quantity
}

type variant struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

type address struct {
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name"`
	AddressLine1 string `json:"address_line1"`
	AddressLine2 string `json:"address_line2,omitempty"`
	City         string `json:"city"`
	State        string `json:"state,omitempty"`
	PostalCode   string `json:"postal_code"`
	PhoneNumber  string `json:"phone_number"`
	Country      string `json:"country"`
}

var (
	positiveInteger = regexp.MustCompile(`^[1-9][0-9]*$`)
	alpha2          = regexp.MustCompile(`^[A-Za-z]{2}$`)
	usZIP           = regexp.MustCompile(`^[0-9]{5}(?:-[0-9]{4})?$`)
)

// validate checks the request as Zinc documents; it returns the error
// code and the offending fields, or "" when the request is good.
func (req *createRequest) validate() (string, map[string]string) {
	bad := map[string]string{}
	if len(req.Products) == 0 {
		bad["products"] = "At least one product is required"
	}
	for i, p := range req.Products {
		if strings.TrimSpace(p.URL) == "" {
			bad[fmt.Sprintf("products[%d].url", i)] = "A product URL is required"
		}
		if q := p.quantity(); q < 1 || q > 100 {
			bad[fmt.Sprintf("products[%d].quantity", i)] = "Quantity must be between 1 and 100"
		}
	}
	if n, err := strconv.ParseInt(string(req.MaxPrice), 10, 64); err != nil || !positiveInteger.Match(req.MaxPrice) {
		bad["max_price"] = "max_price must be a positive integer number of cents"
	} else {
		req.maxPrice = n
	}
	if req.IdempotencyKey != nil && len(*req.IdempotencyKey) > zinc.MaxIdempotencyKey {
		bad["idempotency_key"] = fmt.Sprintf("idempotency_key must be at most %d characters", zinc.MaxIdempotencyKey)
	}
	if req.ShippingAddress == nil {
		bad["shipping_address"] = "A shipping address is required"
	}
	if len(bad) > 0 {
		return "validation_error", bad
	}
	a := req.ShippingAddress
	for field, v := range map[string]string{
		"first_name": a.FirstName, "last_name": a.LastName, "address_line1": a.AddressLine1,
		"city": a.City, "postal_code": a.PostalCode, "phone_number": a.PhoneNumber,
	} {
		if strings.TrimSpace(v) == "" {
			bad["shipping_address."+field] = field + " is required"
		}
	}
	for field, v := range map[string]string{"address_line1": a.AddressLine1, "address_line2": a.AddressLine2} {
		if utf8.RuneCountInString(v) > 60 {
			bad["shipping_address."+field] = field + " must be at most 60 characters"
		}
	}
	if a.Country == "" {
		a.Country = "US"
	}
	if !alpha2.MatchString(a.Country) {
		bad["shipping_address.country"] = "country must be an ISO 3166-1 alpha-2 code"
	}
	if strings.EqualFold(a.Country, "US") {
		if strings.TrimSpace(a.State) == "" {
			bad["shipping_address.state"] = "state is required for US addresses"
		}
		if a.PostalCode != "" && !usZIP.MatchString(a.PostalCode) {
			bad["shipping_address.postal_code"] = "postal_code must be a 5-digit ZIP code, optionally +4"
		}
	}
	if len(bad) > 0 {
		return "invalid_shipping_address", bad
	}
	return "", nil
}

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusBadRequest, "bad_request", "The request body must be JSON (Content-Type: application/json)", nil)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return
	}
	var req createRequest
	if err := json.Unmarshal(exactFields(raw, reflect.TypeFor[createRequest]()), &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "The request body is not valid JSON", nil)
		return
	}
	if code, bad := req.validate(); code != "" {
		msg := "Invalid request parameters"
		if code == "invalid_shipping_address" {
			msg = "The shipping address failed validation"
		}
		writeError(w, http.StatusUnprocessableEntity, code, msg, bad)
		return
	}
	urls := make([]string, len(req.Products))
	for i, p := range req.Products {
		urls[i] = p.URL
	}
	sc := scenarioOf(urls)
	if sc == rejected {
		writeError(w, http.StatusUnprocessableEntity, "out_of_stock", "Product is not currently available for purchase",
			map[string]string{"products[0].url": "out of stock"})
		return
	}
	key := newID()
	if req.IdempotencyKey != nil && *req.IdempotencyKey != "" {
		key = *req.IdempotencyKey
	}

	s.mu.Lock()
	if _, used := s.byKey[key]; used {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "already_exists", fmt.Sprintf("Order with idempotency key '%s' already exists", key),
			map[string]string{"resource": "Order", "identifier": key})
		return
	}
	now := s.clock.Now()
	s.seq++
	o := &order{seq: s.seq, id: newID(), key: key, req: req, created: now, scenario: sc}
	if sc == rateLimitedOnce {
		fam := family(req, key)
		o.rateLimited = s.families[fam] == 0
		s.families[fam]++
	}
	s.orders[o.id], s.byKey[key] = o, o.id
	s.created[key]++
	o.last = s.stateLocked(o, now)
	s.emitLocked(o, "order.started", o.last, nil)
	body := s.renderLocked(o, now)
	// One fault at most, in this order.
	failAfter := s.failAfter.Take()
	dropAfter := !failAfter && s.dropAfter.Take()
	holdAfter := !failAfter && !dropAfter && s.holdAfter.Take()
	s.mu.Unlock()

	if holdAfter {
		select {
		case <-r.Context().Done():
		case <-s.ctx.Done():
		}
		panic(http.ErrAbortHandler)
	}
	switch {
	case failAfter:
		writeError(w, http.StatusInternalServerError, "internal_error", "Something went wrong with our internal systems", nil)
	case dropAfter:
		panic(http.ErrAbortHandler)
	default:
		upstreamtest.WriteJSON(w, http.StatusCreated, body)
	}
}

// exactFields returns raw with only the keys Zinc's request model reads,
// in every object that decodes into a struct of type t at any depth: keys
// are matched exactly, case included, and others dropped. encoding/json
// alone matches keys case-insensitively, so it would take "Max_Price" for
// max_price, where Zinc sees no max_price and refuses the order. Free-form
// values (metadata) are kept whole; what is not JSON is returned as it
// is, for the decoder to refuse.
func exactFields(raw json.RawMessage, t reflect.Type) json.RawMessage {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return raw
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		out := make(map[string]json.RawMessage, len(obj))
		for k, v := range obj {
			if ft, ok := fields[k]; ok {
				out[k] = exactFields(v, ft)
			}
		}
		if b, err := json.Marshal(out); err == nil {
			return b
		}
	case t.Kind() == reflect.Slice && t != reflect.TypeFor[json.RawMessage]():
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil || elems == nil {
			return raw
		}
		for i := range elems {
			elems[i] = exactFields(elems[i], t.Elem())
		}
		if b, err := json.Marshal(elems); err == nil {
			return b
		}
	}
	return raw
}

// family names the Memocart order an order was placed for, for
// RateLimitedOnce.
func family(req createRequest, key string) string {
	if id, ok := req.Metadata[zinc.MetaOrderID].(string); ok && id != "" {
		return "meta:" + id
	}
	if req.PONumber != "" {
		return "po:" + req.PONumber
	}
	return "key:" + key
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o, ok := s.orders[r.PathValue("id")]
	var body orderJSON
	if ok {
		body = s.renderLocked(o, s.clock.Now())
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "Order not found", nil)
		return
	}
	upstreamtest.WriteJSON(w, http.StatusOK, body)
}

func (s *Server) serveCancel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o, ok := s.orders[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found", "Order not found", nil)
		return
	}
	now := s.clock.Now()
	if s.stateLocked(o, now).status != zinc.StatusPending {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "order_not_cancellable", "Order cannot be cancelled in its current status", nil)
		return
	}
	o.cancelledAt = now
	s.sweepLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

type listJSON struct {
	Orders []orderJSON `json:"orders"`
	Total  int         `json:"total"`
	Limit  int         `json:"limit"`
	Offset int         `json:"offset"`
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, value := q.Get("metadata_key"), q.Get("metadata_value")
	if s.noMeta {
		key, value = "", ""
	}
	var after, before time.Time
	for name, dst := range map[string]*time.Time{"created_after": &after, "created_before": &before} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, http.StatusUnprocessableEntity, "validation_error", "Invalid request parameters",
					map[string]string{name: "must be an ISO 8601 date-time"})
				return
			}
			*dst = t
		}
	}
	if (key == "") != (value == "") {
		writeError(w, http.StatusUnprocessableEntity, "validation_error", "metadata_key and metadata_value go together",
			map[string]string{"metadata_key": "must be sent with metadata_value"})
		return
	}
	limit, offset := 20, 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusUnprocessableEntity, "validation_error", "Invalid request parameters", map[string]string{"limit": "must be 1 to 100"})
			return
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusUnprocessableEntity, "validation_error", "Invalid request parameters", map[string]string{"offset": "must not be negative"})
			return
		}
		offset = n
	}
	s.mu.Lock()
	now := s.clock.Now()
	var match []*order
	for _, o := range s.orders {
		switch {
		case !after.IsZero() && !o.created.After(after):
		case !before.IsZero() && !o.created.Before(before):
		case key == "" || metadataString(o.req.Metadata[key]) == value:
			match = append(match, o)
		}
	}
	slices.SortFunc(match, func(a, b *order) int { return b.seq - a.seq }) // newest first
	out := listJSON{Orders: []orderJSON{}, Total: len(match), Limit: limit, Offset: offset}
	for i := offset; i < len(match) && i < offset+limit; i++ {
		out.Orders = append(out.Orders, s.renderLocked(match[i], now))
	}
	s.mu.Unlock()
	upstreamtest.WriteJSON(w, http.StatusOK, out)
}

// metadataString is a metadata value as the exact-match filter compares it.
func metadataString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return "\x00" // matches nothing
}

// state is an order's state at an instant.
type state struct {
	status    string
	errorType string
	errorText string
	placed    bool // bought at some point
	parcels   []parcelState
	changed   time.Time // when it last changed
}

type parcelState struct {
	carrier, number, zincNumber string
	status                      string
	eta                         string
	created                     time.Time
	checkpoints                 []checkpointState // most recent first
	itemIndex                   int
}

type checkpointState struct {
	at                         time.Time
	status, message            string
	city, region, country, zip string
}

// stateLocked computes o's state at now: a pure function of the order,
// the timings and the clock.
func (s *Server) stateLocked(o *order, now time.Time) state {
	t := s.timings
	if !o.cancelledAt.IsZero() {
		return state{status: zinc.StatusCancelled, changed: o.cancelledAt}
	}
	e := now.Sub(o.created)
	at := func(d time.Duration) time.Time { return o.created.Add(d) }
	switch {
	case e < t.Processing:
		return state{status: zinc.StatusPending, changed: o.created}
	case e < t.Placed:
		return state{status: zinc.StatusInProgress, changed: at(t.Processing)}
	}
	fail := func(errType, text string) state {
		return state{status: zinc.StatusOrderFailed, errorType: errType, errorText: text, changed: at(t.Placed)}
	}
	switch {
	case o.scenario == outOfStock:
		return fail("product_out_of_stock", "The product is out of stock at the retailer")
	case o.scenario == priceAboveMax:
		return fail("max_price_exceeded", "The order total exceeds max_price")
	case o.rateLimited:
		return fail("retailer_rate_limited", "The retailer is rate limiting orders; try again later")
	}
	st := state{status: zinc.StatusOrderPlaced, placed: true, changed: at(t.Placed)}
	if o.scenario == retailerCancels {
		if e >= t.Shipped {
			st.status, st.changed = zinc.StatusCancelledByRetailer, at(t.Shipped)
		}
		return st
	}
	if p, ok := s.parcelLocked(o, 0, e, 0); ok {
		st.parcels = append(st.parcels, p)
	}
	if o.scenario == splitShipment {
		if p, ok := s.parcelLocked(o, 1, e, t.SplitLag); ok {
			st.parcels = append(st.parcels, p)
		}
	}
	for _, p := range st.parcels {
		if c := p.checkpoints[0].at; c.After(st.changed) {
			st.changed = c
		}
	}
	return st
}

// parcelLocked computes parcel i of o, elapsed e after creation, running
// lag behind the first; ok is false before it exists.
func (s *Server) parcelLocked(o *order, i int, e, lag time.Duration) (parcelState, bool) {
	t := s.timings
	if e < t.Shipped+lag {
		return parcelState{}, false
	}
	at := func(d time.Duration) time.Time { return o.created.Add(d + lag).UTC() }
	a := o.req.ShippingAddress
	p := parcelState{
		carrier: "ups", number: upsNumber(o.id, i), zincNumber: zincNumber(o.id, i),
		status: "pending", eta: at(t.Delivered).Format(time.DateOnly), created: at(t.Shipped),
		itemIndex: min(i, len(o.req.Products)-1),
	}
	origin := checkpointState{city: "Louisville", region: "KY", country: "US", zip: "40209"}
	if i == 1 {
		p.carrier, p.number = "fedex", fedexNumber(o.id, i)
		origin = checkpointState{city: "Memphis", region: "TN", country: "US", zip: "38118"}
	}
	add := func(d time.Duration, status, message string, where checkpointState) {
		where.at, where.status, where.message = at(d), status, message
		p.checkpoints = append([]checkpointState{where}, p.checkpoints...)
	}
	add(t.Shipped, "pending", "Shipping label created", origin)
	if e >= t.InTransit+lag {
		p.status = "in_transit"
		add(t.InTransit, "in_transit", "Picked up by the carrier", origin)
	}
	mid := t.InTransit + (t.Delivered-t.InTransit)/2
	if e >= mid+lag {
		add(mid, "in_transit", "Arrived at the destination facility", checkpointState{city: a.City, region: a.State, country: strings.ToUpper(a.Country)})
	}
	if e >= t.Delivered+lag {
		dest := checkpointState{city: a.City, region: a.State, country: strings.ToUpper(a.Country), zip: a.PostalCode}
		if o.scenario == undeliverable {
			p.status = "undeliverable"
			add(t.Delivered, "undeliverable", "Delivery failed: address not found; returning to sender", dest)
		} else {
			p.status = "delivered"
			add(t.Delivered, "delivered", "Delivered", dest)
		}
	}
	return p, true
}

// Deterministic made-up numbers, from a hash of the order id.
func digits(seed string, n int) string {
	sum := sha256.Sum256([]byte(seed))
	v := binary.BigEndian.Uint64(sum[:8])
	return fmt.Sprintf("%0*d", n, v%pow10(n))
}

func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

func upsNumber(id string, i int) string {
	return "1Z999AA1" + digits(fmt.Sprintf("ups %s %d", id, i), 10)
}

func fedexNumber(id string, i int) string { return digits(fmt.Sprintf("fedex %s %d", id, i), 12) }

func zincNumber(id string, i int) string {
	return "ZPY" + digits(fmt.Sprintf("zinc %s %d", id, i), 12) + "YQ"
}

func merchantOrderID(id string, i int) string {
	d := digits(fmt.Sprintf("merchant %s %d", id, i), 14)
	return "112-" + d[:7] + "-" + d[7:]
}

// The wire shapes of Zinc's order object.
type orderJSON struct {
	ID                    string         `json:"id"`
	Status                string         `json:"status"`
	MaxPrice              int64          `json:"max_price"`
	Attempts              int            `json:"attempts"`
	Items                 []itemJSON     `json:"items"`
	ShippingAddress       address        `json:"shipping_address"`
	Metadata              map[string]any `json:"metadata"`
	PONumber              *string        `json:"po_number"`
	HandlingDaysMax       *int           `json:"handling_days_max"`
	IsGift                bool           `json:"is_gift"`
	RetailerCredentialsID *string        `json:"retailer_credentials_id"`
	JobResult             *jobResultJSON `json:"job_result"`
	MerchantOrderIDs      []string       `json:"merchant_order_ids"`
	TrackingNumbers       []trackingJSON `json:"tracking_numbers"`
	CreatedAt             string         `json:"created_at"`
	UpdatedAt             string         `json:"updated_at"`
}

type itemJSON struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Quantity    int       `json:"quantity"`
	Variant     []variant `json:"variant"`
	ConditionIn []string  `json:"condition_in"`
	Status      string    `json:"status"`
	CreatedAt   string    `json:"created_at"`
	UpdatedAt   string    `json:"updated_at"`
}

type jobResultJSON struct {
	Success           bool                `json:"success"`
	Error             *string             `json:"error"`
	ErrorType         *string             `json:"error_type"`
	EstimatedDelivery *string             `json:"estimated_delivery"`
	PriceComponents   *priceJSON          `json:"price_components"`
	MerchantOrderIDs  []map[string]string `json:"merchant_order_ids"`
}

type priceJSON struct {
	Subtotal              int64  `json:"subtotal"`
	Tax                   int64  `json:"tax"`
	Shipping              int64  `json:"shipping"`
	Discount              int64  `json:"discount"`
	Fees                  int64  `json:"fees"`
	Total                 int64  `json:"total"`
	Currency              string `json:"currency"`
	PaymentCurrency       string `json:"payment_currency"`
	ConvertedPaymentTotal int64  `json:"converted_payment_total"`
	BreakdownRecorded     bool   `json:"breakdown_recorded"`
}

type trackingJSON struct {
	ID                    string           `json:"id"`
	Carrier               string           `json:"carrier"`
	TrackingNumber        string           `json:"tracking_number"`
	ZincTrackingNumber    string           `json:"zinc_tracking_number"`
	ZincTrackingURL       string           `json:"zinc_tracking_url"`
	Status                string           `json:"status"`
	EstimatedDeliveryDate *string          `json:"estimated_delivery_date"`
	Checkpoints           []checkpointJSON `json:"checkpoints"`
	OrderItemIDs          []string         `json:"order_item_ids"`
	CreatedAt             string           `json:"created_at"`
}

type checkpointJSON struct {
	CheckpointTime string  `json:"checkpoint_time"`
	Status         string  `json:"status"`
	Message        string  `json:"message"`
	City           *string `json:"city"`
	State          *string `json:"state"`
	Country        *string `json:"country"`
	Zip            *string `json:"zip"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// price is what the retailer charges a bought order: 90% of max_price,
// split into subtotal, shipping and tax that add up to it.
func price(total int64) *priceJSON {
	sub, ship := total*85/100, total*5/100
	return &priceJSON{
		Subtotal: sub, Shipping: ship, Tax: total - sub - ship, Total: total,
		Currency: "USD", PaymentCurrency: "USD", ConvertedPaymentTotal: total, BreakdownRecorded: true,
	}
}

// renderLocked is o's order object at now.
func (s *Server) renderLocked(o *order, now time.Time) orderJSON {
	st := s.stateLocked(o, now)
	a := *o.req.ShippingAddress
	if a.Country == "" {
		a.Country = "US"
	}
	out := orderJSON{
		ID: o.id, Status: st.status, MaxPrice: o.req.maxPrice, ShippingAddress: a,
		Metadata: maps.Clone(o.req.Metadata), PONumber: optional(o.req.PONumber), HandlingDaysMax: o.req.HandlingDaysMax,
		IsGift: o.req.IsGift, MerchantOrderIDs: []string{}, TrackingNumbers: []trackingJSON{},
		CreatedAt: stamp(o.created), UpdatedAt: stamp(st.changed),
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	itemStatus := map[string]string{
		zinc.StatusPending: "pending", zinc.StatusInProgress: "processing", zinc.StatusOrderPlaced: "ordered",
		zinc.StatusOrderFailed: "failed", zinc.StatusCancelled: "cancelled", zinc.StatusCancelledByRetailer: "cancelled",
	}[st.status]
	if len(st.parcels) > 0 {
		itemStatus = "shipped"
		if allDelivered(st.parcels) {
			itemStatus = "delivered"
		}
	}
	itemIDs := make([]string, len(o.req.Products))
	for i, p := range o.req.Products {
		itemIDs[i] = uuidFrom(fmt.Sprintf("item %s %d", o.id, i))
		out.Items = append(out.Items, itemJSON{
			ID: itemIDs[i], URL: p.URL, Quantity: p.quantity(), Variant: p.Variant, ConditionIn: p.ConditionIn,
			Status: itemStatus, CreatedAt: stamp(o.created), UpdatedAt: stamp(st.changed),
		})
	}
	switch {
	case st.status == zinc.StatusOrderFailed:
		out.Attempts = 1
		jr := &jobResultJSON{Error: optional(st.errorText), ErrorType: optional(st.errorType), MerchantOrderIDs: []map[string]string{}}
		if st.errorType == "max_price_exceeded" {
			jr.PriceComponents = price(o.req.maxPrice + o.req.maxPrice/10 + 1)
		}
		out.JobResult = jr
	case st.placed:
		out.Attempts = 1
		n := 1
		if o.scenario == splitShipment {
			n = 2
		}
		jr := &jobResultJSON{
			Success: true, PriceComponents: price(o.req.maxPrice * 9 / 10),
			EstimatedDelivery: optional(o.created.Add(s.timings.Delivered).UTC().Format(time.DateOnly)),
		}
		for i := range n {
			id := merchantOrderID(o.id, i)
			out.MerchantOrderIDs = append(out.MerchantOrderIDs, id)
			jr.MerchantOrderIDs = append(jr.MerchantOrderIDs, map[string]string{"merchant": "amazon", "merchant_order_id": id})
		}
		out.JobResult = jr
	}
	for i, p := range st.parcels {
		tj := trackingJSON{
			ID: uuidFrom(fmt.Sprintf("tracking %s %d", o.id, i)), Carrier: p.carrier, TrackingNumber: p.number,
			ZincTrackingNumber: p.zincNumber, ZincTrackingURL: "https://t.17track.net/en#nums=" + p.zincNumber,
			Status: p.status, EstimatedDeliveryDate: optional(p.eta), OrderItemIDs: []string{itemIDs[p.itemIndex]},
			CreatedAt: stamp(p.created),
		}
		for _, c := range p.checkpoints {
			tj.Checkpoints = append(tj.Checkpoints, checkpointJSON{
				CheckpointTime: stamp(c.at), Status: c.status, Message: c.message,
				City: optional(c.city), State: optional(c.region), Country: optional(c.country), Zip: optional(c.zip),
			})
		}
		out.TrackingNumbers = append(out.TrackingNumbers, tj)
	}
	return out
}

func allDelivered(ps []parcelState) bool {
	if len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		if p.status != "delivered" {
			return false
		}
	}
	return true
}

// ticker sends the webhooks of orders that move while the clock runs.
func (s *Server) ticker() {
	defer s.hooks.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			s.sweepLocked()
			s.mu.Unlock()
		}
	}
}

// sweepLocked compares every order's state with what webhooks last
// reported, and sends the events of the differences.
func (s *Server) sweepLocked() {
	now := s.clock.Now()
	for _, o := range s.orders {
		cur := s.stateLocked(o, now)
		prev := o.last
		o.last = cur
		if cur.status != prev.status {
			switch cur.status {
			case zinc.StatusOrderPlaced:
				s.emitLocked(o, "order.placed", cur, map[string]any{"price_components": price(o.req.maxPrice * 9 / 10)})
			case zinc.StatusOrderFailed:
				s.emitLocked(o, "order.failed", cur, map[string]any{"error_type": cur.errorType, "error": cur.errorText})
			case zinc.StatusCancelled, zinc.StatusCancelledByRetailer:
				s.emitLocked(o, "order.cancelled", cur, nil)
			}
		}
		switch {
		case len(cur.parcels) > len(prev.parcels):
			s.emitLocked(o, "order.tracking_received", cur, map[string]any{"tracking_numbers": trackingSummary(cur.parcels)})
		case parcelsMoved(prev.parcels, cur.parcels):
			s.emitLocked(o, "order.tracking_updated", cur, map[string]any{"tracking_numbers": trackingSummary(cur.parcels)})
		}
		if allDelivered(cur.parcels) && !allDelivered(prev.parcels) {
			s.emitLocked(o, "order.delivered", cur, nil)
		}
	}
}

func parcelsMoved(prev, cur []parcelState) bool {
	for i := range min(len(prev), len(cur)) {
		if prev[i].status != cur[i].status || len(prev[i].checkpoints) != len(cur[i].checkpoints) {
			return true
		}
	}
	return false
}

func trackingSummary(ps []parcelState) []map[string]string {
	out := make([]map[string]string, len(ps))
	for i, p := range ps {
		out[i] = map[string]string{"carrier": p.carrier, "tracking_number": p.number, "status": p.status}
	}
	return out
}

// webhookJSON is Zinc's documented webhook payload.
type webhookJSON struct {
	Event     string         `json:"event"`
	OrderID   string         `json:"order_id"`
	Status    string         `json:"status"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// emitLocked sends one event about o, asynchronously.
func (s *Server) emitLocked(o *order, event string, st state, data map[string]any) {
	if s.closed || s.hookURL == "" || s.hookDrop {
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	if s.hookMeta && o.req.Metadata != nil {
		data["metadata"] = maps.Clone(o.req.Metadata)
	}
	body, err := json.Marshal(webhookJSON{
		Event: event, OrderID: o.id, Status: st.status,
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Data: data,
	})
	if err != nil {
		panic(fmt.Sprintf("zinctest: rendering webhook: %v", err))
	}
	header := zinc.SignWebhook(s.hookSecret, body)
	header.Set(zinc.EventHeader, event)
	copies := 1
	if s.hookDup {
		copies = 2
	}
	url, delay := s.hookURL, s.hookDelay
	s.hooks.Add(1)
	go func() {
		defer s.hooks.Done()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
		for range copies {
			s.deliver(url, header, body)
		}
	}()
}

func (s *Server) deliver(url string, header http.Header, body []byte) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header = header.Clone()
	// Counted before sending, so a receiver that got it can rely on the
	// count.
	s.mu.Lock()
	s.hooksSent++
	s.mu.Unlock()
	resp, err := s.hookHTTP.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// newID returns a random UUID (version 4), the form of Zinc's ids.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("zinctest: reading randomness: %v", err))
	}
	return formatUUID(b)
}

// uuidFrom returns a UUID-shaped id derived from seed.
func uuidFrom(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	var b [16]byte
	copy(b[:], sum[:16])
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
