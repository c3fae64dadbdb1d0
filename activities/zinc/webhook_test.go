package zinc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

const testSecret = "zn_whsec_0123456789abcdefghijklmn"

var webhookNow = time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC)

// placedEvent is Zinc's documented order.placed example.
const placedEvent = `{
  "event": "order.placed",
  "order_id": "550e8400-e29b-41d4-a716-446655440000",
  "status": "order_placed",
  "timestamp": "2026-01-15T14:30:00Z",
  "data": {"price_components": {"subtotal": 1999, "shipping": 499, "tax": 150, "total": 2648}}
}`

func TestSignWebhookIsHMACSHA256OfTheBody(t *testing.T) {
	// Computed independently of webhookMAC, as Zinc documents it.
	m := hmac.New(sha256.New, []byte(testSecret))
	m.Write([]byte(placedEvent))
	h := SignWebhook(testSecret, []byte(placedEvent))
	assert.Equal(t, hex.EncodeToString(m.Sum(nil)), h.Get(SignatureHeader))
	assert.Equal(t, "application/json", h.Get("Content-Type"))
}

func TestVerifyWebhook(t *testing.T) {
	body := []byte(placedEvent)
	signed := SignWebhook(testSecret, body)
	withSig := func(sig string) http.Header {
		h := http.Header{}
		h.Set(SignatureHeader, sig)
		return h
	}
	// Zinc documents no replay window and redelivers with the original
	// timestamp: a delivery hours or days old, or with an odd timestamp,
	// is still Zinc's if the signature matches.
	resigned := func(ts string) ([]byte, http.Header) {
		b := []byte(strings.Replace(placedEvent, "2026-01-15T14:30:00Z", ts, 1))
		return b, SignWebhook(testSecret, b)
	}
	redelivered, redeliveredSig := resigned("2026-01-12T09:00:00Z")
	future, futureSig := resigned("2026-01-15T14:35:01Z")
	garbled, garbledSig := resigned("yesterday")
	noTimestamp := []byte(`{"event":"order.placed","order_id":"550e8400-e29b-41d4-a716-446655440000"}`)
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		ok     bool
	}{
		{"signed", testSecret, signed, body, true},
		{"sha256= prefix", testSecret, withSig("sha256=" + signed.Get(SignatureHeader)), body, true},
		{"upper-case hex", testSecret, withSig(strings.ToUpper(signed.Get(SignatureHeader))), body, true},
		{"no timestamp in the body", testSecret, SignWebhook(testSecret, noTimestamp), noTimestamp, true},
		{"redelivered days later with its original timestamp", testSecret, redeliveredSig, redelivered, true},
		{"a timestamp ahead of the receiver's clock", testSecret, futureSig, future, true},
		{"an unreadable timestamp", testSecret, garbledSig, garbled, true},
		{"an old timestamp, tampered", testSecret, signed, redelivered, false},
		{"tampered body", testSecret, signed, []byte(strings.Replace(placedEvent, "2648", "1", 1)), false},
		{"wrong secret", "zn_whsec_another", signed, body, false},
		{"no signature", testSecret, http.Header{}, body, false},
		{"not hex", testSecret, withSig("not-a-signature"), body, false},
		{"truncated signature", testSecret, withSig(signed.Get(SignatureHeader)[:32]), body, false},
		{"no secret configured", "", signed, body, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyWebhook(tt.secret, tt.header, tt.body)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, models.NewError(models.CodeInvalidSignature))
			assert.Equal(t, models.CodeInvalidSignature, models.CodeOf(err))
		})
	}
}

func TestParseWebhook(t *testing.T) {
	tests := []struct {
		name string
		body string
		want WebhookEvent
	}{
		{
			name: "documented payload",
			body: placedEvent,
			want: WebhookEvent{Type: "order.placed", Ref: "550e8400-e29b-41d4-a716-446655440000", Status: "order_placed", At: webhookNow},
		},
		{
			name: "metadata in data",
			body: `{"event":"order.tracking_received","order_id":"z1","status":"order_placed","timestamp":"2026-01-15T14:30:00Z",
				"data":{"metadata":{"memocart_order_id":"ord_abc","attempt":1}}}`,
			want: WebhookEvent{Type: "order.tracking_received", Ref: "z1", OrderID: "ord_abc", Status: "order_placed", At: webhookNow},
		},
		{
			name: "event id and top-level metadata",
			body: `{"id":"evt_1","type":"order.failed","order_id":"z2","metadata":{"memocart_order_id":"ord_def"}}`,
			want: WebhookEvent{ID: "evt_1", Type: "order.failed", Ref: "z2", OrderID: "ord_def"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWebhook([]byte(tt.body))
			require.NoError(t, err)
			if tt.want.ID == "" {
				assert.True(t, strings.HasPrefix(got.ID, "sha256:"), got.ID)
				got.ID = ""
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestWebhookNoNews(t *testing.T) {
	for typ, want := range map[string]bool{
		"order.started": true, "return.created": true, "return.credited": true,
		"order.placed": false, "order.failed": false, "order.tracking_received": false,
		"order.tracking_updated": false, "order.delivered": false, "order.cancelled": false,
	} {
		ev := WebhookEvent{ID: "evt", Type: typ, Ref: "z1"}.FulfilmentEvent()
		assert.Equal(t, want, ev.NoNews, typ)
		assert.Equal(t, "z1", ev.Ref, typ)
	}
}

func TestParseWebhookIDDeduplicatesRedeliveries(t *testing.T) {
	a, err := ParseWebhook([]byte(placedEvent))
	require.NoError(t, err)
	again, err := ParseWebhook([]byte(placedEvent))
	require.NoError(t, err)
	other, err := ParseWebhook([]byte(strings.Replace(placedEvent, "order.placed", "order.delivered", 1)))
	require.NoError(t, err)
	assert.Equal(t, a.ID, again.ID)
	assert.NotEqual(t, a.ID, other.ID)
	assert.Equal(t, models.FulfilmentEvent{EventID: a.ID, Ref: "550e8400-e29b-41d4-a716-446655440000"}, a.FulfilmentEvent())
}

func TestParseWebhookRejects(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":    `event=order.placed`,
		"no order id": `{"event":"order.placed"}`,
		"no event":    `{"order_id":"z1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseWebhook([]byte(body))
			assert.Error(t, err)
		})
	}
}
