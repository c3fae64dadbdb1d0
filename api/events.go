package api

import (
	"bytes"
	"encoding/json"

	"github.com/memocart/memocart/models"
)

// EventRenderer writes webhook event bodies with the code the API answers
// with: the order in an event is newOrderJSON's, exactly what
// GET /v1/orders/{id} returns (without its refunds, as lists show it),
// and the refund of a refund event newRefundJSON's, what
// GET /v1/refunds/{id} returns, so a field added there reaches webhook
// payloads too. The store calls it (sqlstore.EventRenderer) inside the
// transaction that records the fact, so the body shows the order as it
// was at that moment; it only needs the configuration the order's URLs
// are built from (PublicURL, Payments).
type EventRenderer struct{ s *Server }

// NewEventRenderer returns the renderer for an API configured by cfg.
func NewEventRenderer(cfg Config) *EventRenderer { return &EventRenderer{s: &Server{cfg: cfg}} }

// eventJSON is a webhook delivery's body (the OpenAPI document's
// WebhookEvent).
type eventJSON struct {
	ID        string           `json:"id"`
	Type      models.EventType `json:"type"`
	CreatedAt string           `json:"created_at"`
	Mode      models.Mode      `json:"mode"`
	Data      eventDataJSON    `json:"data"`
}

type eventDataJSON struct {
	Order   orderJSON         `json:"order"`
	Payment *eventPaymentJSON `json:"payment,omitempty"`
	// Refund is the refund of a refund event, destination included: the
	// receiver is the API client, who set it.
	Refund *refundJSON `json:"refund,omitempty"`
}

// eventPaymentJSON is the payment of a payment event.
type eventPaymentJSON struct {
	ID              string                     `json:"id"`
	Asset           string                     `json:"asset"`
	Amount          string                     `json:"amount"`
	Memo            string                     `json:"memo"`
	TransactionHash *string                    `json:"transaction_hash"`
	ReceivedAt      string                     `json:"received_at"`
	Outcome         models.PaymentEventOutcome `json:"outcome"`
}

// RenderEvent returns the body of ev about its subject (the order, and
// the payment of a payment event or the refund of a refund event): JSON
// as the API writes it (no HTML escaping), no trailing newline, as
// stored: a refund's claim_url holds a reference to its claim, never its
// token, which each delivery renders (sqlstore's WebhookDelivery).
func (r *EventRenderer) RenderEvent(ev models.Event, subject models.EventSubject) ([]byte, error) {
	body := eventJSON{
		ID: ev.ID, Type: ev.Type, CreatedAt: timestamp(ev.CreatedAt), Mode: ev.Mode,
		Data: eventDataJSON{Order: r.s.newOrderJSON(subject.Order)},
	}
	if p := subject.Payment; p != nil {
		body.Data.Payment = &eventPaymentJSON{
			ID: p.ID, Asset: p.Asset, Amount: p.Amount.String(), Memo: p.Memo, TransactionHash: optional(p.TxHash),
			ReceivedAt: timestamp(p.ReceivedAt), Outcome: p.Outcome,
		}
	}
	if rf := subject.Refund; rf != nil {
		js := r.s.newRefundJSON(*rf, ev.CreatedAt)
		if js.ClaimURL != nil {
			// The stored body names the claim; each delivery renders its
			// link while it works (models.RefundClaimRef).
			ref := models.RefundClaimRef(rf.Claim.Token)
			js.ClaimURL = &ref
		}
		body.Data.Refund = &js
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ClaimURL returns the claim page of a claim token: what a delivery
// renders a stored body's claim reference to.
func (r *EventRenderer) ClaimURL(token string) string { return r.s.claimURL(token) }

// EventRenderer returns the renderer of this server's configuration.
func (s *Server) EventRenderer() *EventRenderer { return &EventRenderer{s: s} }
