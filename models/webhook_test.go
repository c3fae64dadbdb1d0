package models

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWebhookURLPolicyAccepts(t *testing.T) {
	live := WebhookPolicyFor(ModeLive, true)
	test := WebhookPolicyFor(ModeTest, true)
	tests := []struct {
		policy WebhookURLPolicy
		in     string
		want   string
	}{
		{live, "https://hooks.example.com/memocart", "https://hooks.example.com/memocart"},
		{live, "HTTPS://Hooks.Example.COM/Path?Q=1", "https://hooks.example.com/Path?Q=1"},
		{live, "https://hooks.example.com:8443/x", "https://hooks.example.com:8443/x"},
		{live, "https://93.184.216.34/hook", "https://93.184.216.34/hook"},
		{live, "https://[2606:2800:220:1:248:1893:25c8:1946]/hook", "https://[2606:2800:220:1:248:1893:25c8:1946]/hook"},
		{live, "https://xn--bcher-kva.example/hook", "https://xn--bcher-kva.example/hook"},
		{live, "https://hooks.example.com./x", "https://hooks.example.com./x"},
		{test, "http://hooks.example.com/x", "http://hooks.example.com/x"},
		{test, "http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"},
		{test, "http://localhost:3000/hook", "http://localhost:3000/hook"},
		{test, "http://[::1]:3000/hook", "http://[::1]:3000/hook"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := tc.policy.CheckURL(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestWebhookURLPolicyRefuses(t *testing.T) {
	live := WebhookPolicyFor(ModeLive, true)
	test := WebhookPolicyFor(ModeTest, true)
	testNoLoopback := WebhookPolicyFor(ModeTest, false)
	assert.False(t, live.AllowLoopback, "a live key never gets loopback, whatever the deployment says")
	tests := []struct {
		name   string
		policy WebhookURLPolicy
		in     string
	}{
		{"empty", live, ""},
		{"http for live", live, "http://hooks.example.com/x"},
		{"no scheme", live, "hooks.example.com/x"},
		{"other scheme", live, "ftp://hooks.example.com/x"},
		{"javascript", test, "javascript:alert(1)"},
		{"file", test, "file:///etc/passwd"},
		{"gopher", test, "gopher://127.0.0.1:6379/_INFO"},
		{"opaque", live, "https:hooks.example.com"},
		{"no host", live, "https:///x"},
		{"too long", live, "https://hooks.example.com/" + strings.Repeat("a", MaxWebhookURLLength)},
		{"space", live, "https://hooks.example.com/a b"},
		{"newline", live, "https://hooks.example.com/\r\nHost: x"},
		{"backslash", live, `https://hooks.example.com\@127.0.0.1/`},
		{"non-ASCII host", live, "https://ⓛocalhost/"},
		{"userinfo", live, "https://user:pass@hooks.example.com/"},
		{"userinfo trick", live, "https://hooks.example.com@127.0.0.1/"},
		{"userinfo trick 2", test, "http://hooks.example.com:80@10.0.0.1/"},
		{"fragment", live, "https://hooks.example.com/#x"},
		{"fragment trick", live, "https://127.0.0.1#@hooks.example.com/"},
		{"bad port", live, "https://hooks.example.com:99999/"},
		{"empty port", live, "https://hooks.example.com:/"},
		{"loopback v4 live", live, "https://127.0.0.1/"},
		{"loopback v4 other", live, "https://127.1.2.3/"},
		{"loopback v6 live", live, "https://[::1]/"},
		{"localhost live", live, "https://localhost/"},
		{"sub.localhost live", live, "https://a.b.localhost/"},
		{"localhost test without loopback", testNoLoopback, "http://localhost:3000/"},
		{"loopback test without loopback", testNoLoopback, "http://127.0.0.1:3000/"},
		{"private 10", test, "http://10.0.0.1/"},
		{"private 172", test, "http://172.16.5.4/"},
		{"private 172 top", live, "https://172.31.255.255/"},
		{"private 192", test, "http://192.168.1.1/"},
		{"unique local", test, "http://[fd12:3456::1]/"},
		{"link-local", test, "http://169.254.1.1/"},
		{"link-local v6", test, "http://[fe80::1]/"},
		{"link-local v6 zone", test, "http://[fe80::1%25eth0]/"},
		{"metadata", test, "http://169.254.169.254/latest/meta-data/"},
		{"metadata v6", test, "http://[fd00:ec2::254]/"},
		{"azure wireserver", live, "https://168.63.129.16/"},
		{"cgnat", test, "http://100.64.0.1/"},
		{"cgnat top", test, "http://100.127.255.254/"},
		{"multicast", test, "http://224.0.0.1/"},
		{"multicast v6", test, "http://[ff02::1]/"},
		{"unspecified", test, "http://0.0.0.0/"},
		{"this network", test, "http://0.1.2.3/"},
		{"unspecified v6", test, "http://[::]/"},
		{"broadcast", test, "http://255.255.255.255/"},
		{"reserved", test, "http://240.0.0.1/"},
		{"documentation", live, "https://192.0.2.1/"},
		{"benchmarking", live, "https://198.18.0.1/"},
		{"mapped loopback", live, "https://[::ffff:127.0.0.1]/"},
		{"mapped private", test, "http://[::ffff:10.0.0.1]/"},
		{"mapped metadata hex", test, "http://[::ffff:a9fe:a9fe]/"},
		{"IPv4-compatible", test, "http://[::127.0.0.1]/"},
		{"NAT64 loopback", test, "http://[64:ff9b::7f00:1]/"},
		{"6to4", test, "http://[2002:7f00:1::]/"},
		{"teredo", test, "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"},
		{"documentation v6", live, "https://[2001:db8::1]/"},
		{"decimal", test, "http://2130706433/"},
		{"decimal metadata", test, "http://2852039166/"},
		{"hex", test, "http://0x7f000001/"},
		{"dotted hex", test, "http://0x7f.0x0.0x0.0x1/"},
		{"octal", test, "http://0177.0.0.1/"},
		{"leading zeros", test, "http://127.000.000.001/"},
		{"short form", test, "http://127.1/"},
		{"short form 2", test, "http://10.1/"},
		{"single label", live, "https://metadata/"},
		{"single label 2", live, "https://kubernetes/"},
		{"gce metadata", live, "https://metadata.google.internal/computeMetadata/v1/"},
		{"mdns", live, "https://printer.local/"},
		{"localdomain", live, "https://host.localdomain/"},
		{"home.arpa", live, "https://nas.home.arpa/"},
		{"reverse dns", live, "https://1.0.0.127.in-addr.arpa/"},
		{"bad label", live, "https://-bad.example.com/"},
		{"empty label", live, "https://a..example.com/"},
		{"bad v6", live, "https://[1.2.3.4]/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.policy.CheckURL(tc.in)
			require.Errorf(t, err, "accepted as %q", got)
			var me *Error
			require.True(t, errors.As(err, &me))
			assert.Equal(t, CodeInvalidWebhookURL, me.Code)
			assert.Equal(t, "url", me.Field)
			assert.NotContains(t, me.Message, "\n")
		})
	}
}

func TestWebhookCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
		ok       bool
	}{
		{"93.184.216.34", false, true},
		{"2606:2800:220:1:248:1893:25c8:1946", false, true},
		{"::ffff:93.184.216.34", false, true},
		{"127.0.0.1", true, true},
		{"::1", true, true},
		{"::ffff:127.0.0.1", true, true},
		{"127.0.0.1", false, false},
		{"10.0.0.1", true, false}, // loopback allowed means loopback only
		{"169.254.169.254", true, false},
		{"100.64.1.1", true, false},
		{"fc00::1", true, false},
		{"::ffff:192.168.0.1", true, false},
	} {
		err := WebhookURLPolicy{AllowLoopback: tc.loopback}.CheckAddr(netip.MustParseAddr(tc.addr))
		assert.Equalf(t, tc.ok, err == nil, "%s (loopback allowed: %v): %v", tc.addr, tc.loopback, err)
	}
	assert.Error(t, WebhookURLPolicy{}.CheckAddr(netip.Addr{}), "the zero address")
}

func TestWebhookSignature(t *testing.T) {
	secret := "whsec_0123456789abcdefghijABCDEFGHIJ01"
	body := []byte(`{"id":"evt_1","type":"order.paid"}`)
	at := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	header := SignWebhook(secret, at, body)
	require.Regexp(t, `^t=\d+,v1=[0-9a-f]{64}$`, header)
	assert.Equal(t, "t="+strconv.FormatInt(at.Unix(), 10), strings.Split(header, ",")[0])

	require.NoError(t, VerifyWebhookSignature(secret, header, body, at, WebhookTolerance))
	require.NoError(t, VerifyWebhookSignature(secret, header, body, at.Add(WebhookTolerance), WebhookTolerance), "at the edge of the tolerance")
	require.NoError(t, VerifyWebhookSignature(secret, header, body, at.Add(-time.Minute), WebhookTolerance), "a receiver clock a little behind")
	require.NoError(t, VerifyWebhookSignature(secret, "v1=00,"+header+",v0=zz", body, at, WebhookTolerance), "extra and unknown parts are ignored")

	flipped := bytes.Clone(body)
	flipped[len(flipped)-3] ^= 1
	sig := strings.Split(header, "v1=")[1]
	otherTS := "t=" + strconv.FormatInt(at.Unix()+1, 10) + ",v1=" + sig
	forged := SignWebhook("whsec_someoneelse0000000000000000000", at, body)
	for name, tc := range map[string]struct {
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		"tampered body":                 {header, flipped, at, ErrWebhookSignatureMismatch},
		"body with a trailing newline":  {header, append(bytes.Clone(body), '\n'), at, ErrWebhookSignatureMismatch},
		"another secret":                {forged, body, at, ErrWebhookSignatureMismatch},
		"timestamp moved":               {otherTS, body, at, ErrWebhookSignatureMismatch},
		"replayed after the tolerance":  {header, body, at.Add(WebhookTolerance + time.Second), ErrWebhookSignatureExpired},
		"from the future":               {header, body, at.Add(-WebhookTolerance - time.Second), ErrWebhookSignatureExpired},
		"no header":                     {"", body, at, ErrWebhookSignatureMissing},
		"no timestamp":                  {"v1=" + sig, body, at, ErrWebhookSignatureMissing},
		"no signature":                  {"t=" + strconv.FormatInt(at.Unix(), 10), body, at, ErrWebhookSignatureMissing},
		"timestamp not a number":        {"t=soon,v1=" + sig, body, at, ErrWebhookSignatureMissing},
		"signature upper-cased":         {strings.ToUpper(header), body, at, ErrWebhookSignatureMissing},
		"signature truncated":           {header[:len(header)-2], body, at, ErrWebhookSignatureMismatch},
		"replay with a fresh timestamp": {"t=" + strconv.FormatInt(at.Add(10*time.Minute).Unix(), 10) + ",v1=" + sig, body, at.Add(10 * time.Minute), ErrWebhookSignatureMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, VerifyWebhookSignature(secret, tc.header, tc.body, tc.now, WebhookTolerance), tc.want)
		})
	}
}

func TestEventID(t *testing.T) {
	a := EventID(EventOrderPaid, "ord_1")
	assert.True(t, ValidID("evt", a), a)
	assert.Equal(t, a, EventID(EventOrderPaid, "ord_1"), "the same fact, the same id")
	assert.NotEqual(t, a, EventID(EventOrderShipped, "ord_1"))
	assert.NotEqual(t, a, EventID(EventOrderPaid, "ord_2"))
	assert.NotEqual(t, EventID("a", "b\x00c"), EventID("a\x00b", "c"), "type and key cannot run into each other")
	d := DeliveryID("webhook-event-"+a, "we_1")
	assert.True(t, ValidID("dlv", d), d)
	assert.NotEqual(t, d, DeliveryID("webhook-event-"+a+"-resend-x", "we_1"))
}

func TestPaymentStatusEvent(t *testing.T) {
	d := decimal.RequireFromString
	typ, key, ok := PaymentStatusEvent("ord_1", d("0"), d("10.50"), PaymentPartial)
	require.True(t, ok)
	assert.Equal(t, EventPaymentPartial, typ)
	_, key2, _ := PaymentStatusEvent("ord_1", d("0"), d("10.5000"), PaymentPartial)
	assert.Equal(t, key, key2, "the amount is keyed in one notation")
	typ, _, ok = PaymentStatusEvent("ord_1", d("10"), d("30"), PaymentOverpaid)
	require.True(t, ok)
	assert.Equal(t, EventPaymentOverpaid, typ)
	for _, tc := range []struct {
		before, after string
		st            PaymentStatus
	}{
		{"10", "10", PaymentPartial},  // no new money: a status write
		{"10", "5", PaymentPartial},   // never backwards
		{"0", "20", PaymentConfirmed}, // exact: order.paid says it
		{"20", "20", PaymentRefundDue},
	} {
		_, _, ok := PaymentStatusEvent("ord_1", d(tc.before), d(tc.after), tc.st)
		assert.Falsef(t, ok, "%+v", tc)
	}
}

func TestRefundStatusEvent(t *testing.T) {
	sentAt := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	failedAt := time.Date(2026, 11, 22, 9, 0, 0, 123456789, time.UTC)
	r := Refund{ID: "rfd_1", Status: RefundSent, SentAt: &sentAt}
	typ, key, at, ok := RefundStatusEvent(RefundSending, r)
	require.True(t, ok)
	assert.Equal(t, EventRefundSent, typ)
	assert.Equal(t, "rfd_1", key, "sent happens once: keyed by the refund")
	assert.Equal(t, sentAt, at)
	_, key2, _, ok := RefundStatusEvent(RefundAwaitingDestination, r)
	require.True(t, ok, "an operator's mark-sent from any status")
	assert.Equal(t, key, key2)

	f := Refund{ID: "rfd_1", Status: RefundFailed, FailedAt: &failedAt}
	typ, key, at, ok = RefundStatusEvent(RefundSending, f)
	require.True(t, ok)
	assert.Equal(t, EventRefundFailed, typ)
	assert.Equal(t, "rfd_1/2026-11-22T09:00:00.123456Z", key, "keyed by the failure's time, to what both databases keep")
	assert.Equal(t, failedAt, at)
	later := failedAt.Add(time.Hour)
	f.FailedAt = &later
	_, key2, _, _ = RefundStatusEvent(RefundSending, f)
	assert.NotEqual(t, key, key2, "a second failure is another fact")

	for _, tc := range []struct {
		from RefundStatus
		r    Refund
	}{
		{RefundSent, r},   // a retried write: no move
		{RefundFailed, f}, // likewise
		{RefundAwaitingApproval, Refund{ID: "rfd_1", Status: RefundSending}},
		{RefundAwaitingDestination, Refund{ID: "rfd_1", Status: RefundAwaitingApproval}},
		{RefundFailed, Refund{ID: "rfd_1", Status: RefundCancelled}},
	} {
		_, _, _, ok := RefundStatusEvent(tc.from, tc.r)
		assert.Falsef(t, ok, "%s → %s", tc.from, tc.r.Status)
	}
}

func TestNormalizeEnabledEvents(t *testing.T) {
	got, err := NormalizeEnabledEvents([]string{"order.paid", "order.created", "order.paid", "payment.late"})
	require.NoError(t, err)
	assert.Equal(t, []EventType{EventOrderCreated, EventOrderPaid, EventPaymentLate}, got)
	got, err = NormalizeEnabledEvents([]string{"order.paid", "*"})
	require.NoError(t, err)
	assert.Equal(t, []EventType{EventAll}, got)
	for _, in := range [][]string{nil, {}, {"order.lost"}, {"ORDER.PAID"}, {""}} {
		_, err := NormalizeEnabledEvents(in)
		assert.Error(t, err, in)
	}
	e := WebhookEndpoint{EnabledEvents: []EventType{EventOrderPaid}}
	assert.True(t, e.Wants(EventOrderPaid))
	assert.False(t, e.Wants(EventOrderShipped))
	assert.True(t, WebhookEndpoint{EnabledEvents: []EventType{EventAll}}.Wants(EventPaymentLate))
	for _, s := range OrderSteps {
		assert.True(t, OrderEventType(s).Valid(), s)
	}
	assert.True(t, OrderEventType(OrderCancelled).Valid())
	assert.True(t, OrderEventType(OrderFailed).Valid())

	// The refund types are subscribable, listed last, and "*" has them.
	got, err = NormalizeEnabledEvents([]string{"refund.failed", "order.paid", "refund.sent", "refund.created"})
	require.NoError(t, err)
	assert.Equal(t, []EventType{EventOrderPaid, EventRefundCreated, EventRefundSent, EventRefundFailed}, got)
	assert.Equal(t, []EventType{EventRefundCreated, EventRefundSent, EventRefundFailed}, EventTypes[len(EventTypes)-3:])
	for _, typ := range []EventType{EventRefundCreated, EventRefundSent, EventRefundFailed} {
		assert.True(t, WebhookEndpoint{EnabledEvents: []EventType{EventAll}}.Wants(typ), typ)
	}
}

func TestNewWebhookSecret(t *testing.T) {
	a, err := NewWebhookSecret(rand.Reader)
	require.NoError(t, err)
	b, err := NewWebhookSecret(rand.Reader)
	require.NoError(t, err)
	assert.Regexp(t, `^whsec_[0-9A-Za-z]{32}$`, a)
	assert.NotEqual(t, a, b)
}
