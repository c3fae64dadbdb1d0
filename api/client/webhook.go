package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook delivery.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex>", where <hex> is
	// HMAC-SHA256(endpoint secret, "<t>.<raw body>"); there may be
	// several v1 values.
	SignatureHeader = "Memocart-Signature"
	// EventIDHeader repeats the event's id: deduplicate by it.
	EventIDHeader = "Memocart-Event-Id"
	// EventTypeHeader repeats the event's type.
	EventTypeHeader = "Memocart-Event-Type"
)

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, either way: an older delivery is a replay to refuse.
const DefaultTolerance = 5 * time.Minute

// Why VerifyWebhook refuses a delivery; test with errors.Is.
var (
	ErrSignatureMissing  = errors.New("memocart: no webhook signature: the header is missing or has no t= and v1= parts")
	ErrSignatureExpired  = errors.New("memocart: webhook signature timestamp outside the tolerance: a replay, or a clock far off")
	ErrSignatureMismatch = errors.New("memocart: no v1 webhook signature matches the body and timestamp")
)

// VerifyOption configures VerifyWebhook and ParseEvent.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	tolerance time.Duration
	now       func() time.Time
}

// WithTolerance sets how far the delivery's timestamp may be from now
// (DefaultTolerance otherwise); a tolerance of 0 or less keeps the default.
func WithTolerance(d time.Duration) VerifyOption {
	return func(c *verifyConfig) {
		if d > 0 {
			c.tolerance = d
		}
	}
}

// WithClock sets the clock the timestamp is checked against (time.Now
// otherwise).
func WithClock(now func() time.Time) VerifyOption {
	return func(c *verifyConfig) { c.now = now }
}

// VerifyWebhook checks a webhook delivery: payload is the raw request
// body, before any decoding; header the Memocart-Signature value; secret
// the endpoint's (whsec_…). The timestamp must be within the tolerance of
// the clock, and one v1 signature must be the HMAC-SHA256 of
// "<t>.<payload>" under secret, compared in constant time. The service's
// own check is models.VerifyWebhookSignature; this is the same rule.
func VerifyWebhook(payload []byte, header, secret string, opts ...VerifyOption) error {
	cfg := verifyConfig{tolerance: DefaultTolerance, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrSignatureMissing
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureMissing
	}
	if d := cfg.now().Sub(time.Unix(sec, 0)); d > cfg.tolerance || d < -cfg.tolerance {
		return ErrSignatureExpired
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(payload)
	want := []byte(hex.EncodeToString(mac.Sum(nil)))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// ParseEvent verifies a webhook delivery as VerifyWebhook does and
// decodes its body. Deliveries come at least once and in any order:
// deduplicate by the event's ID.
func ParseEvent(payload []byte, header, secret string, opts ...VerifyOption) (Event, error) {
	if err := VerifyWebhook(payload, header, secret, opts...); err != nil {
		return Event{}, err
	}
	var e Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return Event{}, fmt.Errorf("memocart: decoding the event: %w", err)
	}
	return e, nil
}
