package api

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// The public tracking page behind tracking_url. Anyone holding the link
// can open it, so it shows the order's progress and, while the order waits
// for payment, what to pay and where, and the money on its way back:
// never the shopper's name, address, phone or e-mail, nor the words of
// whoever cancelled it or the provider's failure text (free text that may
// quote any of them), nor where a refund goes (the account and memo of its
// destination say who the payer is, or where they keep their money). The
// order number is the only identifier on it.

//go:embed tracking.html
var trackingHTML string

// trackingTemplate renders every page of /track: an order, not found, and
// too many requests. html/template escapes each value for where it lands.
var trackingTemplate = template.Must(template.New("track").Funcs(template.FuncMap{
	"utc": utcText,
}).Parse(trackingHTML))

// utcText writes a time the way the page writes every time.
func utcText(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }

// statusText is what a shopper reads for each status: a label and what
// happens next.
var statusText = map[models.OrderStatus]struct{ label, next string }{
	models.OrderCreated: {"Waiting for payment",
		"Send the payment below before the deadline. As soon as it arrives the order is placed with the retailer."},
	models.OrderPaid: {"Paid",
		"The payment arrived. The order is being placed with the retailer."},
	models.OrderOrdered: {"Ordered from the retailer",
		"The retailer is preparing the parcel. Carrier and tracking details appear here when it ships."},
	models.OrderShipped: {"On its way",
		"The carrier has the parcel and is bringing it to the delivery address."},
	models.OrderDelivered: {"Delivered",
		"The carrier reports the parcel delivered. Nothing else to do."},
	models.OrderCancelled: {"Cancelled",
		"This order is closed: nothing will be bought or shipped."},
	models.OrderFailed: {"Could not be fulfilled",
		"This order is closed: nothing more will be bought or shipped."},
}

// cancellationText explains a cancelled order, by reason.
var cancellationText = map[models.CancellationReason]string{
	models.CancellationPaymentWindowExpired: "The full payment did not arrive before the deadline, so the order was cancelled.",
	models.CancellationRequestedByCustomer:  "The shop cancelled the order before it was paid.",
	models.CancellationByOperator:           "Memocart cancelled the order before it was paid.",
}

// failedText explains a failed order. The provider's own reason stays in
// the API (failure_reason), for the shop.
const failedText = "The order was paid, but the retailer could not supply or deliver it, so it was stopped."

// refundText is what a payer reads for each status of a refund: a label,
// the tone of its badge (as an order's: "progress", "done", "stopped", or
// "settled" for one settled another way) and what happens next. Refunds go
// out by themselves once they have a destination (the shop gives it) and
// an approval (a limit check, or an operator).
var refundText = map[models.RefundStatus]struct{ label, tone, next string }{
	models.RefundAwaitingDestination: {"Waiting for where to send it", "progress",
		"The shop will ask you where to send this money. Nothing is sent until then."},
	models.RefundAwaitingApproval: {"Waiting for approval", "progress",
		"The shop has said where to send it. It is sent as soon as it is approved."},
	models.RefundSending: {"Being sent", "progress",
		"It was approved and is being sent now."},
	models.RefundSent: {"Sent", "done",
		"It was sent."},
	models.RefundFailed: {"Could not be sent", "stopped",
		"It will be sent again once this is put right, or to another destination the shop asks you for."},
	models.RefundCancelled: {"Settled another way", "settled",
		"Memocart settled this refund another way, so nothing is sent for it here. For questions, contact the shop you ordered from."},
}

// refundFor says what a refund returns, by reason.
var refundFor = map[models.RefundReason]string{
	models.RefundOrderFailed:      "The order could not be fulfilled",
	models.RefundOrderExpired:     "The full payment did not arrive in time",
	models.RefundOrderCancelled:   "The order was cancelled",
	models.RefundOverpaid:         "More than the amount due was paid",
	models.RefundLatePayment:      "A payment arrived after the order closed",
	models.RefundWrongAsset:       "A payment in an asset this order does not take",
	models.RefundUnmatchedPayment: "A payment that named no order",
}

// stepLabel names the tracking steps.
var stepLabel = map[models.OrderStatus]string{
	models.OrderCreated:   "Order placed",
	models.OrderPaid:      "Paid",
	models.OrderOrdered:   "Ordered from the retailer",
	models.OrderShipped:   "Shipped",
	models.OrderDelivered: "Delivered",
}

// parcelLabel names a parcel's carrier status.
var parcelLabel = map[models.ParcelStatus]string{
	models.ParcelPending:       "Label created",
	models.ParcelInTransit:     "In transit",
	models.ParcelDelivered:     "Delivered",
	models.ParcelUndeliverable: "Could not be delivered",
}

// trackingView is everything the order page shows.
type trackingView struct {
	Title  string
	Nonce  string
	Number string
	Label  string
	// Tone colours the label: "progress", "done" or "stopped".
	Tone        string
	Next        string
	Explanation string
	// RefundNotes say what is owed back with no refund yet to show.
	RefundNotes []string
	Refunds     []refundView
	Payment     *paymentView
	// PaymentClosed: waiting for payment, but the window has passed; the
	// workflow cancels the order any moment.
	PaymentClosed bool
	// Processing: a payment was seen and is being credited.
	Processing bool
	Parcels    []parcelView
	Steps      []stepView
	Test       bool
}

type paymentView struct {
	Amount   string // what is still to pay
	Asset    string
	Issuer   string
	Network  string
	Address  string
	Memo     string
	URI      template.URL
	QR       template.HTML
	Received string // what arrived so far, "" when nothing did
	Expires  time.Time
	TimeLeft string
	Seconds  int64
}

// refundView is one refund as the payer sees it: how much, why, and where
// it is on its way; never its destination.
type refundView struct {
	Amount string // with its asset: "10 USDC"
	For    string
	Label  string
	Tone   string
	Next   string
	// Failure is why the last payout was refused (written for the payer:
	// what to do, e.g. add a trustline), while failed.
	Failure string
	// Hash is the transaction that paid a sent refund; Link shows it on a
	// public explorer, "" in the sandbox (whose hashes are on no chain).
	Hash string
	Link string
}

type parcelView struct {
	Carrier           string
	TrackingNumber    string
	Link              string
	Status            string
	EstimatedDelivery string
	Checkpoints       []checkpointView
}

type checkpointView struct {
	At      time.Time
	Message string
}

type stepView struct {
	Label string
	Done  bool
	At    time.Time // zero when not reached
}

// trackingPage is GET /track/{number}.
func (s *Server) trackingPage(c *gin.Context) {
	number, ok := models.NormalizeOrderNumber(c.Param("number"))
	if !ok {
		s.trackingNotFound(c, "That is not an order number",
			"An order number has 11 digits, like 1234-5678-901. Check the link in your order confirmation.")
		return
	}
	o, err := s.deps.Store.OrderByNumber(c.Request.Context(), number)
	if errors.Is(err, models.ErrOrderNotFound) {
		s.trackingNotFound(c, "No order with this number",
			"Check the link in your order confirmation: the number may be mistyped.")
		return
	}
	if err != nil {
		s.trackingFailed(c, err)
		return
	}
	refunds, err := s.trackingRefunds(c.Request.Context(), o)
	if err != nil {
		s.trackingFailed(c, err)
		return
	}
	v, err := s.newTrackingView(o, refunds, s.deps.Now())
	if err != nil {
		s.trackingFailed(c, err)
		return
	}
	s.renderTracking(c, http.StatusOK, "order", "Order "+o.Number, v)
}

// trackingRefunds returns the refunds of o. As for the API's order
// (orderRefunds), an order that owes nothing back from scratch has none,
// and costs no read.
func (s *Server) trackingRefunds(ctx context.Context, o models.Order) ([]models.Refund, error) {
	if len(models.RefundsOwed(o, nil, time.Time{})) == 0 {
		return nil, nil
	}
	return s.deps.Store.RefundsForOrder(ctx, o.ID)
}

// trackingNotFound answers 404 with the page's look, so a mistyped link
// does not land on a bare line of text.
func (s *Server) trackingNotFound(c *gin.Context, title, detail string) {
	s.renderMessage(c, http.StatusNotFound, title, detail)
}

// trackingFailed answers a failure to read the order as a page: a payer's
// browser has no use for the API's JSON error. Like the API, it says 503
// with Retry-After when a dependency is down and 500 for a bug.
func (s *Server) trackingFailed(c *gin.Context, err error) {
	me := classify(c, err)
	status := StatusOf(me.Code)
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", retryAfterUnavailable)
		s.renderMessage(c, status, "Tracking is unavailable for a moment",
			"We could not read the order just now. Reload this page in a minute.")
		return
	}
	s.renderMessage(c, status, "Something went wrong",
		"We could not show this order. Reload this page; if it keeps happening, contact the shop you ordered from.")
}

// renderMessage answers a page with a title and one paragraph.
func (s *Server) renderMessage(c *gin.Context, status int, title, detail string) {
	s.renderTracking(c, status, "message", title, map[string]string{"Title": title, "Detail": detail})
}

// renderTracking writes one of the tracking page's templates with its
// security headers; it has no form to post anywhere.
func (s *Server) renderTracking(c *gin.Context, status int, name, title string, data any) {
	renderPage(c, trackingTemplate, "tracking page", "'none'", status, name, pageData{Title: title, Data: data})
}

// renderPage writes template name of a public page (what it is, for an
// error) with the pages' security headers. The nonce lets the page's own
// inline style and script run under a policy that allows nothing else: no
// external resource, no injected script, no framing; formAction is where
// its forms may post.
func renderPage(c *gin.Context, tmpl *template.Template, what, formAction string, status int, name string, data pageData) {
	nonce, err := newNonce()
	if err != nil {
		abort(c, err)
		return
	}
	data.Nonce = nonce
	var b strings.Builder
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		abort(c, fmt.Errorf("rendering %s: %w", what, err))
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+nonce+"'; script-src 'nonce-"+nonce+
		"'; base-uri 'none'; form-action "+formAction+"; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	c.Data(status, "text/html; charset=utf-8", []byte(b.String()))
}

// pageData wraps a template's data with the response's nonce.
type pageData struct {
	Title string
	Nonce string
	Data  any
}

func newNonce() (string, error) {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reading random nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newTrackingView builds the page of order o, whose refunds are refunds.
// now decides the time left to pay.
func (s *Server) newTrackingView(o models.Order, refunds []models.Refund, now time.Time) (trackingView, error) {
	st, ok := statusText[o.Status]
	if !ok {
		st.label, st.next = string(o.Status), ""
	}
	v := trackingView{Number: o.Number, Label: st.label, Next: st.next, Tone: "progress", Test: o.Mode == models.ModeTest}
	switch o.Status {
	case models.OrderDelivered:
		v.Tone = "done"
	case models.OrderCancelled:
		v.Tone = "stopped"
		v.Explanation = cancellationText[o.Cancellation]
		if v.Explanation == "" {
			v.Explanation = "The order was cancelled before it was paid."
		}
	case models.OrderFailed:
		v.Tone = "stopped"
		v.Explanation = failedText
	case models.OrderShipped:
		if d := o.Shipment.EstimatedDelivery; d != "" {
			v.Next += " Estimated delivery: " + dateText(d) + "."
		}
	}
	v.RefundNotes = refundNotes(o, refunds, now)
	for _, r := range refunds {
		v.Refunds = append(v.Refunds, newRefundView(o, r))
	}

	if o.Status == models.OrderCreated {
		switch {
		case o.ShownPaymentStatus() == models.PaymentProcessing:
			v.Processing = true
			v.Next = "A payment was seen and is being credited: do not pay again. This page moves on within seconds."
		case !now.Before(o.PaymentExpiresAt):
			v.PaymentClosed = true
			v.Next = "The time to pay has run out; the order is being cancelled. Do not send a payment now."
		default:
			p, err := s.newPaymentView(o, now)
			if err != nil {
				return trackingView{}, err
			}
			v.Payment = p
		}
	}

	v.Parcels = parcelViews(o)
	for _, step := range o.TrackingSteps() {
		sv := stepView{Label: stepLabel[step.Name], Done: step.Completed}
		if step.At != nil {
			sv.At = *step.At
		}
		v.Steps = append(v.Steps, sv)
	}
	return v, nil
}

// newPaymentView is the payment instructions of an order waiting for
// payment: what is still due (all of it, unless part arrived), and a
// SEP-0007 link for that amount, so scanning the code after a partial
// payment does not ask for the full amount again.
func (s *Server) newPaymentView(o models.Order, now time.Time) (*paymentView, error) {
	due := models.AmountToPay(o)
	uri := s.payURIFor(o, due)
	qr, err := qrSVG(uri)
	if err != nil {
		return nil, err
	}
	left := o.PaymentExpiresAt.Sub(now)
	p := &paymentView{
		Amount: due.String(), Asset: o.PaymentAsset, Issuer: o.PaymentAssetIssuer,
		Network: networkName(o.PaymentNetwork), Address: o.PaymentAddress, Memo: o.PaymentMemo,
		// The link is built from the order's validated fields by PayURI,
		// which escapes each value; html/template would otherwise refuse
		// the web+stellar scheme.
		URI: template.URL(uri), QR: qr,
		Expires: o.PaymentExpiresAt, TimeLeft: timeLeft(left), Seconds: int64(left / time.Second),
	}
	if o.AmountReceived.IsPositive() {
		p.Received = o.AmountReceived.String()
	}
	return p, nil
}

func networkName(n string) string {
	switch n {
	case "pubnet":
		return "Stellar"
	case "testnet":
		return "Stellar testnet"
	case "sandbox":
		return "Memocart sandbox (test mode: no real money moves)"
	}
	return n
}

// dateText writes a provider's YYYY-MM-DD date the way the page writes
// times; anything else as it came.
func dateText(d string) string {
	t, err := time.Parse(time.DateOnly, d)
	if err != nil {
		return d
	}
	return t.Format("Mon 2 Jan 2006")
}

// timeLeft says how long remains to pay, rounded down to the minute.
func timeLeft(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute"
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// refundNotes say what money is owed back to the payer that no refund
// shows yet: a refund is created moments after the order owes the money
// (models.RefundsOwed), and until then the page says it is coming. A
// refund an operator recorded by hand (Order.RefundedAt) is said so; a
// stopped order that received nothing says nothing is owed.
func refundNotes(o models.Order, refunds []models.Refund, now time.Time) []string {
	var notes []string
	for _, r := range models.RefundsOwed(o, refunds, now) {
		notes = append(notes, fmt.Sprintf("%s %s received for this order is owed back to the payer. "+
			"The refund is being prepared and will appear on this page.", r.Amount, r.Asset))
	}
	if o.RefundedAt != nil {
		notes = append(notes, "The money received for this order was refunded.")
	}
	stopped := o.Status == models.OrderCancelled || o.Status == models.OrderFailed
	if stopped && len(notes) == 0 && len(refunds) == 0 && !o.AmountReceived.IsPositive() {
		notes = append(notes, "No payment was received for this order, so nothing is owed back.")
	}
	return notes
}

// newRefundView is refund r of order o as the page shows it. Only a sent
// refund's hash is shown: a payout still being sent, or refused, is
// nothing the payer can look up.
func newRefundView(o models.Order, r models.Refund) refundView {
	t, ok := refundText[r.Status]
	if !ok {
		t.label, t.tone = string(r.Status), "progress"
	}
	v := refundView{
		Amount: r.Amount.String() + " " + r.Asset, For: refundFor[r.Reason],
		Label: t.label, Tone: t.tone, Next: t.next,
	}
	switch r.Status {
	case models.RefundSent:
		if r.SentAt != nil {
			v.Next = "It was sent on " + utcText(*r.SentAt) + "."
		}
		v.Hash = r.TransactionHash
		v.Link = explorerLink(o.PaymentNetwork, r.TransactionHash)
	case models.RefundFailed:
		v.Failure = r.FailureReason
	}
	return v
}

// explorerNetworks names each Stellar network in stellar.expert's links.
// The sandbox is not in it: its hashes are on no chain.
var explorerNetworks = map[string]string{
	"pubnet":  "public",
	"testnet": "testnet",
}

// explorerLink returns the public explorer's page of transaction hash on
// an order's network, or "" in the sandbox, on a network it does not
// know, or for anything but a transaction hash (64 hex digits, as
// models.MarkRefundSent records it).
func explorerLink(network, hash string) string {
	n, ok := explorerNetworks[network]
	if !ok || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return ""
	}
	return "https://stellar.expert/explorer/" + n + "/tx/" + hash
}

// parcelViews lists the order's parcels as the provider reports them, or
// the order's one shipment when the provider reports none.
func parcelViews(o models.Order) []parcelView {
	var out []parcelView
	if o.Fulfilment != nil {
		for _, p := range o.Fulfilment.Parcels {
			pv := parcelView{
				Carrier: p.Carrier, TrackingNumber: p.TrackingNumber, Link: carrierLink(p.Carrier, p.TrackingNumber),
				Status: parcelLabel[p.Status], EstimatedDelivery: dateText(p.EstimatedDelivery),
			}
			// The message and time only: the scan's city and postcode are
			// left out, since the last scans are where the shopper lives.
			for _, cp := range p.Checkpoints {
				msg := cp.Message
				if msg == "" {
					msg = cp.Status
				}
				pv.Checkpoints = append(pv.Checkpoints, checkpointView{At: cp.At, Message: msg})
			}
			out = append(out, pv)
		}
	}
	if len(out) == 0 && o.Shipment.Carrier != "" {
		out = append(out, parcelView{
			Carrier: o.Shipment.Carrier, TrackingNumber: o.Shipment.TrackingNumber,
			Link:              carrierLink(o.Shipment.Carrier, o.Shipment.TrackingNumber),
			EstimatedDelivery: dateText(o.Shipment.EstimatedDelivery),
		})
	}
	return out
}
