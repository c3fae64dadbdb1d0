package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// DefaultPublicRateLimit is Config.PublicRateLimit's default: a shopper
// reloading a tracking page, even a family behind one address watching
// several orders, stays far below it; a scraper walking order numbers is
// held to one a second.
const DefaultPublicRateLimit = 60

// publicRateLimit spends one request of the client address's per-minute
// budget on a route that needs no key (the tracking page, the OpenAPI
// document). Not on /healthz and /readyz, which orchestrators poll from
// one address, nor on the providers' webhooks, which arrive signed and in
// bursts from a few addresses: dropping them would only delay orders.
//
// The client is the connection's peer unless Config.TrustedProxies names
// it as a proxy, in which case X-Forwarded-For decides (gin's ClientIP).
// An IPv6 client is limited by its /64, the block one subscriber gets, so
// walking the addresses of that block buys nothing.
//
// page, when set, answers a refusal as a page of the route's own look
// (the tracking page's renderMessage, the claim page's
// renderClaimMessage); otherwise it is the error envelope. As for keys, a
// limiter failure lets the request through and is logged.
func (s *Server) publicRateLimit(page func(c *gin.Context, status int, title, detail string)) gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := s.cfg.PublicRateLimit
		if limit < 0 || s.deps.Limiter == nil {
			c.Next()
			return
		}
		res, err := s.deps.Limiter.Allow(c.Request.Context(), clientKey(c.ClientIP()), limit)
		if err != nil {
			loggerFrom(c).WarnContext(c.Request.Context(), "rate limiter unavailable; allowing request", slog.Any("error", err))
			c.Next()
			return
		}
		if res.Allowed {
			c.Next()
			return
		}
		retry := ceilSeconds(res.RetryAfter)
		c.Header("Retry-After", strconv.Itoa(retry))
		if page != nil {
			page(c, http.StatusTooManyRequests, "Too many requests",
				fmt.Sprintf("Too many pages were opened from this address in the last minute. Wait %s, then reload the page.", seconds(retry)))
			c.Abort()
			return
		}
		abort(c, models.Errorf(models.CodeRateLimited, "Rate limit of %d requests per minute per client address exceeded; retry after %d s", res.Limit, retry))
	}
}

// clientKey is the limiter key of a client address: the address itself
// for IPv4, its /64 for IPv6.
func clientKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return "ip:" + ip
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return "ip:" + p.String()
	}
	return "ip:" + addr.String()
}

// seconds writes n seconds in words: "1 second", "20 seconds".
func seconds(n int) string {
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}
