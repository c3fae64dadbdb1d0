package zinc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
)

// Headers of Zinc's webhook deliveries.
const (
	// SignatureHeader carries the HMAC-SHA256 of the raw body, keyed with
	// the endpoint's webhook secret (zn_whsec_...), hex encoded.
	SignatureHeader = "X-Webhook-Signature"
	// EventHeader repeats the event type.
	EventHeader = "X-Webhook-Event"
)

// webhookMAC is the signature scheme, in one place: HMAC-SHA256 over the
// raw body with the secret's bytes as the key, as Zinc documents it. The
// hex encoding and the secret used verbatim (zn_whsec_ prefix included)
// are assumptions. [verify]
func webhookMAC(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// SignWebhook returns the headers Zinc sends with body: what test servers
// use to sign exactly as VerifyWebhook checks.
func SignWebhook(secret string, body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(SignatureHeader, hex.EncodeToString(webhookMAC(secret, body)))
	return h
}

// VerifyWebhook checks that body was signed by Zinc with secret: the
// signature must match (compared in constant time; a "sha256=" prefix is
// tolerated). The body's age is not checked: Zinc documents no replay
// window, delivers at least once and may redeliver with the original
// timestamp. A delivery is only a hint to re-read the order from Zinc, so
// a replayed one costs a read, and its id (ParseWebhook) lets the
// receiver drop duplicates.
//
// The error wraps a models invalid_signature error; its text says what
// failed, for logs.
func VerifyWebhook(secret string, h http.Header, body []byte) error {
	if secret == "" {
		return invalidSignature("no webhook secret configured")
	}
	sig := strings.TrimSpace(h.Get(SignatureHeader))
	if sig == "" {
		return invalidSignature("no " + SignatureHeader + " header")
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
	if err != nil {
		return invalidSignature("signature is not hex")
	}
	if !hmac.Equal(got, webhookMAC(secret, body)) {
		return invalidSignature("signature does not match")
	}
	return nil
}

func invalidSignature(why string) error {
	return fmt.Errorf("zinc webhook: %s: %w", why, models.NewError(models.CodeInvalidSignature))
}

// payloadTimestamp reads the body's "timestamp": an RFC 3339 string as
// documented, or Unix seconds. ok is false when there is none.
func payloadTimestamp(body []byte) (at time.Time, ok bool, err error) {
	var p struct {
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return time.Time{}, false, fmt.Errorf("body is not a JSON object")
	}
	if len(p.Timestamp) == 0 || string(p.Timestamp) == "null" {
		return time.Time{}, false, nil
	}
	var s string
	if json.Unmarshal(p.Timestamp, &s) == nil {
		if t := parseTime(s); !t.IsZero() {
			return t, true, nil
		}
		return time.Time{}, false, fmt.Errorf("unreadable timestamp")
	}
	var secs int64
	if json.Unmarshal(p.Timestamp, &secs) == nil {
		return time.Unix(secs, 0).UTC(), true, nil
	}
	return time.Time{}, false, fmt.Errorf("unreadable timestamp")
}

// WebhookEvent is what a delivery says: which order changed, and how.
type WebhookEvent struct {
	// ID identifies the delivery for deduplication: Zinc's event id if it
	// sends one, otherwise "sha256:" and a digest of the body, which a
	// redelivery of the same event repeats.
	ID string
	// Type is the event: order.started, order.placed, order.failed,
	// order.tracking_received, order.delivered, order.cancelled, return.*.
	Type string
	// Ref is Zinc's order id.
	Ref string
	// OrderID is the Memocart order id from the order's metadata, when the
	// payload carries it; empty otherwise, and the order is then found by
	// Ref.
	OrderID string
	// Status is the order's status as the event reports it.
	Status string
	// At is the event's time; zero when absent.
	At time.Time
}

// FulfilmentEvent returns the event as the workflow's hint. Two kinds of
// event are no news to the workflow: order.started (Zinc began buying: the
// order is still pending, paid for the workflow, whose watch checks it on
// Zinc's advised schedule) and return.* (returns are not followed).
func (e WebhookEvent) FulfilmentEvent() models.FulfilmentEvent {
	return models.FulfilmentEvent{EventID: e.ID, Ref: e.Ref, OrderID: e.OrderID,
		NoNews: e.Type == "order.started" || strings.HasPrefix(e.Type, "return.")}
}

// ParseWebhook reads a delivery's body (verify it first). Zinc documents
// {event, order_id, status, timestamp, data}; the metadata the order was
// placed with is looked for in data and at the top level, and an event
// id in "id" and "event_id", none of which the documentation promises.
// [verify]
func ParseWebhook(body []byte) (WebhookEvent, error) {
	var p struct {
		ID        string          `json:"id"`
		EventID   string          `json:"event_id"`
		Event     string          `json:"event"`
		Type      string          `json:"type"`
		OrderID   string          `json:"order_id"`
		Status    string          `json:"status"`
		Timestamp json.RawMessage `json:"timestamp"`
		Metadata  map[string]any  `json:"metadata"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return WebhookEvent{}, fmt.Errorf("zinc webhook: body is not a JSON object: %w", models.NewError(models.CodeInvalidRequest))
	}
	e := WebhookEvent{ID: firstOf(p.ID, p.EventID), Type: firstOf(p.Event, p.Type), Ref: p.OrderID, Status: p.Status}
	if e.Type == "" || e.Ref == "" {
		return WebhookEvent{}, fmt.Errorf("zinc webhook: no event type or order id: %w", models.NewError(models.CodeInvalidRequest))
	}
	if e.ID == "" {
		sum := sha256.Sum256(body)
		e.ID = "sha256:" + hex.EncodeToString(sum[:16])
	}
	if at, ok, err := payloadTimestamp(body); err == nil && ok {
		e.At = at
	}
	var data struct {
		Metadata map[string]any `json:"metadata"`
	}
	_ = json.Unmarshal(p.Data, &data)
	for _, m := range []map[string]any{data.Metadata, p.Metadata} {
		if id, ok := m[MetaOrderID].(string); ok && id != "" {
			e.OrderID = id
			break
		}
	}
	return e, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
