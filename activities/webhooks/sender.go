// Package webhooks sends webhook deliveries to the endpoints accounts
// register: HTTP POSTs to URLs chosen by customers, which is why every
// connection is made only to an address the endpoint's URL policy admits
// (models.WebhookURLPolicy), checked after DNS resolution and again on the
// socket itself, through no proxy, following no redirect.
//
// It may import models.
package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/memocart/memocart/models"
)

// Resolver resolves host names (net.DefaultResolver has this method).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Sender.
type Config struct {
	// Timeout bounds one delivery attempt, from dialing to the end of the
	// response's headers (DefaultTimeout).
	Timeout time.Duration
	// TestLoopback lets test-mode endpoints be on loopback addresses, as
	// the API allows at registration (api.Config.WebhookTestLoopback).
	TestLoopback bool
	// Resolver: net.DefaultResolver when nil.
	Resolver Resolver
	// TLS, for tests that serve https with their own certificate; nil:
	// the system's roots.
	TLS *tls.Config
}

// DefaultTimeout is Config.Timeout's default: receivers are asked to
// answer within it.
const DefaultTimeout = 10 * time.Second

// UserAgent is sent with every delivery.
const UserAgent = "Memocart-Webhooks/1.0 (+https://memocart.com/docs/webhooks)"

// maxResponseBytes is how much of an answer is read (and discarded), so a
// receiver streaming forever cannot hold an attempt open.
const maxResponseBytes = 64 << 10

// Sender posts deliveries. It is safe for concurrent use.
type Sender struct {
	clients  map[models.Mode]*http.Client
	policies map[models.Mode]models.WebhookURLPolicy
}

// NewSender returns a Sender with one HTTP client per mode, each dialing
// only what its mode's policy admits.
func NewSender(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	s := &Sender{clients: map[models.Mode]*http.Client{}, policies: map[models.Mode]models.WebhookURLPolicy{}}
	for _, mode := range models.Modes {
		policy := models.WebhookPolicyFor(mode, cfg.TestLoopback)
		s.policies[mode] = policy
		d := &dialer{policy: policy, resolver: cfg.Resolver, timeout: cfg.Timeout}
		tr := &http.Transport{
			// Never a proxy: it would connect to the endpoint for us,
			// bypassing the address checks.
			Proxy:                 nil,
			DialContext:           d.dial,
			TLSClientConfig:       cfg.TLS,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		}
		s.clients[mode] = &http.Client{
			Transport: tr,
			Timeout:   cfg.Timeout,
			// A redirect is an answer like any other non-2xx: following it
			// would send the signed body somewhere nobody registered.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return s
}

// Send posts body with header to rawURL under the policy of mode and
// returns the HTTP status. An error means no status was received; its
// message is written for the account to read (it names no internals of
// the service, only what happened with their endpoint).
func (s *Sender) Send(ctx context.Context, mode models.Mode, rawURL string, header http.Header, body []byte) (int, error) {
	c, ok := s.clients[mode]
	if !ok {
		return 0, fmt.Errorf("no sender for mode %q", mode)
	}
	// The URL was checked at registration; checked again here, so a row
	// written some other way cannot point anywhere.
	if _, err := s.policies[mode].CheckURL(rawURL); err != nil {
		return 0, errors.New(publicMessage(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the endpoint URL cannot be requested")
	}
	req.Header = header.Clone()
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return 0, errors.New(describe(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseBytes))
	_ = res.Body.Close()
	return res.StatusCode, nil
}

func isLoopbackHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// dialer connects only to addresses its policy admits.
type dialer struct {
	policy   models.WebhookURLPolicy
	resolver Resolver
	timeout  time.Duration
}

// refusedError is a connection the policy refused.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// dial resolves the host itself and checks every address before dialing
// any: a name resolving to one refused address is refused as a whole (a
// rebinding name answers a public and a private address). It then dials
// the checked addresses, and the socket's Control hook checks the address
// actually being connected once more, so nothing between the check and
// the connect can substitute another.
func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if !d.policy.AllowLoopback && isLoopbackHost(host) {
			return nil, &refusedError{"the endpoint's host is localhost, which is not allowed"}
		}
		addrs, err = d.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	for _, a := range addrs {
		if err := d.policy.CheckAddr(a); err != nil {
			return nil, &refusedError{"the endpoint's address is not allowed: " + publicMessage(err)}
		}
	}
	nd := &net.Dialer{Timeout: d.timeout, Control: d.control}
	var firstErr error
	for _, a := range addrs {
		conn, err := nd.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// control runs on the socket before it connects.
func (d *dialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{"the endpoint's address cannot be checked"}
	}
	if err := d.policy.CheckAddr(ap.Addr()); err != nil {
		return &refusedError{"the endpoint's address is not allowed: " + publicMessage(err)}
	}
	return nil
}

// publicMessage is a policy refusal without the "url must not" phrasing of
// registration.
func publicMessage(err error) string {
	var me *models.Error
	if errors.As(err, &me) {
		return strings.TrimPrefix(strings.TrimPrefix(me.Message, "url must not point at "), "url ")
	}
	return err.Error()
}

// describe says what went wrong with a request, in words for the account.
func describe(err error) string {
	var (
		refused *refusedError
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &refused):
		return refused.msg
	case errors.As(err, &dnsErr):
		return "the endpoint's host name does not resolve"
	case errors.As(err, &certErr):
		return "the endpoint's TLS certificate is not valid: " + certErr.Err.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the endpoint refused the connection"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the endpoint closed the connection without an answer"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "the endpoint did not answer in time"
	case strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "the TLS handshake with the endpoint failed"
	}
	return "the request to the endpoint failed"
}
