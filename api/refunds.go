package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
)

// RefundStore is what the refund endpoints read.
type RefundStore interface {
	// RefundForAccount returns a refund of the account in the mode, else
	// models.ErrRefundNotFound.
	RefundForAccount(ctx context.Context, accountID string, mode models.Mode, id string) (models.Refund, error)
	// ListRefunds returns a page of refunds and whether more follow; an
	// unknown StartingAfter is models.ErrRefundNotFound.
	ListRefunds(ctx context.Context, q models.RefundListQuery) ([]models.Refund, bool, error)
	// RefundsForOrder returns an order's refunds, oldest first.
	RefundsForOrder(ctx context.Context, orderID string) ([]models.Refund, error)
}

// refundDestinationJSON is where a refund goes, as the client set it: an
// account and its memo, or to_sender (the paying account).
type refundDestinationJSON struct {
	Address  *string `json:"address"`
	MemoType *string `json:"memo_type"`
	Memo     *string `json:"memo"`
	ToSender bool    `json:"to_sender"`
}

func destinationJSON(d *models.RefundDestination) *refundDestinationJSON {
	if d == nil {
		return nil
	}
	return &refundDestinationJSON{Address: optional(d.Address), MemoType: optional(d.MemoType), Memo: optional(d.Memo), ToSender: d.ToSender}
}

// refundJSON is a refund (README: Refunds): money owed back and its way
// there. The destination and the claim_url are the API client's to see;
// the tracking page shows neither.
type refundJSON struct {
	ID              string                 `json:"id"`
	OrderID         *string                `json:"order_id"`
	PaymentIDs      []string               `json:"payment_ids"`
	Reason          models.RefundReason    `json:"reason"`
	Amount          string                 `json:"amount"`
	Asset           string                 `json:"asset"`
	Status          models.RefundStatus    `json:"status"`
	Destination     *refundDestinationJSON `json:"destination"`
	TransactionHash *string                `json:"transaction_hash"`
	FailureReason   *string                `json:"failure_reason"`
	// ClaimURL is the payer's claim page (claim.go), while the refund
	// waits for a destination and its claim works; null otherwise.
	ClaimURL    *string `json:"claim_url"`
	CreatedAt   string  `json:"created_at"`
	ApprovedAt  *string `json:"approved_at"`
	SentAt      *string `json:"sent_at"`
	FailedAt    *string `json:"failed_at"`
	CancelledAt *string `json:"cancelled_at"`
}

// newRefundJSON is refund r as the API client reads it at now, which
// decides whether its claim link still works.
func (s *Server) newRefundJSON(r models.Refund, now time.Time) refundJSON {
	js := refundJSON{
		ID: r.ID, OrderID: optional(r.OrderID), PaymentIDs: r.PaymentIDs, Reason: r.Reason,
		Amount: r.Amount.String(), Asset: r.Asset, Status: r.Status, Destination: destinationJSON(r.Destination),
		FailureReason: optional(r.FailureReason), CreatedAt: timestamp(r.CreatedAt),
		ApprovedAt: optionalTime(r.ApprovedAt), SentAt: optionalTime(r.SentAt), FailedAt: optionalTime(r.FailedAt),
		CancelledAt: optionalTime(r.CancelledAt),
	}
	if js.PaymentIDs == nil {
		js.PaymentIDs = []string{}
	}
	// The hash of a payout not known to be on the chain is ours alone: a
	// client sees one once the refund is sent (or a failed payout's).
	if r.Status == models.RefundSent || r.Status == models.RefundFailed {
		js.TransactionHash = optional(r.TransactionHash)
	}
	if models.RefundClaimable(r) && r.Claim.Live(now) {
		u := s.claimURL(r.Claim.Token)
		js.ClaimURL = &u
	}
	return js
}

// orderRefunds returns the refunds of o for its JSON: every refund the
// order has, whatever its payment status says now (a settled refund still
// shows how the money went back). An order no payment reached has none,
// and costs no read.
func (s *Server) orderRefunds(ctx context.Context, o models.Order) ([]refundJSON, error) {
	out := []refundJSON{}
	if len(o.Payments) == 0 {
		return out, nil
	}
	rs, err := s.deps.Store.RefundsForOrder(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	now := s.deps.Now()
	for _, r := range rs {
		out = append(out, s.newRefundJSON(r, now))
	}
	return out, nil
}

// getRefund is GET /v1/refunds/{id}.
func (s *Server) getRefund(c *gin.Context) {
	key := mustKey(c)
	s.refundAt(c, func(ctx context.Context, id string) (models.Refund, error) {
		return s.deps.Store.RefundForAccount(ctx, key.AccountID, key.Mode, id)
	})
}

// refundAt answers a request on the refund the path names: an id that
// cannot be a refund's is not found before act runs; act's refund is
// rendered as it then stands.
func (s *Server) refundAt(c *gin.Context, act func(ctx context.Context, id string) (models.Refund, error)) {
	id := c.Param("id")
	if !models.ValidID(models.RefundIDPrefix, id) {
		abort(c, models.ErrRefundNotFound)
		return
	}
	r, err := act(c.Request.Context(), id)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"refund": s.newRefundJSON(r, s.deps.Now())})
}

type failTestRefundRequest struct {
	Reason *string `json:"reason"`
}

// failTestRefund is POST /v1/test_helpers/refunds/{id}/fail: the test
// refund's next payout is refused as the network would refuse it, for the
// body's optional reason (models.TestPayoutRefusals, by default
// models.DefaultTestPayoutRefusal), through the refund's workflow;
// answers the refund as it stands. Test keys only.
func (s *Server) failTestRefund(c *gin.Context) {
	key, ok := testKey(c)
	if !ok {
		return
	}
	req := failTestRefundRequest{}
	if err := decodeOptionalJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	reason := models.DefaultTestPayoutRefusal
	if req.Reason != nil {
		reason = *req.Reason
	}
	s.refundAt(c, func(ctx context.Context, id string) (models.Refund, error) {
		return s.deps.Refunds.FailTestPayout(ctx, key.AccountID, key.Mode, id, reason)
	})
}

type refundListJSON = listJSON[refundJSON]

// listRefunds is GET /v1/refunds: the key's account's refunds in the key's
// mode, newest first, a page at a time, filtered by status or order.
func (s *Server) listRefunds(c *gin.Context) {
	key := mustKey(c)
	values := c.Request.URL.Query()
	page, err := parseListPage(values, []string{"order_id", "status"}, models.RefundIDPrefix, "a refund")
	if err != nil {
		abort(c, err)
		return
	}
	q := models.RefundListQuery{
		AccountID: key.AccountID, Mode: key.Mode, Limit: page.limit,
		CreatedGTE: page.createdGTE, CreatedLTE: page.createdLTE, StartingAfter: page.startingAfter,
	}
	if v, ok := page.get("status"); ok {
		q.Status = models.RefundStatus(v)
		if !q.Status.Valid() {
			abort(c, invalid("status", "status must be one of awaiting_destination, awaiting_approval, sending, sent, failed, cancelled"))
			return
		}
	}
	if v, ok := page.get("order_id"); ok {
		if !models.ValidID("ord", v) {
			abort(c, invalid("order_id", "order_id must be an order id (ord_…)"))
			return
		}
		q.OrderID = v
	}
	refunds, more, err := s.deps.Store.ListRefunds(c.Request.Context(), q)
	if err != nil {
		abort(c, listError(err, models.ErrRefundNotFound, "starting_after", "refunds"))
		return
	}
	now := s.deps.Now()
	data := each(refunds, func(r models.Refund) refundJSON { return s.newRefundJSON(r, now) })
	render(c, http.StatusOK, refundListJSON{Data: data, HasMore: more})
}

// refundDestinationRequest is the body of POST
// /v1/orders/{id}/refund_destination, and the refund_destination of POST
// /v1/orders.
type refundDestinationRequest struct {
	Address  string `json:"address"`
	MemoType string `json:"memo_type"`
	Memo     string `json:"memo"`
	ToSender bool   `json:"to_sender"`
}

// model is the destination as the models take it (Normalized).
func (r refundDestinationRequest) model() models.RefundDestination {
	return models.RefundDestination{Address: r.Address, MemoType: r.MemoType, Memo: r.Memo, ToSender: r.ToSender}.Normalized()
}

// setRefundDestination is POST /v1/orders/{id_or_number}/refund_destination
// (checkout.SetOrderRefundDestination): where the order's refunds go, now
// and later. Answers the order with its refunds.
func (s *Server) setRefundDestination(c *gin.Context) {
	key := mustKey(c)
	var req refundDestinationRequest
	if err := decodeJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	s.orderAt(c, func(ctx context.Context, ref string) (models.Order, error) {
		return s.deps.Refunds.SetOrderRefundDestination(ctx, checkout.SetOrderRefundDestinationRequest{
			AccountID: key.AccountID, Mode: key.Mode, Ref: ref, Destination: req.model(),
		})
	})
}

// renderOrder answers {"order": …} with the order's refunds.
func (s *Server) renderOrder(c *gin.Context, status int, o models.Order) {
	js := s.newOrderJSON(o)
	refunds, err := s.orderRefunds(c.Request.Context(), o)
	if err != nil {
		abort(c, err)
		return
	}
	js.Refunds = &refunds
	render(c, status, orderEnvelope{Order: js})
}

// orderEnvelope is the {"order": …} answer. A struct, not a gin.H: the
// encoder then walks a type it has cached instead of sorting a map's keys
// and reflecting on an interface each request (4 fewer allocations per
// GET /v1/orders/{id}; docs/benchmarks.md, "Reads").
type orderEnvelope struct {
	Order orderJSON `json:"order"`
}
