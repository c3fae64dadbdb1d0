package models

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a webhook delivery.
const (
	// WebhookSignatureHeader carries "t=<unix seconds>,v1=<hex>", where
	// <hex> is HMAC-SHA256(endpoint secret, "<t>.<body>").
	WebhookSignatureHeader = "Memocart-Signature"
	// WebhookEventIDHeader repeats the event's id, for deduplication.
	WebhookEventIDHeader = "Memocart-Event-Id"
	// WebhookEventTypeHeader repeats the event's type.
	WebhookEventTypeHeader = "Memocart-Event-Type"
)

// WebhookTolerance is how far a delivery's timestamp may be from the
// receiver's clock: older deliveries are replays to refuse.
const WebhookTolerance = 5 * time.Minute

// WebhookHeader is a delivery's headers: body, the event of id and type,
// signed with secret at now, and the event's id and type repeated. Every
// delivery is sent with it: the service's, and devstack listen's.
func WebhookHeader(secret string, now time.Time, id string, typ EventType, body []byte) http.Header {
	h := http.Header{}
	h.Set(WebhookSignatureHeader, SignWebhook(secret, now, body))
	h.Set(WebhookEventIDHeader, id)
	h.Set(WebhookEventTypeHeader, string(typ))
	return h
}

// SignWebhook returns the signature header value of body sent at t.
func SignWebhook(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + webhookMAC(secret, ts, body)
}

func webhookMAC(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Why VerifyWebhookSignature refuses a delivery.
var (
	ErrWebhookSignatureMissing  = errors.New("no signature: the header is missing or has no t= and v1= parts")
	ErrWebhookSignatureExpired  = errors.New("signature timestamp outside the tolerance: a replay, or a clock far off")
	ErrWebhookSignatureMismatch = errors.New("no v1 signature matches the body and timestamp")
)

// VerifyWebhookSignature checks a delivery as a receiver must: header is
// the Memocart-Signature value, body the raw request body (before any JSON
// decoding), now the receiver's clock. The timestamp must be within
// tolerance of now (either way), and one v1 signature must equal the
// HMAC-SHA256 of "<t>.<body>" under secret, compared in constant time.
// README.md's verification snippet is this function.
func VerifyWebhookSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
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
		return ErrWebhookSignatureMissing
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrWebhookSignatureMissing
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrWebhookSignatureExpired
	}
	want := []byte(webhookMAC(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrWebhookSignatureMismatch
}
