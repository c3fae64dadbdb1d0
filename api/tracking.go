package api

import (
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// The public tracking page behind tracking_url. Anyone holding the link
// can open it, so it shows the order's progress and, while the order waits
// for payment, what to pay and where: never the shopper's name, address,
// phone or e-mail, nor the words of whoever cancelled it or the provider's
// failure text (free text that may quote any of them). The order number is
// the only identifier on it.

//go:embed tracking.html
var trackingHTML string

// trackingTemplate renders every page of /track: an order, not found, and
// too many requests. html/template escapes each value for where it lands.
var trackingTemplate = template.Must(template.New("track").Funcs(template.FuncMap{
	"utc": func(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") },
}).Parse(trackingHTML))

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
	Refund      []string
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
	v, err := s.newTrackingView(o, s.deps.Now())
	if err != nil {
		s.trackingFailed(c, err)
		return
	}
	s.renderTracking(c, http.StatusOK, "order", "Order "+o.Number, v)
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

// renderTracking writes one of the page's templates with its security
// headers. The nonce lets the page's own inline style and script run under
// a policy that allows nothing else: no external resource, no injected
// script, no framing.
func (s *Server) renderTracking(c *gin.Context, status int, name, title string, data any) {
	nonce, err := newNonce()
	if err != nil {
		abort(c, err)
		return
	}
	var b strings.Builder
	if err := trackingTemplate.ExecuteTemplate(&b, name, pageData{Title: title, Nonce: nonce, Data: data}); err != nil {
		abort(c, fmt.Errorf("rendering tracking page: %w", err))
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+nonce+"'; script-src 'nonce-"+nonce+
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
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

// newTrackingView builds the order page. now decides the time left to pay.
func (s *Server) newTrackingView(o models.Order, now time.Time) (trackingView, error) {
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
	v.Refund = refundNotes(o)

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

// refundNotes say what money is owed back to the payer and what was
// already sent back. An overpayment and a payment in another asset are
// owed back whatever the order's status; a cancelled or failed order owes
// back everything it received.
func refundNotes(o models.Order) []string {
	var notes []string
	due := map[string]decimal.Decimal{}
	if d := models.AmountDueBack(o); d.IsPositive() {
		due[o.PaymentAsset] = d
	}
	for _, p := range o.Payments {
		if p.Outcome == models.DispositionWrongAsset && p.RefundedAt == nil {
			due[p.Asset] = due[p.Asset].Add(p.Amount)
		}
	}
	assets := make([]string, 0, len(due))
	for a := range due {
		assets = append(assets, a)
	}
	sort.Strings(assets)
	for _, a := range assets {
		notes = append(notes, fmt.Sprintf("%s %s received for this order is due back to the payer and will be returned to the account it came from.", due[a], a))
	}
	if o.PaymentStatus == models.PaymentRefunded || o.RefundedAt != nil {
		notes = append(notes, "The payment for this order was refunded to the account it came from.")
	}
	stopped := o.Status == models.OrderCancelled || o.Status == models.OrderFailed
	if stopped && len(notes) == 0 && !o.AmountReceived.IsPositive() {
		notes = append(notes, "No payment was received for this order, so nothing is owed back.")
	}
	return notes
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
