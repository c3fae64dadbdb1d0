package amazon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
)

// Short-link resolution limits. Real short links take one redirect, two
// when one service hands over to another; five leaves room without
// letting a loop run on.
const (
	maxHops          = 5
	hopTimeout       = 5 * time.Second
	shortCacheSize   = 10_000
	shortCacheTTL    = 24 * time.Hour
	maxHopBodyToRead = 64 << 10 // drained so the connection can be reused
)

// The public messages of short links that do not resolve to a product.
const (
	msgNotProduct = "the short link does not lead to an Amazon product page"
	msgNoResolve  = "the short link does not resolve"
	msgTooMany    = "the short link redirects too many times"
)

// shortLinks resolves short links by following their redirects, and
// remembers what each resolved to. Safe for concurrent use.
type shortLinks struct {
	client  *http.Client  // never follows redirects itself; no cookie jar
	timeout time.Duration // per hop
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	entries map[string]shortEntry
}

type shortEntry struct {
	ref     models.ProductRef
	expires time.Time
}

func newShortLinks(base *http.Client, timeout time.Duration, now func() time.Time, log *slog.Logger) *shortLinks {
	c := *base
	// Every hop is checked before it is made, so net/http must not make
	// any by itself; and a short link needs no cookies, which would only
	// let Amazon tie lookups together.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Jar = nil
	c.Timeout = 0 // each hop has its own deadline
	return &shortLinks{client: &c, timeout: timeout, now: now, log: log, entries: map[string]shortEntry{}}
}

// resolve returns the product page ref a short link leads to: an Amazon
// product ref with its ASIN and storefront host. A link that leads
// elsewhere, nowhere or round in circles is invalid_url; the short-link
// service failing is marketplace_unavailable.
func (s *shortLinks) resolve(ctx context.Context, ref models.ProductRef) (models.ProductRef, error) {
	key := ref.Host + "/" + ref.ShortCode
	if r, ok := s.lookup(key); ok {
		return r, nil
	}
	current, err := url.Parse(ref.URL)
	if err != nil || !allowedHop(current) || !shortLinkHosts[strings.ToLower(current.Hostname())] {
		return models.ProductRef{}, badRef("malformed short link")
	}
	for hop := 0; ; hop++ {
		// A hop that lands on a product page ends the walk: the page
		// itself need not be fetched.
		if page, err := models.ParseProductURL(current.String()); err == nil &&
			page.Marketplace == models.MarketplaceAmazon && !page.IsShortLink() {
			s.store(key, page)
			return page, nil
		}
		if hop == maxHops {
			return models.ProductRef{}, shortLinkError(msgTooMany)
		}
		next, err := s.follow(ctx, current)
		if err != nil {
			return models.ProductRef{}, err
		}
		current = next
	}
}

// follow makes one request to u and returns where it redirects to: HEAD,
// or GET if the server does not allow HEAD.
func (s *shortLinks) follow(ctx context.Context, u *url.URL) (*url.URL, error) {
	resp, err := s.request(ctx, http.MethodHead, u)
	if err == nil && resp.StatusCode == http.StatusMethodNotAllowed {
		resp, err = s.request(ctx, http.MethodGet, u)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, marketplaceUnavailable(ctx.Err())
		}
		s.log.Warn("amazon: short link hop failed", "host", u.Hostname(), "err", err)
		return nil, marketplaceUnavailable(fmt.Errorf("short link hop to %s: %w", u.Hostname(), err))
	}
	switch code := resp.StatusCode; {
	case code == http.StatusMovedPermanently, code == http.StatusFound, code == http.StatusSeeOther,
		code == http.StatusTemporaryRedirect, code == http.StatusPermanentRedirect:
		loc := resp.Header.Get("Location")
		if loc == "" {
			return nil, shortLinkError(msgNoResolve)
		}
		next, err := u.Parse(loc) // a relative Location is relative to this hop
		if err != nil || !allowedHop(next) {
			// Logged without the URL: it may carry anything.
			s.log.Warn("amazon: short link redirects off Amazon", "from_host", u.Hostname())
			return nil, shortLinkError(msgNotProduct)
		}
		next.Fragment = ""
		return next, nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return nil, shortLinkError(msgNoResolve)
	case code >= 200 && code < 300:
		// An answer, but not a redirect, from a page that is not a
		// product page.
		return nil, shortLinkError(msgNotProduct)
	case code >= 400 && code < 500 && code != http.StatusTooManyRequests:
		return nil, shortLinkError(msgNoResolve)
	default:
		s.log.Warn("amazon: short link service failed", "host", u.Hostname(), "status", code)
		return nil, marketplaceUnavailable(fmt.Errorf("short link hop to %s: HTTP %d", u.Hostname(), code))
	}
}

// request makes one bounded request and closes its body.
func (s *shortLinks) request(ctx context.Context, method string, u *url.URL) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHopBodyToRead))
	_ = resp.Body.Close()
	return resp, nil
}

// allowedHop reports whether a short link may lead to u: http(s) on a
// short-link or storefront host, by name, on the default port, without
// user info. Checked before every request, the first included, so no
// request ever goes anywhere else.
func allowedHop(u *url.URL) bool {
	if u == nil || u.Opaque != "" || u.User != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return false
	}
	if port := u.Port(); port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if net.ParseIP(host) != nil {
		return false
	}
	return isAmazonHost(host)
}

// lookup returns a cached resolution.
func (s *shortLinks) lookup(key string) (models.ProductRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return models.ProductRef{}, false
	}
	if !s.now().Before(e.expires) {
		delete(s.entries, key)
		return models.ProductRef{}, false
	}
	return e.ref, true
}

// store caches a resolution. When full it drops expired entries, then
// arbitrary ones: a dropped code costs one more resolution, nothing else.
func (s *shortLinks) store(key string, ref models.ProductRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.entries) >= shortCacheSize {
		for k, e := range s.entries {
			if !now.Before(e.expires) {
				delete(s.entries, k)
			}
		}
		for k := range s.entries {
			if len(s.entries) < shortCacheSize {
				break
			}
			delete(s.entries, k)
		}
	}
	s.entries[key] = shortEntry{ref: ref, expires: now.Add(shortCacheTTL)}
}

// len returns how many resolutions are cached.
func (s *shortLinks) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// shortLinkError is invalid_url for a short link that does not lead to a
// product page.
func shortLinkError(why string) error { return badRef(why) }
