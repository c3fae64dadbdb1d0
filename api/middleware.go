package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

const (
	ctxKeyAPIKey = "memocart.apikey"
	ctxKeyLogger = "memocart.logger"

	headerRequestID = "X-Request-Id"
)

// requestID takes a sane client-supplied X-Request-Id or makes one, echoes
// it, and attaches a logger carrying it so every log line of the request
// can be found from the id a client reports.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !validRequestID(id) {
		var err error
		if id, err = models.NewID("req", rand.Reader); err != nil {
			id = "req_unknown"
		}
	}
	c.Header(headerRequestID, id)
	c.Set(ctxKeyLogger, s.deps.Logger.With(slog.String("request_id", id)))
	// Temporal calls made with the request's context carry the id into
	// the workflow's and its activities' logs (workflows.LogPropagator).
	c.Request = c.Request.WithContext(workflows.WithRequestID(c.Request.Context(), id))
	requestIDOnSpan(c.Request.Context(), id)
	c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func loggerFrom(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(ctxKeyLogger); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}

// accessLog logs one line per request: route, status, duration and the
// key's public id. Never the body, the key itself, or query values. It
// also hands the same facts to Deps.Metrics.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	took := time.Since(start)
	if s.deps.Metrics != nil {
		s.deps.Metrics.ObserveRequest(c.FullPath(), c.Request.Method, c.Writer.Status(), took)
	}
	// The line is built only when it will be written, and as slog.Attrs
	// (LogAttrs), which slog takes without boxing each into an interface.
	ctx, l := c.Request.Context(), loggerFrom(c)
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs,
		slog.String("method", c.Request.Method),
		slog.String("route", c.FullPath()),
		slog.Int("status", c.Writer.Status()),
		slog.Duration("duration", took),
	)
	if k, ok := apiKeyFrom(c); ok {
		attrs = append(attrs, slog.String("key_id", k.ID), slog.String("account_id", k.AccountID))
	}
	l.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}

// recover turns a panic into a logged internal error with the contract's
// body, instead of a dropped connection.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			loggerFrom(c).ErrorContext(c.Request.Context(), "panic serving request",
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
			if !c.Writer.Written() {
				abort(c, models.NewError(models.CodeInternal))
			}
		}
	}()
	c.Next()
}

// deadline bounds the request: every dependency call below it uses the
// request's context, so a hung one is cut at RequestTimeout and answered
// 503 by abort.
func (s *Server) deadline(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// authenticate requires "Authorization: Bearer <key>" with a known, not
// revoked key. Malformed keys are refused before touching the database.
func (s *Server) authenticate(c *gin.Context) {
	h := strings.TrimSpace(c.GetHeader("Authorization"))
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if h == "" || !strings.EqualFold(scheme, "Bearer") || token == "" {
		abort(c, malformedAuthorization(h, scheme, token))
		return
	}
	if _, err := models.ParseAPIKey(s.cfg.KeyPrefix, token); err != nil {
		abort(c, models.ErrInvalidAPIKey)
		return
	}
	k, err := s.keys.authenticate(c.Request.Context(), models.HashAPIKey(token), s.deps.Store.AuthenticateAPIKey)
	if err != nil {
		abort(c, err)
		return
	}
	c.Set(ctxKeyAPIKey, k)
	c.Next()
}

// malformedAuthorization is the contract's missing_api_key, with a message
// that says what was wrong with a header that was sent: a key pasted
// without "Bearer " is the common mistake, and "no API key" misleads the
// client that did send one. The header's value is never echoed.
func malformedAuthorization(header, scheme, token string) *models.Error {
	const want = `Authorization header must be "Bearer <API key>"`
	switch {
	case header == "":
		return models.ErrMissingAPIKey
	case !strings.Contains(header, " ") && !strings.EqualFold(header, "Bearer"):
		return models.Errorf(models.CodeMissingAPIKey, "%s: the Bearer scheme is missing", want)
	case !strings.EqualFold(scheme, "Bearer"):
		return models.Errorf(models.CodeMissingAPIKey, "%s: the scheme is not Bearer", want)
	default: // "Bearer" with nothing after it
		return models.Errorf(models.CodeMissingAPIKey, "%s: no key follows Bearer", want)
	}
}

func apiKeyFrom(c *gin.Context) (models.APIKey, bool) {
	v, ok := c.Get(ctxKeyAPIKey)
	if !ok {
		return models.APIKey{}, false
	}
	k, ok := v.(models.APIKey)
	return k, ok
}

// mustKey returns the authenticated key; handlers run only after
// authenticate, so its absence is a wiring bug.
func mustKey(c *gin.Context) models.APIKey {
	k, ok := apiKeyFrom(c)
	if !ok {
		panic("api: handler reached without an authenticated key")
	}
	return k
}

// testKey returns the authenticated key of a test helper's request, or
// refuses a live key (test_mode_only) and reports false: test helpers move
// test-mode money only, and a live key is refused before its body is read.
func testKey(c *gin.Context) (models.APIKey, bool) {
	key := mustKey(c)
	if key.Mode != models.ModeTest {
		abort(c, models.NewError(models.CodeTestModeOnly))
		return key, false
	}
	return key, true
}

// Rate-limit response headers, sent on every authenticated response.
const (
	headerLimit     = "X-RateLimit-Limit"     // requests per minute allowed for the key
	headerRemaining = "X-RateLimit-Remaining" // requests that may be made right now
	headerReset     = "X-RateLimit-Reset"     // seconds until the full budget is available again
)

// rateLimit spends one request of the key's per-minute budget. If the
// limiter itself fails (Redis down) the request is let through and the
// failure logged: an outage of the limiter should not become an outage of
// checkout, and the per-key budget is a fairness control, not a security one.
func (s *Server) rateLimit(c *gin.Context) {
	k := mustKey(c)
	res, err := s.deps.Limiter.Allow(c.Request.Context(), k.ID, k.RateLimit())
	if err != nil {
		loggerFrom(c).WarnContext(c.Request.Context(), "rate limiter unavailable; allowing request", slog.Any("error", err))
		c.Next()
		return
	}
	c.Header(headerLimit, strconv.Itoa(res.Limit))
	c.Header(headerRemaining, strconv.Itoa(res.Remaining))
	c.Header(headerReset, strconv.Itoa(ceilSeconds(res.ResetAfter)))
	if !res.Allowed {
		retry := ceilSeconds(res.RetryAfter)
		c.Header("Retry-After", strconv.Itoa(retry))
		abort(c, models.Errorf(models.CodeRateLimited, "Rate limit of %d requests per minute exceeded; retry after %d s", res.Limit, retry))
		return
	}
	c.Next()
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// requireTier admits only keys on one of the given plans.
func requireTier(tiers ...models.Tier) gin.HandlerFunc {
	return func(c *gin.Context) {
		k := mustKey(c)
		for _, t := range tiers {
			if k.Tier == t {
				c.Next()
				return
			}
		}
		abort(c, models.Errorf(models.CodePlanRequired, "This endpoint needs a Pro or Enterprise plan; this key is on the %s plan", k.Tier))
	}
}

// strictQuery refuses a query string Go's parser reads ambiguously,
// before any handler reads it: a pair holding ';' (url.ParseQuery drops
// it, so ?status=sent;x would answer the unfiltered list), a malformed
// %-escape (also dropped), or a parameter given twice (c.Query takes the
// first; no parameter of the API takes a list). 400 invalid_request
// naming the parameter.
func strictQuery(c *gin.Context) {
	raw := c.Request.URL.RawQuery
	if raw == "" {
		return
	}
	for pair := range strings.SplitSeq(raw, "&") {
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, nameErr := url.QueryUnescape(rawName)
		if nameErr != nil {
			name = rawName
		}
		if strings.Contains(pair, ";") {
			name, _, _ = strings.Cut(name, ";")
			abort(c, invalid(name, "The query parameter %q holds a ';': separate parameters with '&', and escape a ';' in a value as %%3B", name))
			return
		}
		if _, err := url.QueryUnescape(rawValue); err != nil || nameErr != nil {
			abort(c, invalid(name, "The query parameter %q has a malformed %%-escape", name))
			return
		}
	}
	if name, n := repeated(c.Request.URL.Query()); n > 1 {
		abort(c, invalid(name, "%s is given %d times", name, n))
	}
}

// repeated returns the first name, in sorted order, that values holds
// more than once, and how many times; n is 0 if none is. A query or a
// form whose fields each take one value refuses one given twice rather
// than let the first win.
func repeated(values url.Values) (name string, n int) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if len(values[k]) > 1 {
			return k, len(values[k])
		}
	}
	return "", 0
}
