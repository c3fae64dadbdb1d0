package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
)

// OrderWorkflows drives the Temporal workflow that carries each order: the
// order use cases' part (checkout.OrderWorkflows), and the buying
// provider's hints.
type OrderWorkflows interface {
	checkout.OrderWorkflows
	// FulfilmentUpdated hands a buying provider's hint to the order's
	// workflow, which then checks the order with the provider. It returns
	// models.ErrOrderClosed when the workflow has finished.
	FulfilmentUpdated(ctx context.Context, orderID string, ev models.FulfilmentEvent) error
}

// TestPayments is the sandbox chain the test helpers pay through
// (checkout.TestPayments).
type TestPayments = checkout.TestPayments

type orderRequest struct {
	CartID          *string         `json:"cart_id"`
	CustomerEmail   *string         `json:"customer_email"`
	PaymentAsset    *string         `json:"payment_asset"`
	ShippingAddress *addressRequest `json:"shipping_address"`
	// Metadata is merged over the cart's (models.MergeMetadata).
	Metadata map[string]string `json:"metadata"`
	// RefundDestination is where money owed back goes; optional.
	RefundDestination *refundDestinationRequest `json:"refund_destination"`
}

type addressRequest struct {
	Name       string `json:"name"`
	Phone      string `json:"phone"`
	Line1      string `json:"line1"`
	Line2      string `json:"line2"`
	City       string `json:"city"`
	Region     string `json:"region"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

// normalized is the validated request; its hash identifies "the same
// request" for retries without an Idempotency-Key.
type normalizedOrder struct {
	CartID  string                 `json:"cart_id"`
	Email   string                 `json:"email"`
	Asset   string                 `json:"asset"`
	Address models.ShippingAddress `json:"address"`
	// Metadata is omitted when empty, so a request without it hashes as
	// it did before metadata existed. Empty values stay: they remove a
	// cart key, so they make another request.
	Metadata map[string]string `json:"metadata,omitempty"`
	// RefundDestination is omitted when not given, for the same reason.
	RefundDestination *models.RefundDestination `json:"refund_destination,omitempty"`
}

func (n normalizedOrder) hash() string {
	b, _ := json.Marshal(n)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (r orderRequest) validate() (normalizedOrder, models.Asset, error) {
	var n normalizedOrder
	if r.CartID == nil || *r.CartID == "" {
		return n, models.Asset{}, required("cart_id")
	}
	if r.CustomerEmail == nil || *r.CustomerEmail == "" {
		return n, models.Asset{}, required("customer_email")
	}
	if r.PaymentAsset == nil || *r.PaymentAsset == "" {
		return n, models.Asset{}, required("payment_asset")
	}
	if r.ShippingAddress == nil {
		return n, models.Asset{}, models.FieldError(models.CodeInvalidAddress, "shipping_address", "shipping_address is required")
	}
	email, err := models.ValidateEmail(*r.CustomerEmail)
	if err != nil {
		return n, models.Asset{}, err
	}
	asset, err := models.LookupAsset(*r.PaymentAsset)
	if err != nil {
		return n, models.Asset{}, err
	}
	a := r.ShippingAddress
	addr, err := models.ValidateAddress(models.ShippingAddress{
		Name: a.Name, Phone: a.Phone, Line1: a.Line1, Line2: a.Line2, City: a.City,
		Region: a.Region, PostalCode: a.PostalCode, Country: a.Country,
	})
	if err != nil {
		return n, models.Asset{}, err
	}
	if err := models.ValidateMetadata(r.Metadata); err != nil {
		return n, models.Asset{}, err
	}
	var dest *models.RefundDestination
	if r.RefundDestination != nil {
		d := r.RefundDestination.model()
		if err := models.ValidateRefundDestination(d); err != nil {
			return n, models.Asset{}, err
		}
		dest = &d
	}
	return normalizedOrder{CartID: *r.CartID, Email: email, Asset: asset.Code, Address: addr, Metadata: r.Metadata, RefundDestination: dest}, asset, nil
}

// createOrder is POST /v1/orders (checkout.CreateOrder): 201 with the new
// order, or 200 with the cart's order made by an earlier request.
func (s *Server) createOrder(c *gin.Context) {
	ctx := c.Request.Context()
	key := mustKey(c)
	var req orderRequest
	if err := decodeJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	norm, asset, err := req.validate()
	if err != nil {
		abort(c, err)
		return
	}
	placed, err := s.deps.Orders.CreateOrder(ctx, checkout.NewOrder{
		AccountID: key.AccountID, Mode: key.Mode, CartID: norm.CartID, Email: norm.Email, Asset: asset,
		Address: norm.Address, Metadata: norm.Metadata, RefundDestination: norm.RefundDestination,
		IdempotencyKey: idempotencyKeyOf(c), RequestHash: norm.hash(),
	})
	var notStarted *checkout.NotStartedError
	if errors.As(err, &notStarted) {
		loggerFrom(c).ErrorContext(ctx, "starting order workflow; the reconciler will retry",
			slog.String("order_id", notStarted.OrderID), slog.Any("error", notStarted.Err))
		abort(c, models.Errorf(models.CodeUnavailable, "The order was saved but could not be started yet; retry the same request"))
		return
	}
	if err != nil {
		abort(c, err)
		return
	}
	status := http.StatusCreated
	if !placed.Created {
		// The cart's order already existed: a retry of the request that
		// made it, with or without an Idempotency-Key (whose own replays
		// are answered before this handler runs, with the first status).
		status = http.StatusOK
		c.Header(headerIdempotentReplayed, "true")
	}
	render(c, status, gin.H{"order": s.newCreatedOrderJSON(placed.Order)})
}

type createdOrderJSON struct {
	ID               string               `json:"id"`
	Number           string               `json:"number"`
	Status           models.OrderStatus   `json:"status"`
	PaymentStatus    models.PaymentStatus `json:"payment_status"`
	Currency         string               `json:"currency"`
	Total            json.Number          `json:"total"`
	PaymentAsset     string               `json:"payment_asset"`
	PaymentAmount    string               `json:"payment_amount"`
	PaymentAddress   string               `json:"payment_address"`
	PaymentMemo      string               `json:"payment_memo"`
	PaymentExpiresAt string               `json:"payment_expires_at"`
	TrackingURL      string               `json:"tracking_url"`
	CreatedAt        string               `json:"created_at"`
	// Beyond the contract: what a payer's wallet needs.
	PaymentNetwork     string        `json:"payment_network"`
	PaymentAssetIssuer *string       `json:"payment_asset_issuer"`
	PaymentMemoType    string        `json:"payment_memo_type"`
	PaymentURI         string        `json:"payment_uri"`
	ExchangeRate       *exchangeRate `json:"exchange_rate,omitempty"`
	// Metadata is the client's own: the cart's with the order request's
	// merged over it.
	Metadata map[string]string `json:"metadata"`
	// RefundDestination is where money owed back goes; null until set.
	RefundDestination *refundDestinationJSON `json:"refund_destination"`
}

// exchangeRate is the rate locked on an order quoted in a non-dollar asset.
type exchangeRate struct {
	Price  string `json:"price"` // order currency per unit of the asset
	Source string `json:"source"`
	At     string `json:"at"`
}

func rateJSON(o models.Order) *exchangeRate {
	if o.RateAt == nil {
		return nil
	}
	return &exchangeRate{Price: o.RatePrice.String(), Source: o.RateSource, At: timestamp(*o.RateAt)}
}

func (s *Server) newCreatedOrderJSON(o models.Order) createdOrderJSON {
	return createdOrderJSON{
		ID: o.ID, Number: o.Number, Status: o.Status, PaymentStatus: o.PaymentStatus,
		Currency: o.Currency, Total: money(o.Total, o.Currency),
		PaymentAsset: o.PaymentAsset, PaymentAmount: o.PaymentAmount.String(),
		PaymentAddress: o.PaymentAddress, PaymentMemo: o.PaymentMemo,
		PaymentExpiresAt: timestamp(o.PaymentExpiresAt), TrackingURL: s.trackingURL(o),
		CreatedAt: timestamp(o.CreatedAt), PaymentNetwork: o.PaymentNetwork,
		PaymentAssetIssuer: optional(o.PaymentAssetIssuer), PaymentMemoType: o.PaymentMemoType,
		PaymentURI: s.payURI(o), ExchangeRate: rateJSON(o), Metadata: metadataJSON(o.Metadata),
		RefundDestination: destinationJSON(o.RefundDestination),
	}
}

// payURI is the SEP-0007 link a wallet opens to pay the order exactly.
func (s *Server) payURI(o models.Order) string { return s.payURIFor(o, o.PaymentAmount) }

// paymentInfoURI is the link a polling client shows the payer: for the
// amount still due while part of the payment has arrived (asking for the
// whole amount again would make the payer overpay), else for the whole
// amount, as in the order's payment instructions.
func (s *Server) paymentInfoURI(o models.Order) string {
	if due := models.AmountToPay(o); due.IsPositive() {
		return s.payURIFor(o, due)
	}
	return s.payURI(o)
}

// payURIFor is the order's SEP-0007 link asking for amount: the tracking
// page asks for what remains after a partial payment.
func (s *Server) payURIFor(o models.Order, amount decimal.Decimal) string {
	return models.PayURI(models.PayRequest{
		Destination: o.PaymentAddress, Amount: amount,
		AssetCode: assetCodeForURI(o), AssetIssuer: o.PaymentAssetIssuer,
		Memo: o.PaymentMemo, MemoType: "MEMO_TEXT",
		Message:           "Memocart order " + o.Number,
		NetworkPassphrase: s.cfg.Payments[o.Mode].NetworkPassphrase,
	})
}

// assetCodeForURI: SEP-0007 names no asset for the native asset.
func assetCodeForURI(o models.Order) string {
	if a, err := models.LookupAsset(o.PaymentAsset); err == nil && a.Native() {
		return ""
	}
	return o.PaymentAsset
}

func (s *Server) trackingURL(o models.Order) string {
	return strings.TrimRight(s.cfg.PublicURL, "/") + "/track/" + o.Number
}

type orderJSON struct {
	ID            string               `json:"id"`
	Number        string               `json:"number"`
	Status        models.OrderStatus   `json:"status"`
	Total         json.Number          `json:"total"`
	Currency      string               `json:"currency"`
	PaymentStatus models.PaymentStatus `json:"payment_status"`
	CreatedAt     string               `json:"created_at"`
	Tracking      trackingJSON         `json:"tracking"`
	Payment       paymentInfoJSON      `json:"payment"`
	TrackingURL   string               `json:"tracking_url"`
	// FailureReason says, in words a customer can read, why a failed order
	// failed; null otherwise.
	FailureReason *string `json:"failure_reason"`
	// CancellationReason says why a cancelled order was cancelled
	// (models.CancellationReason); null otherwise.
	CancellationReason *string `json:"cancellation_reason"`
	// Shipments lists every parcel of the order with its carrier scans,
	// beyond the contract's single tracking number (which shows the least
	// advanced parcel). Empty until the order ships.
	Shipments []shipmentJSON `json:"shipments"`
	// Payments lists every payment seen for the order, oldest first, with
	// its outcome, so a client reconciles without asking an operator.
	Payments []orderPaymentJSON `json:"payments"`
	// Metadata is the client's own (see createdOrderJSON).
	Metadata map[string]string `json:"metadata"`
	// RefundDestination is where money owed back goes; null until set.
	RefundDestination *refundDestinationJSON `json:"refund_destination"`
	// Refunds are the money the order owes back and its way there, in
	// the reads of one order ([] when none); absent from lists (read GET
	// /v1/refunds), hence the pointer.
	Refunds *[]refundJSON `json:"refunds,omitempty"`
}

// orderPaymentJSON is one payment seen for an order (README: Payments of
// an order).
type orderPaymentJSON struct {
	ID                    string                    `json:"id"`
	Network               string                    `json:"network"`
	NetworkID             *string                   `json:"network_id"`
	TransactionHash       *string                   `json:"transaction_hash"`
	Asset                 string                    `json:"asset"`
	Amount                string                    `json:"amount"`
	ReceivedAt            string                    `json:"received_at"`
	Outcome               models.PaymentDisposition `json:"outcome"`
	RefundedAt            *string                   `json:"refunded_at"`
	RefundTransactionHash *string                   `json:"refund_transaction_hash"`
}

func orderPaymentsJSON(o models.Order) []orderPaymentJSON {
	out := make([]orderPaymentJSON, 0, len(o.Payments))
	for _, p := range o.Payments {
		network, networkID := models.PaymentSource(p.ID)
		js := orderPaymentJSON{
			ID: p.ID, Network: network, NetworkID: optional(networkID), TransactionHash: optional(p.TxHash),
			Asset: p.Asset, Amount: p.Amount.String(), ReceivedAt: timestamp(p.ReceivedAt), Outcome: p.Outcome,
			RefundTransactionHash: optional(p.RefundTx),
		}
		if p.RefundedAt != nil {
			at := timestamp(*p.RefundedAt)
			js.RefundedAt = &at
		}
		out = append(out, js)
	}
	return out
}

type shipmentJSON struct {
	Carrier           string           `json:"carrier"`
	TrackingNumber    *string          `json:"tracking_number"`
	TrackingURL       *string          `json:"tracking_url"`
	Status            string           `json:"status"`
	EstimatedDelivery *string          `json:"estimated_delivery"`
	Checkpoints       []checkpointJSON `json:"checkpoints"`
}

type checkpointJSON struct {
	Time    string `json:"time"`
	Status  string `json:"status"`
	Message string `json:"message"`
	City    string `json:"city,omitempty"`
	State   string `json:"state,omitempty"`
	Country string `json:"country,omitempty"`
	Zip     string `json:"zip,omitempty"`
}

func shipmentsJSON(o models.Order) []shipmentJSON {
	out := []shipmentJSON{}
	if o.Fulfilment == nil {
		return out
	}
	for _, p := range o.Fulfilment.Parcels {
		s := shipmentJSON{
			Carrier: p.Carrier, TrackingNumber: optional(p.TrackingNumber), TrackingURL: optional(p.TrackingURL),
			Status: string(p.Status), EstimatedDelivery: optional(p.EstimatedDelivery), Checkpoints: []checkpointJSON{},
		}
		for _, c := range p.Checkpoints {
			s.Checkpoints = append(s.Checkpoints, checkpointJSON{Time: timestamp(c.At), Status: c.Status, Message: c.Message,
				City: c.City, State: c.State, Country: c.Country, Zip: c.Zip})
		}
		out = append(out, s)
	}
	return out
}

// paymentInfoJSON repeats the payment instructions and shows progress, so
// a client polling an underpaid order can tell the payer what remains.
type paymentInfoJSON struct {
	Network        string        `json:"network"`
	AssetIssuer    *string       `json:"asset_issuer"`
	MemoType       string        `json:"memo_type"`
	URI            string        `json:"uri"`
	ExchangeRate   *exchangeRate `json:"exchange_rate,omitempty"`
	Asset          string        `json:"asset"`
	Amount         string        `json:"amount"`
	AmountReceived string        `json:"amount_received"`
	// AmountProcessing is money seen for the order and being credited:
	// it moves to amount_received within seconds. "0" otherwise.
	AmountProcessing string `json:"amount_processing"`
	// AmountDue is what the payer is still asked to send: "0" once the
	// order no longer waits for payment (models.AmountToPay).
	AmountDue string `json:"amount_due"`
	// AmountDueBack is money in the order's asset owed back to the payer,
	// not yet refunded (models.AmountDueBack).
	AmountDueBack string `json:"amount_due_back"`
	Address       string `json:"address"`
	Memo          string `json:"memo"`
	ExpiresAt     string `json:"expires_at"`
}

// trackingJSON is the contract's tracking object. Carrier, tracking number
// and estimated delivery are null until the order ships.
type trackingJSON struct {
	CurrentStep       models.OrderStatus `json:"current_step"`
	Carrier           *string            `json:"carrier"`
	TrackingNumber    *string            `json:"tracking_number"`
	EstimatedDelivery *string            `json:"estimated_delivery"`
	Steps             []stepJSON         `json:"steps"`
}

type stepJSON struct {
	Name      models.OrderStatus `json:"name"`
	Completed bool               `json:"completed"`
	Timestamp *string            `json:"timestamp"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) newOrderJSON(o models.Order) orderJSON {
	out := orderJSON{
		ID: o.ID, Number: o.Number, Status: o.Status, Total: money(o.Total, o.Currency), Currency: o.Currency,
		PaymentStatus: o.ShownPaymentStatus(), CreatedAt: timestamp(o.CreatedAt), TrackingURL: s.trackingURL(o),
		Shipments: shipmentsJSON(o), Payments: orderPaymentsJSON(o), Metadata: metadataJSON(o.Metadata),
		RefundDestination: destinationJSON(o.RefundDestination),
		Tracking: trackingJSON{
			CurrentStep: o.Status, Carrier: optional(o.Shipment.Carrier),
			TrackingNumber: optional(o.Shipment.TrackingNumber), EstimatedDelivery: optional(o.Shipment.EstimatedDelivery),
		},
		Payment: paymentInfoJSON{
			Asset: o.PaymentAsset, Amount: o.PaymentAmount.String(), AmountReceived: o.AmountReceived.String(),
			AmountProcessing: o.PendingCredit.String(),
			AmountDue:        models.AmountToPay(o).String(), AmountDueBack: models.AmountDueBack(o).String(), Address: o.PaymentAddress, Memo: o.PaymentMemo, ExpiresAt: timestamp(o.PaymentExpiresAt),
			Network: o.PaymentNetwork, AssetIssuer: optional(o.PaymentAssetIssuer), MemoType: o.PaymentMemoType,
			URI: s.paymentInfoURI(o), ExchangeRate: rateJSON(o),
		},
	}
	if o.Status == models.OrderFailed {
		out.FailureReason = optional(o.StatusReason)
	}
	if o.Status == models.OrderCancelled {
		out.CancellationReason = optional(string(o.Cancellation))
	}
	for _, st := range o.TrackingSteps() {
		js := stepJSON{Name: st.Name, Completed: st.Completed}
		if st.At != nil {
			ts := timestamp(*st.At)
			js.Timestamp = &ts
		}
		out.Tracking.Steps = append(out.Tracking.Steps, js)
	}
	return out
}

// orderRef reads the {id_or_number} of a path: an order id, or an order
// number as a person may write it (1234-5678-903), normalised. Anything
// else names no order, and is answered without a query.
func orderRef(s string) (string, bool) {
	if models.ValidID("ord", s) {
		return s, true
	}
	return models.NormalizeOrderNumber(s)
}

// getOrder is GET /v1/orders/{id_or_number}, read from the database, which
// the workflow's activities keep current.
func (s *Server) getOrder(c *gin.Context) {
	key := mustKey(c)
	s.orderAt(c, func(ctx context.Context, ref string) (models.Order, error) {
		return s.deps.Store.OrderForAccount(ctx, key.AccountID, key.Mode, ref)
	})
}

// orderAt answers a request on the order the path's {ref} names: a ref
// that cannot be an order's id or number is not found before act runs;
// act's order is rendered as it then stands.
func (s *Server) orderAt(c *gin.Context, act func(ctx context.Context, ref string) (models.Order, error)) {
	ref, ok := orderRef(c.Param("ref"))
	if !ok {
		abort(c, models.ErrOrderNotFound)
		return
	}
	o, err := act(c.Request.Context(), ref)
	if err != nil {
		abort(c, err)
		return
	}
	s.renderOrder(c, http.StatusOK, o)
}

type cancelRequest struct {
	// Reason is the client's note, kept for operators.
	Reason *string `json:"reason"`
}

// cancelOrder is POST /v1/orders/{id_or_number}/cancel (checkout.CancelOrder).
// An order cancelled now or before answers 200 with the order; one paid or
// beyond, 409 order_not_cancellable.
func (s *Server) cancelOrder(c *gin.Context) {
	key := mustKey(c)
	var req cancelRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	var note string
	if req.Reason != nil {
		note = strings.TrimSpace(*req.Reason)
		if n := utf8.RuneCountInString(note); n > models.MaxCancelNote {
			abort(c, invalid("reason", "reason is %d characters; at most %d", n, models.MaxCancelNote))
			return
		}
	}
	s.orderAt(c, func(ctx context.Context, ref string) (models.Order, error) {
		return s.deps.Orders.CancelOrder(ctx, checkout.CancelRequest{
			AccountID: key.AccountID, Mode: key.Mode, Ref: ref, Note: note,
		})
	})
}

// testAssetPattern is what a test payment's asset may be: a Stellar asset
// code (1 to 12 letters and digits), optionally with its issuer account,
// so a test can pay in a wrong asset the way a real payer could.
var testAssetPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,12}(:G[A-Z2-7]{55})?$`)

type testPaymentRequest struct {
	Amount json.RawMessage `json:"amount"`
	Asset  *string         `json:"asset"`
}

// createTestPayment is POST /v1/test_helpers/orders/{id_or_number}/payments:
// it sends a sandbox payment carrying the order's memo through the same
// matcher as a live payment. Test keys only.
func (s *Server) createTestPayment(c *gin.Context) {
	key, ok := testKey(c)
	if !ok {
		return
	}
	var req testPaymentRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	ref, ok := orderRef(c.Param("ref"))
	if !ok {
		abort(c, models.ErrOrderNotFound)
		return
	}
	r := checkout.TestPayment{AccountID: key.AccountID, Mode: key.Mode, Ref: ref, IdempotencyKey: idempotencyKeyOf(c)}
	if len(req.Amount) > 0 && string(req.Amount) != "null" {
		amount, err := parseAmount(req.Amount)
		if err != nil {
			abort(c, err)
			return
		}
		r.Amount = &amount
	}
	if req.Asset != nil && *req.Asset != "" {
		asset := strings.TrimSpace(*req.Asset)
		if !testAssetPattern.MatchString(asset) {
			abort(c, invalid("asset", "asset must be an asset code (USDC, XLM) or CODE:ISSUER with a Stellar issuer account"))
			return
		}
		if code, issuer, ok := strings.Cut(asset, ":"); ok {
			r.Asset = strings.ToUpper(code) + ":" + issuer
		} else {
			r.Asset = strings.ToUpper(asset)
		}
	}
	sent, err := s.deps.TestHelpers.Pay(c.Request.Context(), r)
	if err != nil {
		abort(c, err)
		return
	}
	p := sent.Payment
	render(c, http.StatusCreated, gin.H{"payment": gin.H{
		"id": p.ID, "order_id": sent.Order.ID, "asset": p.Asset, "amount": p.Amount.String(),
		"memo": p.Memo, "outcome": sent.Outcome,
	}})
}

// expireTestOrder is POST /v1/test_helpers/orders/{id_or_number}/expire:
// the order's payment deadline passes now, through its workflow; answers
// the order as it then stands. Test keys only.
func (s *Server) expireTestOrder(c *gin.Context) {
	s.testHelper(c, func(ctx context.Context, r checkout.TestOrder) (models.Order, error) {
		return s.deps.TestHelpers.Expire(ctx, r)
	})
}

// advanceTestOrder is POST /v1/test_helpers/orders/{id_or_number}/advance:
// the sandbox provider's next fulfilment step happens now, through the
// order's workflow; answers the order as it then stands. Test keys only.
func (s *Server) advanceTestOrder(c *gin.Context) {
	s.testHelper(c, func(ctx context.Context, r checkout.TestOrder) (models.Order, error) {
		return s.deps.TestHelpers.Move(ctx, r, models.TestMove{Advance: true})
	})
}

type failTestOrderRequest struct {
	Reason *string `json:"reason"`
}

// failTestOrder is POST /v1/test_helpers/orders/{id_or_number}/fail:
// sourcing fails now at the sandbox provider, for the body's optional
// reason (a failure code of models.TestFailureCodes, by default
// models.DefaultTestFailure), through the order's workflow; answers the
// order as it then stands. Test keys only.
func (s *Server) failTestOrder(c *gin.Context) {
	s.testHelper(c, func(ctx context.Context, r checkout.TestOrder) (models.Order, error) {
		req := failTestOrderRequest{}
		if err := decodeOptionalJSON(c, &req); err != nil {
			return models.Order{}, err
		}
		code := models.DefaultTestFailure
		if req.Reason != nil {
			code = *req.Reason
		}
		return s.deps.TestHelpers.Move(ctx, r, models.TestMove{Fail: code})
	})
}

// testHelper answers a test helper acting on the order the path names:
// a live key is refused before anything else (its body is not read), then
// a path that names no order; act reads the body, if any, and acts; the
// order is rendered as it then stands.
func (s *Server) testHelper(c *gin.Context, act func(context.Context, checkout.TestOrder) (models.Order, error)) {
	key, ok := testKey(c)
	if !ok {
		return
	}
	s.orderAt(c, func(ctx context.Context, ref string) (models.Order, error) {
		return act(ctx, checkout.TestOrder{AccountID: key.AccountID, Mode: key.Mode, Ref: ref})
	})
}

// parseAmount reads a decimal amount given as a JSON string ("12.50") or
// number (12.50) straight from its text: never through a float, never in
// exponent notation, within models.ParseAmount's bounds.
func parseAmount(raw json.RawMessage) (decimal.Decimal, error) {
	text := string(raw)
	if unq, err := strconv.Unquote(text); err == nil && strings.HasPrefix(text, `"`) {
		text = unq
	}
	d, err := models.ParseAmount(text, models.MaxPaymentDigits, models.MaxAmountDecimals)
	if err != nil || !d.IsPositive() {
		return decimal.Zero, invalid("amount", "amount must be a positive decimal written plainly (like 12.50), with at most %d digits before the point and %d after it",
			models.MaxPaymentDigits, models.MaxAmountDecimals)
	}
	return d, nil
}
