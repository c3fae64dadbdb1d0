package api

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// The Idempotency-Key mechanism: one middleware on the /v1 group that
// gives every authenticated POST the same semantics (README.md, "Idempotency").
// A request with a key reserves it in the store, atomically across
// replicas; its answer is kept for replay unless it is a 5xx. A retry with
// the same key and the same request (method, path, body) replays the kept
// answer with Idempotent-Replayed: true; another request under the key is
// 422 idempotency_mismatch; a retry while the first is still running is
// 409 idempotency_key_in_use. Keys expire after models.IdempotencyTTL.

const (
	headerIdempotencyKey      = "Idempotency-Key"
	headerIdempotentReplayed  = "Idempotent-Replayed"
	ctxKeyIdempotencyKey      = "memocart.idempotency_key"
	idempotencyInUseRetryWait = "1" // seconds: a request's usual duration
)

// IdempotencyStaleMargin is added to the request timeout to decide that a
// request holding a key died with its process: beyond its deadline a
// request may still finish a SQLite busy wait (5 s) and record its answer
// (idempotencyFinishTimeout), and replicas' clocks may differ by a few
// seconds.
const IdempotencyStaleMargin = 30 * time.Second

// idempotencyFinishTimeout bounds recording a request's answer, which runs
// after the request's own deadline may have passed.
const idempotencyFinishTimeout = 5 * time.Second

// maxKeptResponse bounds a kept response body; a larger answer (none of
// today's comes close) is not kept, and a retry runs again.
const maxKeptResponse = 1 << 20

// keptHeaders are the response headers replayed with a kept body: those
// that describe it. Per-request headers (X-Request-Id, rate limits) are the
// replay's own.
var keptHeaders = []string{"Content-Type", "Location"}

// staleAfter is how long a request may hold its key without answering
// before another request with the same key may take it over.
func (s *Server) staleAfter() time.Duration {
	return s.cfg.RequestTimeout + IdempotencyStaleMargin
}

// idempotency applies the Idempotency-Key mechanism to POST requests; other
// methods pass through. It runs after authentication and the rate limit
// (a replay spends one request of the budget, like any request).
func (s *Server) idempotency(c *gin.Context) {
	if c.Request.Method != http.MethodPost {
		c.Next()
		return
	}
	key := strings.TrimSpace(c.GetHeader(headerIdempotencyKey))
	if len(key) > models.MaxIdempotencyKey || !printableASCII(key) {
		abort(c, invalid(headerIdempotencyKey, "Idempotency-Key must be at most %d printable ASCII characters", models.MaxIdempotencyKey))
		return
	}
	if key == "" {
		c.Next()
		return
	}
	c.Set(ctxKeyIdempotencyKey, key)

	// Read the body to fingerprint it, and give the handler the same bytes.
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBodyBytes+1))
	if err != nil {
		abort(c, jsonError(err))
		return
	}
	if len(body) > maxBodyBytes {
		// Refused by the handler as too large: nothing to remember, and
		// no reason to hash a body of any size.
		c.Request.Body = readCloser{io.MultiReader(bytes.NewReader(body), c.Request.Body), c.Request.Body}
		c.Next()
		return
	}
	c.Request.Body = readCloser{bytes.NewReader(body), c.Request.Body}

	ctx := c.Request.Context()
	k := mustKey(c)
	req := models.IdempotentRequest{
		IdempotencyScope: models.IdempotencyScope{AccountID: k.AccountID, Mode: k.Mode, Key: key},
		Method:           c.Request.Method, Path: c.Request.URL.Path,
		Hash: requestFingerprint(c.Request.Method, c.Request.URL.Path, body),
	}
	claim, err := s.deps.Store.ReserveIdempotencyKey(ctx, req, s.deps.Now(), s.staleAfter())
	if err != nil {
		abort(c, err)
		return
	}
	switch claim.Action {
	case models.IdempotencyReplay:
		replay(c, claim.Record.Response)
		return
	case models.IdempotencyMismatch:
		abort(c, models.Errorf(models.CodeIdempotencyMismatch,
			"This Idempotency-Key was already used for a different request (first used with %s %s); use a new key for a new request",
			claim.Record.Method, claim.Record.Path))
		return
	case models.IdempotencyBusy:
		c.Header("Retry-After", idempotencyInUseRetryWait)
		abort(c, models.NewError(models.CodeIdempotencyKeyInUse))
		return
	}
	s.runHoldingKey(c, req.IdempotencyScope, claim.Token)
}

// runHoldingKey runs the rest of the chain into a buffer, keeps its answer
// (or releases the key after a 5xx), and only then sends the answer: a
// client that has received an answer finds it kept when it retries.
func (s *Server) runHoldingKey(c *gin.Context, sc models.IdempotencyScope, token string) {
	out := c.Writer
	buf := &bufferedWriter{ResponseWriter: out, status: http.StatusOK}
	c.Writer = buf
	// Recording the answer gets its own time: the request's context may
	// be past its deadline by now.
	finishCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(c.Request.Context()), idempotencyFinishTimeout)
	}
	finished := false
	defer func() {
		if !finished {
			// The handler panicked: the recovery middleware answers 500,
			// which is not kept; a retry may run at once.
			c.Writer = out
			ctx, cancel := finishCtx()
			defer cancel()
			s.releaseKey(ctx, c, sc, token)
		}
	}()
	c.Next()
	finished = true
	c.Writer = out

	ctx, cancel := finishCtx()
	defer cancel()

	if models.KeepResponse(buf.status) && buf.body.Len() <= maxKeptResponse {
		resp := models.StoredResponse{Status: buf.status, Header: map[string]string{}, Body: buf.body.Bytes()}
		for _, h := range keptHeaders {
			if v := out.Header().Get(h); v != "" {
				resp.Header[h] = v
			}
		}
		held, err := s.deps.Store.CompleteIdempotencyKey(ctx, sc, token, resp, s.deps.Now())
		switch {
		case err != nil:
			// The answer stands; a retry finds the key in flight until it
			// is presumed dead (staleAfter), then runs again.
			loggerFrom(c).WarnContext(ctx, "keeping the answer of an idempotent request failed", slog.Any("error", err))
		case !held:
			loggerFrom(c).WarnContext(ctx, "idempotency key was taken over while its request ran; its answer is not kept")
		}
	} else {
		s.releaseKey(ctx, c, sc, token)
	}
	out.WriteHeader(buf.status)
	out.WriteHeaderNow()
	if buf.body.Len() > 0 {
		_, _ = out.Write(buf.body.Bytes())
	}
}

func (s *Server) releaseKey(ctx context.Context, c *gin.Context, sc models.IdempotencyScope, token string) {
	if _, err := s.deps.Store.ReleaseIdempotencyKey(ctx, sc, token); err != nil {
		// The key stays in flight until it is presumed dead (staleAfter).
		loggerFrom(c).WarnContext(ctx, "releasing an idempotency key failed", slog.Any("error", err))
	}
}

// replay answers a kept response, marked as a replay. The kept body is
// the bytes render wrote, newline included. Answers kept by a version
// whose JSON bodies ended without one get it added here, so a replay ends
// as every other JSON answer; that case is gone once such keys have
// expired (models.IdempotencyTTL after the upgrade).
func replay(c *gin.Context, r *models.StoredResponse) {
	for h, v := range r.Header {
		c.Header(h, v)
	}
	c.Header(headerIdempotentReplayed, "true")
	c.Status(r.Status)
	c.Writer.WriteHeaderNow()
	body := r.Body
	if len(body) > 0 && isJSON(r.Header["Content-Type"]) && !bytes.HasSuffix(body, []byte("\n")) {
		body = append(slices.Clip(body), '\n')
	}
	if len(body) > 0 {
		_, _ = c.Writer.Write(body)
	}
	c.Abort()
}

// isJSON reports whether a Content-Type is JSON's.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// idempotencyKeyOf returns the request's validated Idempotency-Key, or "".
func idempotencyKeyOf(c *gin.Context) string {
	return c.GetString(ctxKeyIdempotencyKey)
}

// printableASCII reports whether s holds only visible ASCII and spaces
// (what a UUID or any sane client token is made of).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestFingerprint identifies "the same request" under a key: method,
// path (with its parameters) and body. A JSON body is taken in canonical
// form (no insignificant whitespace, object keys sorted), so a client that
// re-serialises its retry, with another key order or spacing, still sends
// the same request; anything else counts byte for byte.
func requestFingerprint(method, path string, body []byte) string {
	h := sha256.New()
	// Length-prefixed fields: no path can run into a body.
	kind := "raw"
	if canon, ok := canonicalJSON(body); ok {
		kind, body = "json", canon
	}
	fmt.Fprintf(h, "%d:%s%d:%s%s:", len(method), method, len(path), path, kind)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON rewrites one JSON value canonically: object members sorted
// by key (duplicates kept, in order), strings re-escaped, numbers as
// written. It refuses (false) an empty body, invalid UTF-8, invalid JSON,
// nesting deeper than the decoder's limit, and strings that decoding would
// alter (a U+FFFD from a lone surrogate escape), so two different bodies
// never share a canonical form.
func canonicalJSON(raw []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(raw)) == 0 || !utf8.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := canonicalValue(dec, &out, 0); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out.Bytes(), true
}

var errNotCanonical = errors.New("not canonicalisable")

func canonicalValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxJSONDepth {
		return errNotCanonical
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var members []member
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := kt.(string)
				if !ok || strings.ContainsRune(key, utf8.RuneError) {
					return errNotCanonical
				}
				var val bytes.Buffer
				if err := canonicalValue(dec, &val, depth+1); err != nil {
					return err
				}
				members = append(members, member{key, val.Bytes()})
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			slices.SortStableFunc(members, func(a, b member) int { return cmp.Compare(a.key, b.key) })
			out.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					out.WriteByte(',')
				}
				writeJSONString(out, m.key)
				out.WriteByte(':')
				out.Write(m.val)
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := canonicalValue(dec, out, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte(']')
		default:
			return errNotCanonical
		}
	case string:
		if strings.ContainsRune(v, utf8.RuneError) {
			return errNotCanonical
		}
		writeJSONString(out, v)
	case json.Number:
		out.WriteString(v.String())
	case bool:
		if v {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return errNotCanonical
	}
	return nil
}

func writeJSONString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	out.Write(b)
}

// readCloser reads from r and closes c: the request body re-served to the
// handler after the middleware read it.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// bufferedWriter holds a handler's answer until its key is recorded.
// Headers go straight to the real writer's header map; status and body
// wait.
type bufferedWriter struct {
	gin.ResponseWriter
	status  int
	body    bytes.Buffer
	written bool
}

func (w *bufferedWriter) WriteHeader(code int) {
	if code > 0 && !w.written {
		w.status = code
	}
}

func (w *bufferedWriter) WriteHeaderNow() { w.written = true }

func (w *bufferedWriter) Write(b []byte) (int, error) {
	w.written = true
	return w.body.Write(b)
}

func (w *bufferedWriter) WriteString(s string) (int, error) {
	w.written = true
	return w.body.WriteString(s)
}

func (w *bufferedWriter) Status() int { return w.status }

func (w *bufferedWriter) Size() int {
	if !w.written {
		return -1
	}
	return w.body.Len()
}

func (w *bufferedWriter) Written() bool { return w.written }

// Flush is a no-op: the answer is sent once its key is recorded.
func (w *bufferedWriter) Flush() {}

func (w *bufferedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("api: a request holding an idempotency key cannot hijack its connection")
}

// idempotencyPurgeBatch bounds one PurgeIdempotencyKeys call. Every API
// replica calls it on each reconciler tick (MEMOCART_RECONCILE_INTERVAL,
// 10 s), so one replica reclaims up to 100 expired keys a second: far
// above the rate keys are made at, in one short statement.
const idempotencyPurgeBatch = 1000

// PurgeIdempotencyKeys deletes up to a batch of Idempotency-Key records
// older than models.IdempotencyTTL and returns how many it deleted. An
// expired key already runs its request anew whether or not it was purged;
// this only keeps the table small. Safe to run in every replica.
func (s *Server) PurgeIdempotencyKeys(ctx context.Context) (int, error) {
	return s.deps.Store.PurgeIdempotencyKeys(ctx, s.deps.Now(), idempotencyPurgeBatch)
}
