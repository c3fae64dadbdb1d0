package api_test

import (
	"context"
	"crypto/rand"
	"image"
	"image/color"
	"image/draw"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// Personal data the tracking fixtures carry, none of which any page may show.
const (
	trackPhone        = "+1 408 555 0199"
	trackLine2        = "Apartment 42B"
	trackCity         = "Cupertino"
	trackPostcode     = "95014"
	trackAccountID    = "acct_trackingsecret"
	trackMetadata     = "crm-ref-secret-7781"
	trackCancelNote   = "customer changed mind, call 408-555-0199"
	trackFailureWords = "Address 1 Infinite Loop rejected by the retailer"
	trackItemTitle    = "Secret Gift For Ada"
	trackMemo         = "MC4Q7Z2K"
	// Where the fixtures' refunds go, and a payout's signed envelope:
	// the payer's account and memo, and something only the service keeps.
	trackRefundAddress  = "GCKFBEIYV2U22IO2BJ4KVJOIP7XPWQGQFKKWXR6DOSJBV7STMAQSMTGG"
	trackRefundMemo     = "EXCHANGE-DEPOSIT-5551"
	trackRefundEnvelope = "AAAAAgAAAABsecretenvelope"
	// A sent refund's transaction, and the hash of a payout not (yet)
	// known to be on the chain, which the page never shows.
	trackRefundTx      = "3389e9f0f1a65f19736cacf544c2e825313e8447f569233bb8db39aa607c8889"
	trackRefundOtherTx = "b0e7d3c2a1f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0"
)

// trackingSecrets are the strings no tracking page may contain.
var trackingSecrets = []string{
	customerEmail, customerName, customerLine1, trackPhone, trackLine2, trackCity, trackPostcode,
	trackAccountID, trackMetadata, trackCancelNote, trackFailureWords, trackItemTitle,
	trackRefundAddress, trackRefundMemo, trackRefundEnvelope,
}

// showsSecret reports whether text shows secret: as a word of its own for
// a secret of digits alone (the postcode), which a random order number or
// an amount may hold within its own digits.
func showsSecret(text, secret string) bool {
	if strings.Trim(secret, "0123456789") != "" {
		return strings.Contains(text, secret)
	}
	return regexp.MustCompile(`(^|[^0-9])` + secret + `([^0-9]|$)`).MatchString(text)
}

// trackingCase is one state of an order and what its page must show.
type trackingCase struct {
	name    string
	order   models.Order
	refunds []models.Refund // the order's refunds, oldest first
	label   string          // the human status label
	shows   []string        // text the page must contain
	hides   []string        // text it must not contain (beyond trackingSecrets)
	// qr is the SEP-0007 link the page's QR code must decode to; "" means
	// the page has no QR code.
	qr string
	// link is the carrier link the page must have; "" means none.
	link string
	// explorer is the explorer link of a sent refund the page must have;
	// "" means none.
	explorer string
}

// baseTrackingOrder is an order full of personal data at the given status,
// created 10 minutes before now with 20 minutes left to pay.
func baseTrackingOrder(t testing.TB, now time.Time, status models.OrderStatus) models.Order {
	t.Helper()
	number, err := models.NewOrderNumber(rand.Reader)
	require.NoError(t, err)
	created := now.Add(-10 * time.Minute)
	o := models.Order{
		ID: "ord_" + number, Number: number, AccountID: trackAccountID, Mode: models.ModeLive,
		Status: status, PaymentStatus: models.PaymentPending,
		CustomerEmail: customerEmail,
		Address: models.ShippingAddress{Name: customerName, Phone: trackPhone, Line1: customerLine1, Line2: trackLine2,
			City: trackCity, Region: "CA", PostalCode: trackPostcode, Country: "US"},
		Currency: "USD", Total: decimal.RequireFromString("25.50"),
		PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("25.5"),
		PaymentAddress: livePayTo, PaymentMemo: trackMemo, PaymentExpiresAt: now.Add(20 * time.Minute),
		PaymentNetwork: "pubnet", PaymentAssetIssuer: liveIssuer, PaymentMemoType: "text",
		Metadata:  map[string]string{"crm": trackMetadata},
		Items:     []models.CartItem{{Title: trackItemTitle, Quantity: 1}},
		Steps:     map[models.OrderStatus]time.Time{models.OrderCreated: created},
		CreatedAt: created, UpdatedAt: created,
	}
	// Each status past created has reached the steps before it.
	at := created
	for _, st := range models.OrderSteps[1:] {
		if !models.StepReached(status, st) {
			break
		}
		at = at.Add(time.Minute)
		o.Steps[st] = at
	}
	if models.StepReached(status, models.OrderPaid) {
		o.PaymentStatus, o.AmountReceived = models.PaymentConfirmed, o.PaymentAmount
	}
	return o
}

// trackingPayURI is the link the page must encode for an order asking for
// amount: what the API's payment_uri is for the same order and amount.
func trackingPayURI(o models.Order, amount string) string {
	return models.PayURI(models.PayRequest{
		Destination: o.PaymentAddress, Amount: decimal.RequireFromString(amount), AssetCode: o.PaymentAsset,
		AssetIssuer: o.PaymentAssetIssuer, Memo: o.PaymentMemo, MemoType: "MEMO_TEXT", Message: "Memocart order " + o.Number,
	})
}

// trackingRefund is a refund of order o at status, with the destination,
// envelope and hashes each status has (the destination is set past
// awaiting_destination; a failed payout keeps its refused hash), so every
// page that shows one can be checked for their absence. key is the
// refund's natural key (models.RefundsOwed).
func trackingRefund(o models.Order, key string, reason models.RefundReason, amount string, status models.RefundStatus, now time.Time) models.Refund {
	r := models.Refund{
		ID: models.RefundID(key), Key: key, OrderID: o.ID, AccountID: o.AccountID, Mode: o.Mode,
		Reason: reason, Amount: decimal.RequireFromString(amount), Asset: o.PaymentAsset,
		Status: status, CreatedAt: now.Add(-5 * time.Minute),
	}
	if status != models.RefundAwaitingDestination {
		r.Destination = &models.RefundDestination{Address: trackRefundAddress, MemoType: "text", Memo: trackRefundMemo}
	}
	switch status {
	case models.RefundSending:
		r.TransactionHash, r.Envelope = trackRefundOtherTx, trackRefundEnvelope
	case models.RefundSent:
		sent := now.Add(-2 * time.Minute)
		r.TransactionHash, r.Envelope, r.SentAt = trackRefundTx, trackRefundEnvelope, &sent
	case models.RefundFailed:
		failed := now.Add(-2 * time.Minute)
		r.TransactionHash, r.Envelope, r.FailedAt = trackRefundOtherTx, trackRefundEnvelope, &failed
		r.FailureReason = "Your account has no trustline for USDC: add one in your wallet."
	case models.RefundCancelled:
		cancelled := now.Add(-2 * time.Minute)
		r.CancelledAt = &cancelled
	}
	return r
}

// trackingCases are every state the page has, at clock time now.
func trackingCases(t testing.TB, now time.Time) []trackingCase {
	t.Helper()
	var cases []trackingCase
	add := func(c trackingCase) { cases = append(cases, c) }

	o := baseTrackingOrder(t, now, models.OrderCreated)
	add(trackingCase{name: "created", order: o, label: "Waiting for payment",
		shows: []string{"25.5 USDC", livePayTo, liveIssuer, trackMemo, "20 min", "Open in a Stellar wallet"},
		qr:    trackingPayURI(o, "25.5")})

	o = baseTrackingOrder(t, now, models.OrderCreated)
	o.PaymentStatus, o.AmountReceived = models.PaymentPartial, decimal.RequireFromString("10")
	add(trackingCase{name: "created partly paid", order: o, label: "Waiting for payment",
		shows: []string{"15.5 USDC", "Received so far", "10 USDC", trackMemo},
		hides: []string{"25.5 USDC"},
		qr:    trackingPayURI(o, "15.5")})

	o = baseTrackingOrder(t, now, models.OrderCreated)
	o.PendingCredit = decimal.RequireFromString("25.5")
	add(trackingCase{name: "created payment processing", order: o, label: "Waiting for payment",
		shows: []string{"do not pay again"}, hides: []string{livePayTo, trackMemo}})

	o = baseTrackingOrder(t, now, models.OrderCreated)
	o.PaymentExpiresAt = now.Add(-time.Second)
	add(trackingCase{name: "created window closed", order: o, label: "Waiting for payment",
		shows: []string{"time to pay has run out"}, hides: []string{livePayTo, trackMemo}})

	add(trackingCase{name: "paid", order: baseTrackingOrder(t, now, models.OrderPaid), label: "Paid",
		shows: []string{"being placed with the retailer"}, hides: []string{livePayTo, trackMemo}})

	add(trackingCase{name: "ordered", order: baseTrackingOrder(t, now, models.OrderOrdered), label: "Ordered from the retailer",
		shows: []string{"preparing the parcel"}})

	o = baseTrackingOrder(t, now, models.OrderShipped)
	o.Shipment = models.Shipment{Carrier: "UPS", TrackingNumber: "1Z999AA10123456784", EstimatedDelivery: "2026-03-18"}
	o.Fulfilment = &models.Fulfilment{Ref: "zn_1", Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{{
		Carrier: "UPS", TrackingNumber: "1Z999AA10123456784", TrackingURL: "https://provider.example/track/secret",
		Status: models.ParcelInTransit, EstimatedDelivery: "2026-03-18",
		Checkpoints: []models.Checkpoint{
			{At: now.Add(-time.Hour), Status: "in_transit", Message: "Departed from facility", City: trackCity, State: "CA", Zip: trackPostcode},
			{At: now.Add(-3 * time.Hour), Status: "in_transit", Message: "Picked up by the carrier", City: "Louisville", State: "KY"},
		},
	}}}
	add(trackingCase{name: "shipped with UPS", order: o, label: "On its way",
		shows: []string{"UPS", "1Z999AA10123456784", "Wed 18 Mar 2026", "In transit", "Departed from facility", "Picked up by the carrier"},
		hides: []string{"provider.example", "Louisville"},
		link:  "https://www.ups.com/track?tracknum=1Z999AA10123456784"})

	o = baseTrackingOrder(t, now, models.OrderShipped)
	o.Mode = models.ModeTest
	o.Shipment = models.Shipment{Carrier: "Sandbox Express", TrackingNumber: "SBX123456"}
	add(trackingCase{name: "shipped with an unknown carrier", order: o, label: "On its way",
		shows: []string{"Sandbox Express", "SBX123456", "Test order"}})

	o = baseTrackingOrder(t, now, models.OrderDelivered)
	o.Shipment = models.Shipment{Carrier: "FedEx", TrackingNumber: "449044304137821"}
	add(trackingCase{name: "delivered", order: o, label: "Delivered",
		shows: []string{"delivered", "FedEx"},
		link:  "https://www.fedex.com/fedextrack/?trknbr=449044304137821"})

	o = baseTrackingOrder(t, now, models.OrderCancelled)
	o.PaymentStatus, o.Cancellation, o.StatusReason = models.PaymentExpired, models.CancellationPaymentWindowExpired, "payment deadline passed"
	add(trackingCase{name: "cancelled, nothing received", order: o, label: "Cancelled",
		shows: []string{"did not arrive before the deadline", "nothing is owed back"},
		hides: []string{"due back", livePayTo, trackMemo}})

	o = baseTrackingOrder(t, now, models.OrderCancelled)
	o.PaymentStatus, o.AmountReceived = models.PaymentRefundDue, decimal.RequireFromString("10")
	o.Cancellation, o.StatusReason = models.CancellationRequestedByCustomer, trackCancelNote
	add(trackingCase{name: "cancelled with money received", order: o, label: "Cancelled",
		shows: []string{"The shop cancelled the order",
			"10 USDC received for this order is owed back to the payer. The refund is being prepared"},
		hides: []string{"nothing is owed back", `id="refunds"`}})

	o = baseTrackingOrder(t, now, models.OrderCancelled)
	refunded := now.Add(-time.Minute)
	o.PaymentStatus, o.AmountReceived, o.RefundedAt = models.PaymentRefunded, decimal.RequireFromString("10"), &refunded
	o.Cancellation = models.CancellationByOperator
	add(trackingCase{name: "cancelled and refunded", order: o, label: "Cancelled",
		shows: []string{"Memocart cancelled the order", "The money received for this order was refunded."},
		hides: []string{"owed back", `id="refunds"`}})

	o = baseTrackingOrder(t, now, models.OrderFailed)
	o.PaymentStatus, o.AmountReceived, o.StatusReason = models.PaymentRefundDue, o.PaymentAmount, trackFailureWords
	o.Steps = map[models.OrderStatus]time.Time{models.OrderCreated: now.Add(-10 * time.Minute), models.OrderPaid: now.Add(-9 * time.Minute)}
	add(trackingCase{name: "failed", order: o, label: "Could not be fulfilled",
		shows: []string{"could not supply or deliver it", "25.5 USDC received for this order is owed back"}})

	// The refunds, one status at a time: the refund of a cancelled or
	// failed order's money, or of an overpayment's excess.
	o = baseTrackingOrder(t, now, models.OrderCancelled)
	o.PaymentStatus, o.AmountReceived = models.PaymentRefundDue, decimal.RequireFromString("10")
	o.Cancellation = models.CancellationRequestedByCustomer
	add(trackingCase{name: "refund awaiting its destination", order: o, label: "Cancelled",
		refunds: []models.Refund{trackingRefund(o, "order:"+o.ID+":1", models.RefundOrderCancelled, "10", models.RefundAwaitingDestination, now)},
		shows: []string{"10 USDC", "The order was cancelled", "Waiting for where to send it",
			"The shop will ask you where to send this money. Nothing is sent until then."},
		hides: []string{"owed back", "nothing is owed back"}})

	failedWith := func(status models.RefundStatus) (models.Order, []models.Refund) {
		o := baseTrackingOrder(t, now, models.OrderFailed)
		o.PaymentStatus, o.AmountReceived, o.StatusReason = models.PaymentRefundDue, o.PaymentAmount, trackFailureWords
		o.Steps = map[models.OrderStatus]time.Time{models.OrderCreated: now.Add(-10 * time.Minute), models.OrderPaid: now.Add(-9 * time.Minute)}
		return o, []models.Refund{trackingRefund(o, "order:"+o.ID+":1", models.RefundOrderFailed, "25.5", status, now)}
	}
	o, rs := failedWith(models.RefundAwaitingApproval)
	add(trackingCase{name: "refund awaiting approval", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"25.5 USDC", "The order could not be fulfilled", "Waiting for approval",
			"The shop has said where to send it. It is sent as soon as it is approved."},
		hides: []string{"owed back"}})

	o, rs = failedWith(models.RefundSending)
	add(trackingCase{name: "refund being sent", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"25.5 USDC", "Being sent", "It was approved and is being sent now."},
		hides: []string{trackRefundOtherTx, "stellar.expert"}})

	o, rs = failedWith(models.RefundSent)
	add(trackingCase{name: "refund sent on the public network", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"25.5 USDC", "Sent", "It was sent on " + now.Add(-2*time.Minute).UTC().Format("2 Jan 2006, 15:04 UTC") + ".",
			trackRefundTx},
		hides:    []string{"owed back"},
		explorer: "https://stellar.expert/explorer/public/tx/" + trackRefundTx})

	o, rs = failedWith(models.RefundFailed)
	add(trackingCase{name: "refund failed", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"25.5 USDC", "Could not be sent",
			"Why: Your account has no trustline for USDC: add one in your wallet.",
			"It will be sent again once this is put right, or to another destination the shop asks you for."},
		hides: []string{trackRefundOtherTx, "stellar.expert"}})

	o, rs = failedWith(models.RefundCancelled)
	add(trackingCase{name: "refund settled another way", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"25.5 USDC", "Settled another way", "Memocart settled this refund another way, so nothing is sent for it here."},
		hides: []string{"owed back"}})

	// An overpaid order on the test network keeps its purchase; its excess
	// went back, and a second excess, credited since, waits for its refund.
	o = baseTrackingOrder(t, now, models.OrderOrdered)
	o.PaymentNetwork, o.PaymentStatus, o.AmountReceived = "testnet", models.PaymentOverpaid, decimal.RequireFromString("31")
	add(trackingCase{name: "overpayment refund sent on the test network", order: o, label: "Ordered from the retailer",
		refunds: []models.Refund{trackingRefund(o, "order:"+o.ID+":1", models.RefundOverpaid, "4.5", models.RefundSent, now)},
		shows: []string{"4.5 USDC", "More than the amount due was paid", "Sent", trackRefundTx,
			"1 USDC received for this order is owed back to the payer"},
		explorer: "https://stellar.expert/explorer/testnet/tx/" + trackRefundTx})

	// A payment in another asset, while the order still waits for the
	// right one: its refund, in its own asset, beside what to pay.
	o = baseTrackingOrder(t, now, models.OrderCreated)
	o.Payments = []models.OrderPayment{{ID: "stellar:pubnet:4242", Asset: "XLM", Amount: decimal.RequireFromString("12.5"),
		ReceivedAt: now.Add(-5 * time.Minute), Outcome: models.DispositionWrongAsset}}
	r := trackingRefund(o, "payment:stellar:pubnet:4242", models.RefundWrongAsset, "12.5", models.RefundAwaitingApproval, now)
	r.Asset, r.PaymentIDs = "XLM", []string{"stellar:pubnet:4242"}
	add(trackingCase{name: "created with a payment in another asset", order: o, label: "Waiting for payment",
		refunds: []models.Refund{r},
		shows:   []string{"25.5 USDC", livePayTo, "12.5 XLM", "A payment in an asset this order does not take", "Waiting for approval"},
		hides:   []string{"owed back"},
		qr:      trackingPayURI(o, "25.5")})

	// In the sandbox the hash is on no chain: shown, not linked.
	o, rs = failedWith(models.RefundSent)
	o.Mode, o.PaymentNetwork = models.ModeTest, "sandbox"
	rs[0].Mode = models.ModeTest
	add(trackingCase{name: "refund sent in the sandbox", order: o, refunds: rs, label: "Could not be fulfilled",
		shows: []string{"Test order", "25.5 USDC", "Sent", trackRefundTx},
		hides: []string{"stellar.expert"}})
	return cases
}

// fixedOrders is a store whose orders by number, and their refunds, are
// the given ones: the tracking page reads nothing else.
type fixedOrders struct {
	api.Store
	orders  map[string]models.Order
	refunds map[string][]models.Refund // by order id
}

func (s fixedOrders) RefundsForOrder(_ context.Context, orderID string) ([]models.Refund, error) {
	return s.refunds[orderID], nil
}

func (s fixedOrders) OrderByNumber(_ context.Context, number string) (models.Order, error) {
	if o, ok := s.orders[number]; ok {
		return o, nil
	}
	return models.Order{}, models.ErrOrderNotFound
}

// newTrackingEnv serves the tracking page of the given orders, with cfg.
func newTrackingEnv(t *testing.T, clock *fakeClock, cfg api.Config, orders ...models.Order) *env {
	t.Helper()
	cases := make([]trackingCase, len(orders))
	for i, o := range orders {
		cases[i].order = o
	}
	return newTrackingCasesEnv(t, clock, cfg, cases)
}

// newTrackingCasesEnv serves the tracking page of the cases' orders, with
// their refunds, with cfg.
func newTrackingCasesEnv(t *testing.T, clock *fakeClock, cfg api.Config, cases []trackingCase) *env {
	t.Helper()
	st := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	store := fixedOrders{Store: st, orders: map[string]models.Order{}, refunds: map[string][]models.Refund{}}
	for _, c := range cases {
		store.orders[c.order.Number] = c.order
		store.refunds[c.order.ID] = c.refunds
	}
	srv := newTestServer(t, cfg, api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(clock.Now), Now: clock.Now,
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &env{st: st, clock: clock, ts: ts}
}

var (
	qrSVGRE  = regexp.MustCompile(`<svg class="qr"[^>]*viewBox="0 0 (\d+) (\d+)"[^>]*>.*?<path fill="#000" d="([^"]*)"/></svg>`)
	qrRunRE  = regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`)
	qrModule = 8 // pixels per module when the SVG is rasterised
)

// decodeQRSVG finds the page's QR code, rasterises its SVG as a browser
// would, and decodes it with an independent decoder (ZXing's port): the
// proof that the code scans to the link. ok is false when there is none.
func decodeQRSVG(t testing.TB, page string) (text string, ok bool) {
	t.Helper()
	m := qrSVGRE.FindStringSubmatch(page)
	if m == nil {
		return "", false
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	img := image.NewGray(image.Rect(0, 0, n*qrModule, n*qrModule))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	runs := qrRunRE.FindAllStringSubmatch(m[3], -1)
	require.NotEmpty(t, runs, "QR path has no runs")
	for _, r := range runs {
		x, _ := strconv.Atoi(r[1])
		y, _ := strconv.Atoi(r[2])
		w, _ := strconv.Atoi(r[3])
		rect := image.Rect(x*qrModule, y*qrModule, (x+w)*qrModule, (y+1)*qrModule)
		draw.Draw(img, rect, image.NewUniform(color.Black), image.Point{}, draw.Src)
	}
	// The raster is the code alone, upright, module by module: ZXing reads
	// its modules directly. Its finder-pattern search, made for camera
	// images, misreads about 1 in 100 such exact codes (jsQR reads them).
	return decodeQR(t, img, gozxing.DecodeHintType_PURE_BARCODE), true
}

// decodeQRImage decodes the one QR code in a photograph of the screen.
func decodeQRImage(t testing.TB, img image.Image) string {
	t.Helper()
	return decodeQR(t, img, gozxing.DecodeHintType_TRY_HARDER)
}

func decodeQR(t testing.TB, img image.Image, hint gozxing.DecodeHintType) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	require.NoError(t, err)
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{hint: true})
	require.NoError(t, err, "decoding the QR code")
	return res.GetText()
}
