package webhooks

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// fakeResolver answers from a table; a name not in it does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// receiver is a test server counting what reaches it.
type receiver struct {
	*httptest.Server
	hits   atomic.Int32
	header atomic.Pointer[http.Header]
	host   atomic.Pointer[string]
	body   atomic.Pointer[string]
}

func newReceiver(t *testing.T, tlsServer bool, h http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		hd := req.Header.Clone()
		r.header.Store(&hd)
		host := req.Host
		r.host.Store(&host)
		b, _ := io.ReadAll(req.Body)
		s := string(b)
		r.body.Store(&s)
		if h != nil {
			h(w, req)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if tlsServer {
		r.Server = httptest.NewTLSServer(handler)
	} else {
		r.Server = httptest.NewServer(handler)
	}
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) port(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(r.URL)
	require.NoError(t, err)
	return u.Port()
}

func send(t *testing.T, s *Sender, mode models.Mode, rawURL string) (int, error) {
	t.Helper()
	h := http.Header{}
	h.Set(models.WebhookEventIDHeader, "evt_1")
	return s.Send(context.Background(), mode, rawURL, h, []byte(`{"id":"evt_1"}`))
}

func TestSenderDeliversToAllowedAddresses(t *testing.T) {
	rcv := newReceiver(t, false, nil)
	s := NewSender(Config{TestLoopback: true, Resolver: fakeResolver{"hooks.example.com": {"127.0.0.1"}}})
	status, err := send(t, s, models.ModeTest, rcv.URL+"/hook")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, status)
	h := *rcv.header.Load()
	assert.Equal(t, "evt_1", h.Get(models.WebhookEventIDHeader))
	assert.Equal(t, "application/json", h.Get("Content-Type"))
	assert.Equal(t, UserAgent, h.Get("User-Agent"))
	assert.Equal(t, `{"id":"evt_1"}`, *rcv.body.Load())

	// By name: the host is resolved here and the checked address dialled;
	// the request still names the host.
	status, err = send(t, s, models.ModeTest, "http://hooks.example.com:"+rcv.port(t)+"/hook")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, "hooks.example.com:"+rcv.port(t), *rcv.host.Load())
	assert.Equal(t, int32(2), rcv.hits.Load())
}

func TestSenderRefusesWhatThePolicyRefuses(t *testing.T) {
	plain := newReceiver(t, false, nil)
	secure := newReceiver(t, true, nil)
	resolver := fakeResolver{
		"rebind.example.com":   {"127.0.0.1"},
		"half.example.com":     {"93.184.216.34", "127.0.0.1"},
		"private.example.com":  {"10.1.2.3"},
		"metadata.example.com": {"169.254.169.254"},
		"mapped.example.com":   {"::ffff:127.0.0.1"},
	}
	strictTest := NewSender(Config{TestLoopback: false, Resolver: resolver, TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig})
	loose := NewSender(Config{TestLoopback: true, Resolver: resolver, TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig})
	for _, tc := range []struct {
		name string
		s    *Sender
		mode models.Mode
		url  string
	}{
		{"live, loopback address", loose, models.ModeLive, secure.URL},
		{"live, http", loose, models.ModeLive, plain.URL},
		{"live, a name resolving to loopback", loose, models.ModeLive, "https://rebind.example.com:" + secure.port(t)},
		{"live, a name resolving to loopback, IPv4-mapped", loose, models.ModeLive, "https://mapped.example.com:" + secure.port(t)},
		{"live, one of the addresses loopback", loose, models.ModeLive, "https://half.example.com:" + secure.port(t)},
		{"test without loopback, loopback address", strictTest, models.ModeTest, plain.URL},
		{"test without loopback, localhost", strictTest, models.ModeTest, "http://localhost:" + plain.port(t)},
		{"test without loopback, a name resolving to loopback", strictTest, models.ModeTest, "http://rebind.example.com:" + plain.port(t)},
		{"test, a name resolving to a private address", loose, models.ModeTest, "http://private.example.com:" + plain.port(t)},
		{"test, a name resolving to the metadata address", loose, models.ModeTest, "http://metadata.example.com/latest/meta-data"},
		{"test, a private address", loose, models.ModeTest, "http://10.1.2.3:" + plain.port(t)},
		{"test, decimal loopback", strictTest, models.ModeTest, "http://2130706433:" + plain.port(t)},
		{"unknown mode", loose, models.Mode("staging"), plain.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := send(t, tc.s, tc.mode, tc.url)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			t.Log(err)
		})
	}
	assert.Zero(t, plain.hits.Load(), "no refused delivery reached a server")
	assert.Zero(t, secure.hits.Load(), "no refused delivery reached a server")
}

func TestSenderControlChecksTheSocketAddress(t *testing.T) {
	d := &dialer{policy: models.WebhookPolicyFor(models.ModeLive, true)}
	for _, addr := range []string{"127.0.0.1:443", "10.0.0.1:443", "[::1]:443", "[::ffff:169.254.169.254]:80", "[fe80::1%eth0]:80", "nonsense"} {
		assert.Errorf(t, d.control("tcp", addr, nil), "%s", addr)
	}
	assert.NoError(t, d.control("tcp", "93.184.216.34:443", nil))
	assert.NoError(t, (&dialer{policy: models.WebhookPolicyFor(models.ModeTest, true)}).control("tcp", "127.0.0.1:8080", nil))
}

func TestSenderFollowsNoRedirectAndNoProxy(t *testing.T) {
	target := newReceiver(t, false, nil)
	redirector := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	// A proxy in the environment is not used: it would dial for us.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	s := NewSender(Config{TestLoopback: true})
	status, err := send(t, s, models.ModeTest, redirector.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusTemporaryRedirect, status, "a redirect is the answer, not followed")
	assert.Zero(t, target.hits.Load())
	assert.Equal(t, int32(1), redirector.hits.Load())
}

func TestSenderErrorsSayWhatHappened(t *testing.T) {
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	secure := newReceiver(t, true, nil)
	// Only the slow receiver meets the short timeout; the others have
	// time for a TLS handshake on a busy machine.
	impatient := NewSender(Config{TestLoopback: true, Timeout: 300 * time.Millisecond})
	s := NewSender(Config{TestLoopback: true, Timeout: 10 * time.Second, Resolver: fakeResolver{}})
	for _, tc := range []struct {
		s         *Sender
		url, want string
	}{
		{impatient, slow.URL, "did not answer in time"},
		{s, closedURL, "refused the connection"},
		{s, "http://nowhere.example.com/", "does not resolve"},
		{s, secure.URL, "TLS certificate"}, // a certificate nobody trusts
	} {
		_, err := send(t, tc.s, models.ModeTest, tc.url)
		if assert.Errorf(t, err, "%s", tc.url) {
			assert.Containsf(t, err.Error(), tc.want, "%s", tc.url)
		}
	}
}
