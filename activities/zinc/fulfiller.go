package zinc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// DefaultSchedule is how often the fulfiller advises checking an order
// when Zinc's webhooks do not reach us. Zinc takes 5 to 10 minutes to buy
// and advises a first poll about 7 minutes after creation, then every 3 to
// 5; once bought, tracking only changes when Zinc polls the carrier, a few
// times a day, so checking more often than hourly learns nothing.
var DefaultSchedule = models.PollSchedule{
	First:   7 * time.Minute,
	Pending: 4 * time.Minute,
	Ordered: 30 * time.Minute,
	Shipped: time.Hour,
}

// WebhookSchedule is the schedule when Zinc's signed webhooks reach us:
// each one makes the workflow check the order at once, so once bought the
// checks are only a safety net for a lost webhook, every 6 hours. Each idle
// check costs a timer, an activity and two workflow tasks (issue 24: a
// live order polled hourly in transit cost about 1,400 history events).
// While Zinc is buying, its advised checks stay: the placement's outcome
// decides whether to place again.
var WebhookSchedule = models.PollSchedule{
	First:   DefaultSchedule.First,
	Pending: DefaultSchedule.Pending,
	Ordered: 6 * time.Hour,
	Shipped: 6 * time.Hour,
}

// ScheduleFor is the schedule to check orders on: WebhookSchedule when
// Zinc's webhooks are received (a webhook secret is configured), else
// DefaultSchedule.
func ScheduleFor(webhooks bool) models.PollSchedule {
	if webhooks {
		return WebhookSchedule
	}
	return DefaultSchedule
}

// The metadata keys every order is placed with, so an order found at Zinc
// (in its dashboard, a webhook, a lookup after a crash) names the
// Memocart order and attempt it belongs to.
const (
	MetaOrderID     = "memocart_order_id"
	MetaOrderNumber = "memocart_order_number"
	MetaAttempt     = "attempt"
)

// maxQuantity is the most of one product Zinc buys in one order.
const maxQuantity = 100

// Sentences a client reads when an order is refused before or while
// placing it and no provider failure code says it better.
const (
	msgNotUSD         = "The order can only be bought from the retailer in US dollars."
	msgNoItems        = "The order has no items to buy."
	msgBadItem        = "An item of the order cannot be bought from its product link."
	msgMixedRetailers = "The order's items come from different retailers and cannot be bought in one purchase."
	msgNeedFullName   = "The retailer needs a first and a last name in the shipping address."
	msgLineTooLong    = "A street line of the shipping address is longer than the retailer accepts."
	msgNeedPhone      = "The retailer needs a phone number in the shipping address for the delivery."
	msgNoBudget       = "The order has no budget to buy its items with."
	msgDetailsRefused = "The retailer's checkout refused the order's details."
)

// codeAddressRejected is the models failure code of a refused address.
const codeAddressRejected = "shipping_address_invalid"

// FulfillerConfig configures a Fulfiller.
type FulfillerConfig struct {
	// Client reaches Zinc. Required.
	Client *Client
	// Schedule is how often to advise checking; zero fields take
	// DefaultSchedule's.
	Schedule models.PollSchedule
	// Logger receives what operators must see: account problems, answers
	// that should never happen. Default: discard.
	Logger *slog.Logger
}

// Fulfiller buys live orders through Zinc and reports their progress. It
// keeps no state: Place is idempotent through Zinc's idempotency keys, and
// Check reads Zinc's order. It is safe for concurrent use.
type Fulfiller struct {
	client   *Client
	schedule models.PollSchedule
	log      *slog.Logger
}

// NewFulfiller returns a fulfiller for cfg.
func NewFulfiller(cfg FulfillerConfig) (*Fulfiller, error) {
	if cfg.Client == nil {
		return nil, errors.New("zinc: FulfillerConfig.Client is required")
	}
	s := cfg.Schedule
	for _, d := range []*time.Duration{&s.First, &s.Pending, &s.Ordered, &s.Shipped} {
		if *d < 0 {
			return nil, errors.New("zinc: schedule durations must not be negative")
		}
	}
	if s.First == 0 {
		s.First = DefaultSchedule.First
	}
	if s.Pending == 0 {
		s.Pending = DefaultSchedule.Pending
	}
	if s.Ordered == 0 {
		s.Ordered = DefaultSchedule.Ordered
	}
	if s.Shipped == 0 {
		s.Shipped = DefaultSchedule.Shipped
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Fulfiller{client: cfg.Client, schedule: s, log: cfg.Logger}, nil
}

// Schedule returns the configured schedule.
func (f *Fulfiller) Schedule() models.PollSchedule { return f.schedule }

// Place creates the Zinc order of one attempt at buying o, under the
// idempotency key IdempotencyKey(o.ID, attempt), so a retried activity
// never buys twice: when Zinc answers that the key was used, the order it
// created is looked up and its id returned.
//
// A refusal (an order Zinc or the retailer will never take as it is) is an
// error wrapping models.ErrSourcingFailed with a sentence a client may
// read. Zinc's outages, throttling, timeouts, and problems with Memocart's
// own Zinc account (rejected key, empty wallet) are plain errors: the
// activity retries them until they clear.
func (f *Fulfiller) Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error) {
	log := f.log.With("order_id", o.ID, "attempt", attempt)
	req, err := orderRequest(o, attempt)
	if err != nil {
		if errors.Is(err, models.ErrSourcingFailed) {
			log.Warn("zinc: order refused before placing", "err", err)
		} else {
			log.Error("zinc: order cannot be placed", "err", err)
		}
		return models.Placement{}, err
	}
	log = log.With("idempotency_key", req.IdempotencyKey)
	zo, err := f.client.CreateOrder(ctx, req)
	if err == nil {
		if zo.ID == "" {
			// Retrying finds the order through its key.
			log.Error("zinc: order created without an id")
			return models.Placement{}, fmt.Errorf("zinc: order %s attempt %d: created without an id", o.ID, attempt)
		}
		log.Info("zinc: order placed", "zinc_order_id", zo.ID)
		return models.Placement{Ref: zo.ID, CheckAfter: f.schedule.First}, nil
	}
	var ae *APIError
	if errors.As(err, &ae) && duplicateKey(ae) {
		return f.recoverPlacement(ctx, o, attempt, ae, log)
	}
	return models.Placement{}, placeError(o, attempt, err, log)
}

// IdempotencyKey returns the key of attempt n at buying the order with
// id orderID: the order id for the first, then "<id>-<n>". Attempts after
// the first happen only when the previous one failed without buying.
func IdempotencyKey(orderID string, attempt int) string {
	if attempt == 1 {
		return orderID
	}
	return orderID + "-" + strconv.Itoa(attempt)
}

// duplicateKey reports Zinc's answer to an idempotency key it has seen:
// 409 already_exists. [verify: the documented answer; a replay of the
// original 201 would be handled as a success anyway]
func duplicateKey(ae *APIError) bool {
	return ae.Code == CodeAlreadyExists || (ae.HTTPStatus == http.StatusConflict && ae.Code == "")
}

// recoveryClockMargin widens the window recoverPlacement looks for an
// order in, against clock differences between Zinc and Memocart.
const recoveryClockMargin = time.Hour

// recoverPlacement finds the order Zinc already created for this attempt.
// Zinc's already_exists names the key, not the order, so the order is
// found by the metadata it was placed with. Not finding it (yet) is a
// retryable error: placing again is never an option.
func (f *Fulfiller) recoverPlacement(ctx context.Context, o models.Order, attempt int, ae *APIError, log *slog.Logger) (models.Placement, error) {
	if id := existingOrderID(ae.Details); id != "" {
		log.Info("zinc: order already placed", "zinc_order_id", id)
		return models.Placement{Ref: id, CheckAfter: f.schedule.First}, nil
	}
	var since time.Time
	if !o.CreatedAt.IsZero() {
		// Its Zinc orders were all created after the Memocart order; the
		// margin absorbs a difference between Zinc's clock and ours.
		since = o.CreatedAt.Add(-recoveryClockMargin)
	}
	orders, err := f.client.OrdersByMetadata(ctx, MetaOrderID, o.ID, since)
	if err != nil {
		log.Warn("zinc: order already placed; looking it up failed", "err", err)
		return models.Placement{}, fmt.Errorf("zinc: order %s attempt %d: finding the order of a used idempotency key: %w", o.ID, attempt, err)
	}
	for _, zo := range orders {
		if zo.ID != "" && placedBy(zo, o.ID, attempt) {
			log.Info("zinc: order already placed", "zinc_order_id", zo.ID)
			return models.Placement{Ref: zo.ID, CheckAfter: f.schedule.First}, nil
		}
	}
	log.Error("zinc: idempotency key already used but no order carries its metadata", "listed", len(orders))
	return models.Placement{}, fmt.Errorf("zinc: order %s attempt %d: idempotency key already used, its order not found", o.ID, attempt)
}

// existingOrderID reads an order id from an already_exists answer's
// details, should Zinc ever send one ("identifier" is the key itself, so
// it is not read). [verify]
func existingOrderID(details json.RawMessage) string {
	var d map[string]any
	if json.Unmarshal(details, &d) != nil {
		return ""
	}
	for _, k := range []string{"order_id", "existing_order_id"} {
		if s, ok := d[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// placedBy reports whether zo was placed for attempt of the Memocart order
// orderID, by the metadata Place sets.
func placedBy(zo Order, orderID string, attempt int) bool {
	return metadataEquals(zo.Metadata[MetaOrderID], orderID) &&
		metadataEquals(zo.Metadata[MetaAttempt], strconv.Itoa(attempt))
}

// refusalCodes maps Zinc's synchronous refusals of an order to the models
// failure code whose sentence a client reads.
var refusalCodes = map[string]string{
	"out_of_stock":                   "product_out_of_stock",
	"invalid_variant":                "product_variant_unavailable",
	"url_unreachable":                "invalid_product_url",
	"invalid_shipping_address":       "shipping_address_invalid",
	"shipping_unavailable":           "shipping_unavailable",
	"unsupported_country":            "shipping_unavailable",
	"unsupported_retailer":           "retailer_not_supported",
	"non_us_retailer":                "retailer_not_supported",
	"retailer_country_not_supported": "retailer_not_supported",
	"guest_checkout_not_supported":   "retailer_not_supported",
}

// placeError turns a failed CreateOrder into the error Place returns.
func placeError(o models.Order, attempt int, err error, log *slog.Logger) error {
	wrapped := fmt.Errorf("zinc: placing order %s attempt %d: %w", o.ID, attempt, err)
	var ae *APIError
	if !errors.As(err, &ae) {
		log.Warn("zinc: placing order failed; will retry", "err", err)
		return wrapped
	}
	log = log.With("status", ae.HTTPStatus, "code", ae.Code)
	switch {
	case ae.Transient():
		log.Warn("zinc: placing order failed; will retry", "err", err)
		return wrapped
	case ae.Account():
		log.Error("zinc: our Zinc account cannot place orders; an operator must act", "err", err)
		return wrapped
	}
	if reason, ok := refusalReason(ae); ok {
		if ae.Code == CodeValidationError || ae.Code == CodeBadRequest {
			// Possibly our request, not the order: worth an operator's look.
			log.Error("zinc: order refused as invalid", "err", err)
		} else {
			log.Warn("zinc: order refused", "err", err)
		}
		return fmt.Errorf("zinc: order %s attempt %d refused (%s): %w", o.ID, attempt, ae.Code,
			models.Errorf(models.CodeSourcingFailed, "%s", reason))
	}
	log.Error("zinc: unexpected answer placing order; will retry", "err", err)
	return wrapped
}

// refusalReason returns the client's sentence for a refusal, and false
// when ae is not one.
func refusalReason(ae *APIError) (string, bool) {
	if code, ok := refusalCodes[ae.Code]; ok {
		return models.FulfilmentFailureReason(code), true
	}
	if ae.HTTPStatus != http.StatusBadRequest && ae.HTTPStatus != http.StatusUnprocessableEntity {
		return "", false
	}
	// A validation error naming the address is about the address.
	var d map[string]any
	if json.Unmarshal(ae.Details, &d) == nil {
		for k := range d {
			if strings.HasPrefix(k, "shipping_address") {
				return models.FulfilmentFailureReason(codeAddressRejected), true
			}
		}
	}
	return msgDetailsRefused, true
}

// refuse is a permanent refusal found before asking Zinc.
func refuse(o models.Order, why, reason string) error {
	return fmt.Errorf("zinc: order %s: %s: %w", o.ID, why, models.Errorf(models.CodeSourcingFailed, "%s", reason))
}

// orderRequest builds the request placing attempt at buying o. The order
// was validated when it was created; what is checked again here is what
// Zinc would refuse, so the refusal carries a clearer reason.
func orderRequest(o models.Order, attempt int) (CreateOrderRequest, error) {
	if o.ID == "" || attempt < 1 {
		return CreateOrderRequest{}, fmt.Errorf("zinc: order %q attempt %d: need an order id and an attempt from 1", o.ID, attempt)
	}
	key := IdempotencyKey(o.ID, attempt)
	if len(key) > MaxIdempotencyKey {
		// A bug, not the customer's doing: retried until an operator acts.
		return CreateOrderRequest{}, fmt.Errorf("zinc: order %s attempt %d: idempotency key is %d characters, Zinc takes %d",
			o.ID, attempt, len(key), MaxIdempotencyKey)
	}
	// Policy: never spend more than the customer paid for items, shipping
	// and tax, and max_price is in US cents, so only USD orders are placed.
	if !strings.EqualFold(o.Currency, "USD") {
		return CreateOrderRequest{}, refuse(o, "currency "+o.Currency, msgNotUSD)
	}
	cents := o.SupplierBudget.Shift(2).Floor()
	if !cents.IsPositive() {
		return CreateOrderRequest{}, refuse(o, "no supplier budget", msgNoBudget)
	}
	products, err := orderProducts(o)
	if err != nil {
		return CreateOrderRequest{}, err
	}
	addr, err := orderAddress(o)
	if err != nil {
		return CreateOrderRequest{}, err
	}
	return CreateOrderRequest{
		Products:        products,
		MaxPrice:        cents.IntPart(),
		ShippingAddress: addr,
		IdempotencyKey:  key,
		Metadata: map[string]any{
			MetaOrderID:     o.ID,
			MetaOrderNumber: o.Number,
			MetaAttempt:     attempt,
		},
		PONumber: o.Number,
	}, nil
}

func orderProducts(o models.Order) ([]Product, error) {
	if len(o.Items) == 0 {
		return nil, refuse(o, "no items", msgNoItems)
	}
	products := make([]Product, 0, len(o.Items))
	for i, it := range o.Items {
		u := strings.TrimSpace(it.ProductURL)
		switch {
		case u == "" || it.Quantity < 1:
			return nil, refuse(o, fmt.Sprintf("item %d has no link or quantity", i), msgBadItem)
		case it.Quantity > maxQuantity:
			return nil, refuse(o, fmt.Sprintf("item %d: quantity %d", i, it.Quantity), models.FulfilmentFailureReason("quantity_limit_exceeded"))
		case it.Marketplace != "" && o.Items[0].Marketplace != "" && it.Marketplace != o.Items[0].Marketplace:
			// Zinc buys one order from one retailer.
			return nil, refuse(o, "items from several marketplaces", msgMixedRetailers)
		}
		if it.Marketplace == models.MarketplaceEbay && it.Variation != "" {
			u = withVariation(u, it.Variation)
		}
		products = append(products, Product{URL: u, Quantity: it.Quantity})
	}
	return products, nil
}

// withVariation makes sure an eBay link names its variation (?var=): the
// cart's links already do; a link without it would buy whatever variation
// the listing opens on.
func withVariation(link, variation string) string {
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("var") != "" {
		return link
	}
	q := u.Query()
	q.Set("var", variation)
	u.RawQuery = q.Encode()
	return u.String()
}

func orderAddress(o models.Order) (Address, error) {
	a := o.Address
	first, last, ok := models.SplitName(a.Name)
	if !ok {
		return Address{}, refuse(o, "one-word name", msgNeedFullName)
	}
	if utf8.RuneCountInString(a.Line1) > models.MaxAddressLine || utf8.RuneCountInString(a.Line2) > models.MaxAddressLine {
		return Address{}, refuse(o, "address line too long", msgLineTooLong)
	}
	if strings.TrimSpace(a.Phone) == "" {
		return Address{}, refuse(o, "no phone number", msgNeedPhone)
	}
	country := strings.ToUpper(strings.TrimSpace(a.Country))
	if len(country) != 2 {
		return Address{}, refuse(o, "country is not an alpha-2 code", models.FulfilmentFailureReason(codeAddressRejected))
	}
	return Address{
		FirstName:    first,
		LastName:     last,
		AddressLine1: a.Line1,
		AddressLine2: a.Line2,
		City:         a.City,
		State:        a.Region,
		PostalCode:   a.PostalCode,
		PhoneNumber:  a.Phone,
		Country:      country,
	}, nil
}

// Check reads the order's state at Zinc. Every failure is retryable: an
// order Memocart placed cannot stop existing, so a 404 is a bug or Zinc's
// trouble, logged for operators, never the customer's failure.
func (f *Fulfiller) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	log := f.log.With("order_id", o.ID, "zinc_order_id", ref)
	zo, err := f.client.Order(ctx, ref)
	if err != nil {
		return models.Fulfilment{}, checkError(o, ref, err, log)
	}
	if id, ok := zo.Metadata[MetaOrderID].(string); ok && id != o.ID {
		log.Error("zinc: the order belongs to another Memocart order", "metadata_order_id", id)
		return models.Fulfilment{}, fmt.Errorf("zinc: order %s: Zinc order %s was placed for order %s", o.ID, ref, id)
	}
	snap := fulfilment(zo)
	if snap.Ref == "" {
		snap.Ref = ref
	}
	if !knownStatuses[zo.Status] {
		log.Warn("zinc: unknown order status, taken as still buying", "status", zo.Status)
	}
	if snap.Stage == models.FulfilmentFailed && accountErrorTypes[snap.FailureCode] {
		log.Error("zinc: purchase failed on the buying account; an operator should look", "error_type", snap.FailureCode)
	}
	return snap, nil
}

func checkError(o models.Order, ref string, err error, log *slog.Logger) error {
	wrapped := fmt.Errorf("zinc: checking order %s (Zinc %s): %w", o.ID, ref, err)
	var ae *APIError
	switch {
	case !errors.As(err, &ae) || ae.Transient():
		log.Warn("zinc: checking order failed; will retry", "err", err)
	case ae.HTTPStatus == http.StatusNotFound:
		log.Error("zinc: our order is unknown to Zinc", "err", err)
	case ae.Account():
		log.Error("zinc: our Zinc account cannot read orders; an operator must act", "status", ae.HTTPStatus, "code", ae.Code)
	default:
		log.Error("zinc: unexpected answer checking order; will retry", "status", ae.HTTPStatus, "code", ae.Code, "err", err)
	}
	return wrapped
}

var knownStatuses = map[string]bool{
	StatusPending: true, StatusInProgress: true, StatusOrderPlaced: true,
	StatusOrderFailed: true, StatusCancelled: true, StatusCancelledByRetailer: true,
}

// retryableErrorTypes are the purchase failures after which nothing was
// bought and a new attempt may succeed: the retailer was throttling or
// down.
var retryableErrorTypes = map[string]bool{
	"retailer_rate_limited": true,
	"retailer_unavailable":  true,
}

// accountErrorTypes are purchase failures of the buying account, worth an
// operator's attention.
var accountErrorTypes = map[string]bool{
	"payment_declined": true, "payment_method_invalid": true, "payment_failed": true,
	"login_failed": true, "session_expired": true, "account_locked": true,
	"account_verification_required": true,
}

// fulfilment maps a Zinc order to the snapshot the store keeps. It is a
// pure function of the order. An unknown status is taken as still being
// bought: the order is checked again rather than failed on a word.
func fulfilment(zo Order) models.Fulfilment {
	f := models.Fulfilment{Ref: zo.ID, ProviderStatus: zo.Status, Stage: models.FulfilmentPending}
	var jr JobResult
	if zo.JobResult != nil {
		jr = *zo.JobResult
	}
	switch zo.Status {
	case StatusOrderPlaced:
		f.Stage = models.FulfilmentPlaced
	case StatusOrderFailed:
		f.Stage = models.FulfilmentFailed
		f.FailureCode = jr.ErrorType
		f.Retryable = retryableErrorTypes[jr.ErrorType]
	case StatusCancelled, StatusCancelledByRetailer:
		f.Stage = models.FulfilmentFailed
		f.FailureCode = zo.Status
	}
	if f.Stage == models.FulfilmentFailed {
		f.FailureReason = models.FulfilmentFailureReason(f.FailureCode)
	}
	f.MerchantOrderIDs = merchantOrderIDs(zo.MerchantOrderIDs)
	if len(f.MerchantOrderIDs) == 0 {
		f.MerchantOrderIDs = merchantOrderIDs(jr.MerchantOrderIDs)
	}
	f.Price = supplierPrice(jr.PriceComponents)
	for _, t := range zo.TrackingNumbers {
		f.Parcels = append(f.Parcels, parcel(t))
	}
	return f
}

// merchantOrderIDs reads the retailer's order numbers: strings in the
// current API, objects ({"merchant_order_id": ...}) in job results and
// older answers.
func merchantOrderIDs(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var ids []string
	if json.Unmarshal(raw, &ids) != nil {
		var objs []map[string]any
		if json.Unmarshal(raw, &objs) != nil {
			return nil
		}
		for _, o := range objs {
			s, _ := o["merchant_order_id"].(string)
			ids = append(ids, s)
		}
	}
	ids = slices.DeleteFunc(ids, func(s string) bool { return s == "" })
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// supplierPrice converts Zinc's cents to money; nil without a total.
func supplierPrice(pc *PriceComponents) *models.SupplierPrice {
	if pc == nil || pc.Total == nil {
		return nil
	}
	dollars := func(c *decimal.Decimal) decimal.Decimal {
		if c == nil {
			return decimal.Zero
		}
		return c.Shift(-2)
	}
	p := &models.SupplierPrice{
		Currency:  strings.ToUpper(pc.Currency),
		Total:     dollars(pc.Total),
		Breakdown: pc.BreakdownRecorded == nil || *pc.BreakdownRecorded,
	}
	if p.Currency == "" {
		p.Currency = "USD"
	}
	if p.Breakdown {
		p.Subtotal, p.Tax, p.Shipping = dollars(pc.Subtotal), dollars(pc.Tax), dollars(pc.Shipping)
		p.Discount, p.Fees = dollars(pc.Discount), dollars(pc.Fees)
	}
	return p
}

// parcelStatuses maps Zinc's tracking statuses; anything else is pending,
// which keeps the order being checked.
var parcelStatuses = map[string]models.ParcelStatus{
	"pending":       models.ParcelPending,
	"in_transit":    models.ParcelInTransit,
	"delivered":     models.ParcelDelivered,
	"undeliverable": models.ParcelUndeliverable,
}

func parcel(t TrackingNumber) models.Parcel {
	status, ok := parcelStatuses[t.Status]
	if !ok {
		status = models.ParcelPending
	}
	p := models.Parcel{
		Carrier:           t.Carrier,
		TrackingNumber:    t.TrackingNumber,
		TrackingURL:       t.ZincTrackingURL,
		Status:            status,
		EstimatedDelivery: t.EstimatedDeliveryDate,
	}
	for _, c := range t.Checkpoints {
		p.Checkpoints = append(p.Checkpoints, models.Checkpoint{
			At:      parseTime(c.CheckpointTime),
			Status:  c.Status,
			Message: c.Message,
			City:    c.City,
			State:   c.State,
			Country: c.Country,
			Zip:     c.Zip,
		})
	}
	// Zinc lists the most recent first; sorting keeps that promise for
	// the store whatever the order on the wire.
	slices.SortStableFunc(p.Checkpoints, func(a, b models.Checkpoint) int { return b.At.Compare(a.At) })
	return p
}

// timeLayouts are the forms Zinc's times are read in: RFC 3339, and the
// same without a zone (Python's naive datetimes), taken as UTC. [verify]
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// parseTime reads a Zinc time in UTC; zero when it cannot.
func parseTime(s string) time.Time {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
