package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testSecret = "whsec_0123456789abcdefghijklmnopqrstuv"

// sign is the service's signature of body at t (models.SignWebhook).
func sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// TestVerifyWebhookKnownSignature checks a signature computed outside Go
// (Python's hmac), so the check and the test's signer cannot share a
// mistake.
func TestVerifyWebhookKnownSignature(t *testing.T) {
	body := []byte(`{"id":"evt_AAAAAAAAAAAAAAAAAAAAAAAA"}`)
	header := "t=1795000000,v1=b5ddd1d0baa39300420f945bc0e731f948318500d6ba45407ce888bd859991dd"
	clock := WithClock(func() time.Time { return time.Unix(1795000000+60, 0) })
	if err := VerifyWebhook(body, header, testSecret, clock); err != nil {
		t.Errorf("the known signature: %v", err)
	}
	if got := sign(testSecret, time.Unix(1795000000, 0), body); got != header {
		t.Errorf("the test's signer gives %s, want %s", got, header)
	}
}

func TestVerifyWebhook(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 4, 41, 0, time.UTC)
	body := []byte(`{"id":"evt_T7cYw1QnLk0ZbR4pXv9sMf2D","type":"refund.sent"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	valid := sign(testSecret, now, body)
	sig := valid[len(valid)-64:]
	wrong := sign("whsec_another", now, body)
	wrongSig := wrong[len(wrong)-64:]
	for _, tc := range []struct {
		name   string
		body   []byte
		header string
		opts   []VerifyOption
		want   error
	}{
		{"valid", body, valid, nil, nil},
		{"valid, spaces after commas", body, "t=" + ts + ", v1=" + sig, nil, nil},
		{"wrong secret", body, wrong, nil, ErrSignatureMismatch},
		{"tampered body", []byte(`{"id":"evt_T7cYw1QnLk0ZbR4pXv9sMf2D","type":"refund.failed"}`), valid, nil, ErrSignatureMismatch},
		{"timestamp changed", body, "t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + sig, nil, ErrSignatureMismatch},
		{"six minutes old", body, sign(testSecret, now.Add(-6*time.Minute), body), nil, ErrSignatureExpired},
		{"six minutes ahead", body, sign(testSecret, now.Add(6*time.Minute), body), nil, ErrSignatureExpired},
		{"four minutes old", body, sign(testSecret, now.Add(-4*time.Minute), body), nil, nil},
		{"six minutes old, tolerance 10", body, sign(testSecret, now.Add(-6*time.Minute), body), []VerifyOption{WithTolerance(10 * time.Minute)}, nil},
		{"two minutes old, tolerance 1", body, sign(testSecret, now.Add(-2*time.Minute), body), []VerifyOption{WithTolerance(time.Minute)}, ErrSignatureExpired},
		{"several signatures, matching first", body, "t=" + ts + ",v1=" + sig + ",v1=" + wrongSig, nil, nil},
		{"several signatures, matching last", body, "t=" + ts + ",v1=" + wrongSig + ",v1=" + sig, nil, nil},
		{"several signatures, none matching", body, "t=" + ts + ",v1=" + wrongSig + ",v1=" + sig[:63] + "x", nil, ErrSignatureMismatch},
		{"no header", body, "", nil, ErrSignatureMissing},
		{"no v1", body, "t=" + ts, nil, ErrSignatureMissing},
		{"no t", body, "v1=" + sig, nil, ErrSignatureMissing},
		{"t not a number", body, "t=soon,v1=" + sig, nil, ErrSignatureMissing},
		{"upper-case hex", body, "t=" + ts + ",v1=" + strings.ToUpper(sig), nil, ErrSignatureMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]VerifyOption{WithClock(func() time.Time { return now })}, tc.opts...)
			if err := VerifyWebhook(tc.body, tc.header, testSecret, opts...); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("VerifyWebhook = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestParseEvent decodes a verified delivery into its typed event, and
// refuses an unverified one without decoding it.
func TestParseEvent(t *testing.T) {
	body, err := os.ReadFile("testdata/refund_sent.json")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 1, 4, 41, 0, time.UTC)
	clock := WithClock(func() time.Time { return now })
	e, err := ParseEvent(body, sign(testSecret, now, body), testSecret, clock)
	if err != nil {
		t.Fatal(err)
	}
	o, r := e.Data.Order, e.Data.Refund
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"id", e.ID, "evt_T7cYw1QnLk0ZbR4pXv9sMf2D"},
		{"type", e.Type, EventRefundSent},
		{"created_at", e.CreatedAt, time.Date(2026, 11, 22, 1, 4, 40, 0, time.UTC)},
		{"mode", e.Mode, "test"},
		{"order status", o.Status, OrderFailed},
		{"order total", o.Total.String(), "409.47"},
		{"payment amount", o.Payment.Amount.String(), "409.47"},
		{"failure reason", *o.FailureReason, "The product could not be bought."},
		{"cancellation reason", o.CancellationReason == nil, true},
		{"estimated delivery", o.Tracking.EstimatedDelivery.String(), "2026-11-25"},
		{"step timestamp", o.Tracking.Steps[1].Timestamp.Equal(time.Date(2026, 11, 22, 0, 21, 2, 0, time.UTC)), true},
		{"step not reached", o.Tracking.Steps[2].Timestamp == nil, true},
		{"metadata", o.Metadata["erp"], "77"},
		{"no payment", e.Data.Payment == nil, true},
		{"refund amount", r.Amount.String(), "409.47"},
		{"refund memo", *r.Destination.Memo, "42"},
		{"refund sent at", r.SentAt.Equal(e.CreatedAt), true},
		{"refund failed at", r.FailedAt == nil, true},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	if _, err := ParseEvent(body, sign("whsec_another", now, body), testSecret, clock); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("a forged delivery: %v, want ErrSignatureMismatch", err)
	}
	bad := []byte(`{"id":`)
	if _, err := ParseEvent(bad, sign(testSecret, now, bad), testSecret, clock); err == nil {
		t.Error("a signed body that is not an event parsed")
	}
}
