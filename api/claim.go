package api

import (
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
)

// The payer's claim page behind a refund's claim_url: the payer, who has
// no key, says where a refund goes. The token in the path is the only
// credential (models.RefundClaim): 256 random bits, single-use, 30 days.
// Anyone holding the link may use it, so the page shows the refund's
// amount and asset (and, for a failed payout, why it was refused) and
// nothing else: no order, no personal data, no destination of anyone,
// not even the one a failed payout went to.
//
// No CSRF token: the page has no session and sets no cookie, so a request
// forged from another site carries no authority the forger lacks; the
// authority is the token in the path, and a forger who knows it can use
// it without the payer's browser. The policy's form-action 'self' and
// frame-ancestors 'none' keep the form from being pointed elsewhere or
// framed, and no-referrer keeps the link out of Referer headers.

//go:embed claim.html
var claimHTML string

// claimTemplate renders every page of /claim: the form, the confirmation,
// and a message (not found, in use, too many requests, a failure).
var claimTemplate = template.Must(template.New("claim").Parse(claimHTML))

// claimTokenRoute is what traces record of a claim request's path in
// place of the token.
const claimTokenRoute = "/claim/{token}"

// claimURL is the claim page of token under PublicURL.
func (s *Server) claimURL(token string) string {
	return strings.TrimRight(s.cfg.PublicURL, "/") + "/claim/" + token
}

// claimMemoTypes are the memo types the form offers, in its order.
var claimMemoTypes = []struct{ Value, Label string }{
	{"none", "No memo"},
	{"text", "Text"},
	{"id", "ID (a number)"},
	{"hash", "Hash (64 hex digits)"},
}

// claimView is what the form shows.
type claimView struct {
	Amount string // with its asset: "12.5 USDC"
	// Trustline: the asset needs a trustline (USDC), said next to the
	// address.
	Trustline bool
	Test      bool
	// Failure is why the last payout was refused, for a failed refund.
	Failure string
	// Error is why the submitted destination was refused, and Field the
	// input it is about ("address", "memo_type", "memo").
	Error string
	Field string
	// Address, MemoType and Memo are what the payer submitted, shown back
	// with a refusal; empty on the first view.
	Address   string
	MemoType  string
	Memo      string
	MemoTypes []struct{ Value, Label string }
}

// claimDoneView is the confirmation.
type claimDoneView struct {
	Amount string
	Test   bool
}

// hideClaimToken, the first handler of the claim routes, replaces the
// request's path in its trace with the route before anything else runs
// (a rate limit's refusal included): the token is a credential, and
// traces are kept and shown to operators. Logs and metrics already name
// the route only.
func hideClaimToken(c *gin.Context) {
	trace.SpanFromContext(c.Request.Context()).SetAttributes(attribute.String("url.path", claimTokenRoute))
}

// claimPage is GET /claim/{token}: the form.
func (s *Server) claimPage(c *gin.Context) {
	r, err := s.deps.Refunds.RefundByClaim(c.Request.Context(), c.Param("token"))
	if err != nil {
		s.claimLookupFailed(c, err)
		return
	}
	s.renderClaim(c, http.StatusOK, "form", "Your refund", newClaimView(r))
}

// claimFormLimit bounds the form's body: three short fields.
const claimFormLimit = 4 << 10

// claimSubmit is POST /claim/{token}: the form's answer
// (application/x-www-form-urlencoded). A destination refused, by its
// shape or by the network, shows the form again with the reason (422);
// one set shows the confirmation.
func (s *Server) claimSubmit(c *gin.Context) {
	ctx := c.Request.Context()
	token := c.Param("token")
	r, err := s.deps.Refunds.RefundByClaim(ctx, token)
	if err != nil {
		s.claimLookupFailed(c, err)
		return
	}
	v := newClaimView(r)
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, claimFormLimit)
	if err := c.Request.ParseForm(); err != nil {
		v.Error = "The form could not be read. Enter the address again."
		s.renderClaim(c, http.StatusUnprocessableEntity, "form", "Your refund", v)
		return
	}
	form := c.Request.PostForm
	v.Address = strings.TrimSpace(form.Get("address"))
	v.MemoType = form.Get("memo_type")
	v.Memo = strings.TrimSpace(form.Get("memo"))
	d := models.RefundDestination{Address: v.Address, MemoType: v.MemoType, Memo: v.Memo}.Normalized()
	var got models.Refund
	if name, n := repeated(form); n > 1 {
		// The form sends each field once; a second value is not guessed
		// between (as JSON bodies refuse a key given twice).
		err = models.FieldError(models.CodeInvalidRefundDestination, "refund_destination."+name, "The form sent %s %d times: enter it once", name, n)
	} else if !claimMemoType(v.MemoType) {
		err = models.FieldError(models.CodeInvalidRefundDestination, "refund_destination.memo_type", "Choose a memo type from the list")
	} else {
		got, err = s.deps.Refunds.ClaimRefund(ctx, checkout.ClaimRefundRequest{Token: token, Destination: d})
	}
	var refused *models.Error
	switch {
	case err == nil:
		s.renderClaim(c, http.StatusOK, "done", "Refund address received",
			claimDoneView{Amount: got.Amount.String() + " " + got.Asset, Test: got.Mode == models.ModeTest})
	case errors.Is(err, checkout.ErrRefundClaimInUse):
		s.renderClaimMessage(c, http.StatusConflict, "This link is being used right now",
			"An address sent with this link a moment ago is being checked. Wait a minute, then reload this page to see whether it was accepted.")
	case errors.As(err, &refused) && (refused.Code == models.CodeInvalidRefundDestination || refused.Code == models.CodeInvalidRequest):
		// The reason is written for the payer, and never repeats the
		// address (models.ValidateRefundDestination, the network check).
		v.Error = refused.Message
		v.Field = strings.TrimPrefix(refused.Field, "refund_destination.")
		s.renderClaim(c, http.StatusUnprocessableEntity, "form", "Your refund", v)
	case errors.As(err, &refused) && (refused.Code == models.CodeRefundNotFound || refused.Code == models.CodeInvalidRefundState):
		// The refund moved meanwhile (the shop set the destination, an
		// operator settled it): the link no longer works.
		s.claimNotFound(c)
	default:
		s.claimFailed(c, err)
	}
}

// claimMemoType reports whether the form offers memo type t (empty: the
// default, no memo).
func claimMemoType(t string) bool {
	if t == "" {
		return true
	}
	for _, m := range claimMemoTypes {
		if m.Value == t {
			return true
		}
	}
	return false
}

// newClaimView is the form of refund r.
func newClaimView(r models.Refund) claimView {
	v := claimView{
		Amount: r.Amount.String() + " " + r.Asset, Trustline: r.Asset == "USDC", Test: r.Mode == models.ModeTest,
		MemoType: "none", MemoTypes: claimMemoTypes,
	}
	if r.Status == models.RefundFailed {
		v.Failure = r.FailureReason
	}
	return v
}

// claimLookupFailed answers a link that cannot be served: 404 for one
// that does not work, whatever the reason, or the failure to read it.
func (s *Server) claimLookupFailed(c *gin.Context, err error) {
	if errors.Is(err, models.ErrRefundNotFound) {
		s.claimNotFound(c)
		return
	}
	s.claimFailed(c, err)
}

// claimNotFound answers a link that does not work: unknown, expired,
// used, replaced by a newer one, or of a refund that no longer waits for
// an address. The page does not say which: the link's holder learns
// nothing about any refund from it.
func (s *Server) claimNotFound(c *gin.Context) {
	s.renderClaimMessage(c, http.StatusNotFound, "This link does not work",
		"It may have expired, been used already, or been replaced by a newer link. "+
			"If you already entered your address, nothing more is needed. Otherwise, ask the shop you paid for a new link.")
}

// claimFailed answers a failure as a page, as trackingFailed does: 503
// with Retry-After when a dependency is down, 500 for a bug (logged with
// the request id by classify). A submission that failed so may still have
// set the destination (a timeout waiting for the workflow): reloading the
// page tells, since a used link no longer works.
func (s *Server) claimFailed(c *gin.Context, err error) {
	const after = " If an address you sent went through meanwhile, this link no longer works and nothing more is needed."
	me := classify(c, err)
	status := StatusOf(me.Code)
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", retryAfterUnavailable)
		s.renderClaimMessage(c, status, "Refunds are unavailable for a moment", "Reload this page in a minute."+after)
		return
	}
	s.renderClaimMessage(c, http.StatusInternalServerError, "Something went wrong",
		"Reload this page and try again."+after+" If this keeps happening, contact the shop you paid.")
}

// renderClaimMessage answers a page with a title and one paragraph.
func (s *Server) renderClaimMessage(c *gin.Context, status int, title, detail string) {
	s.renderClaim(c, status, "message", title, map[string]string{"Title": title, "Detail": detail})
}

// renderClaim writes one of the claim page's templates with the tracking
// page's security headers, but for form-action 'self': the form posts
// back to its own URL and nowhere else.
func (s *Server) renderClaim(c *gin.Context, status int, name, title string, data any) {
	renderPage(c, claimTemplate, "claim page", "'self'", status, name, pageData{Title: title, Data: data})
}
