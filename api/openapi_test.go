package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// The API's OpenAPI document (api/openapi.json) cannot drift from the
// code: (*env).send validates every response the tests receive against it
// (checkOpenAPI), and the tests below pin the document to the routes gin
// serves.

// openAPIValidator matches requests to the document's operations and
// validates responses against them. It is read-only once built, so
// concurrent requests share it.
type openAPIValidator struct {
	doc    *openapi3.T
	routes []openAPIPath
}

// openAPIPath is one path template of the document, split on "/"; a
// "{param}" segment matches any one non-empty segment, as gin's ":param".
type openAPIPath struct {
	template string
	segments []string
	item     *openapi3.PathItem
}

var (
	openAPIOnce sync.Once
	openAPIVal  *openAPIValidator
	openAPIErr  error
)

// loadOpenAPIDocument loads and validates the embedded document; a 3.1
// document is validated as one (JSON Schema 2020-12) by kin-openapi.
func loadOpenAPIDocument(ctx context.Context) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPIDocument())
	if err != nil {
		return nil, fmt.Errorf("loading api/openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("api/openapi.json is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
}

// openAPI returns the validator, built once for the whole test binary.
func openAPI() (*openAPIValidator, error) {
	openAPIOnce.Do(func() {
		// The tracking page is HTML: its body is read as a plain string.
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		doc, err := loadOpenAPIDocument(context.Background())
		if err != nil {
			openAPIErr = err
			return
		}
		v := &openAPIValidator{doc: doc}
		for template, item := range doc.Paths.Map() {
			v.routes = append(v.routes, openAPIPath{template: template, segments: strings.Split(template, "/"), item: item})
		}
		openAPIVal = v
	})
	return openAPIVal, openAPIErr
}

// checkOpenAPI fails the test if the response the server gave to req is not
// one api/openapi.json allows for that route, method and status.
func checkOpenAPI(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	v, err := openAPI()
	if err != nil {
		t.Errorf("OpenAPI: %v", err)
		return
	}
	if err := v.validateResponse(req, status, header, body); err != nil {
		t.Errorf("OpenAPI: %s %s answered %d, which api/openapi.json does not allow: %v\nresponse body: %s",
			req.Method, req.URL.RequestURI(), status, err, clip(body, 600))
	}
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// match returns the path of the document that path falls in, or nil. A
// literal segment beats a parameter, as in gin's router.
func (v *openAPIValidator) match(path string) *openAPIPath {
	segs := strings.Split(path, "/")
	var best *openAPIPath
	bestLiterals := -1
	for i := range v.routes {
		r := &v.routes[i]
		if len(r.segments) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for j, s := range r.segments {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				ok = segs[j] != ""
			case s == segs[j]:
				literals++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = r, literals
		}
	}
	return best
}

// validateRequest checks req against the documented operation its method
// and path reach (which must exist), authentication aside.
func (v *openAPIValidator) validateRequest(t *testing.T, req *http.Request) error {
	t.Helper()
	route, params := v.route(req.Method, req.URL.Path)
	require.NotNil(t, route.PathItem, "a documented route")
	return openapi3filter.ValidateRequest(req.Context(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// route finds the operation a request reaches. A path the document does
// not list is answered by the router (404 not_found), as is a listed path
// with a method it does not list (405 method_not_allowed): those requests
// get an operation made of the document's UnknownRoute or MethodNotAllowed
// response.
func (v *openAPIValidator) route(method, path string) (*routers.Route, map[string]string) {
	fallback := func(status, response string) *routers.Route {
		responses := openapi3.NewResponses()
		for code, name := range map[string]string{status: response, "431": "HeaderFieldsTooLarge"} {
			responses.Set(code, &openapi3.ResponseRef{Ref: "#/components/responses/" + name, Value: v.doc.Components.Responses[name].Value})
		}
		return &routers.Route{Spec: v.doc, Path: path, Method: method,
			Operation: &openapi3.Operation{OperationID: "router" + status, Responses: responses}}
	}
	p := v.match(path)
	if p == nil {
		return fallback("404", "UnknownRoute"), nil
	}
	op := p.item.GetOperation(method)
	if op == nil {
		return fallback("405", "MethodNotAllowed"), nil
	}
	params := map[string]string{}
	for i, s := range p.segments {
		if strings.HasPrefix(s, "{") {
			params[strings.Trim(s, "{}")] = strings.Split(path, "/")[i]
		}
	}
	return &routers.Route{Spec: v.doc, Path: p.template, PathItem: p.item, Method: method, Operation: op}, params
}

// validateResponse checks one response: its status is documented for the
// route and method, its documented headers are there with valid values,
// its Content-Type is a documented one, and its body matches that content's
// schema. Beyond what openapi3filter checks: a response documented without
// a body has none, and an error's code has the response's status in the
// one table of api.StatusOf.
func (v *openAPIValidator) validateResponse(req *http.Request, status int, header http.Header, body []byte) error {
	route, params := v.route(req.Method, req.URL.Path)
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	// One line per error, "at /order/total: value must be a number",
	// rather than the schema and the value dumped in full.
	opts.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		return fmt.Sprintf("at /%s: %s", strings.Join(err.JSONPointer(), "/"), err.Reason)
	})
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		return err
	}
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("status %d is not documented", status)
	}
	if len(ref.Value.Content) == 0 && len(body) > 0 {
		return fmt.Errorf("status %d is documented without a body, but the response has %d bytes", status, len(body))
	}
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt == "application/json" && status >= 400 {
		var e struct {
			Error struct {
				Code models.Code `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			return fmt.Errorf("error body: %w", err)
		}
		if want := api.StatusOf(e.Error.Code); want != status {
			return fmt.Errorf("error code %q belongs to status %d (api.StatusOf), not %d", e.Error.Code, want, status)
		}
	}
	return nil
}

// ---- Tests of the document itself ----

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	doc, err := loadOpenAPIDocument(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	assert.True(t, doc.IsOpenAPI31OrLater(), "validated as an OpenAPI 3.1 document")

	// Every response object is closed: a field added in code but not in
	// the document fails validation instead of passing silently.
	for name, s := range doc.Components.Schemas {
		checkClosed(t, "#/components/schemas/"+name, s.Value)
	}

	// Every error code the document lists is a real one, and the codes
	// are exactly those api.StatusOf gives a status to (plus internal_error).
	enum := doc.Components.Schemas["ErrorCode"].Value.Enum
	require.NotEmpty(t, enum)
	for _, c := range enum {
		code := models.Code(c.(string))
		assert.NotEmptyf(t, models.DefaultMessage(code), "ErrorCode %q is not a code of package models", code)
		if code != models.CodeInternal {
			assert.NotEqualf(t, http.StatusInternalServerError, api.StatusOf(code), "ErrorCode %q has no status in api.StatusOf", code)
		}
	}

	// The fail test helper's reasons are exactly the models' list.
	reason := doc.Components.Schemas["FailTestOrderRequest"].Value.Properties["reason"].Value
	var reasons []string
	for _, r := range reason.Enum {
		reasons = append(reasons, r.(string))
	}
	assert.Equal(t, models.TestFailureCodes(), reasons)
	assert.Equal(t, models.DefaultTestFailure, reason.Default)
	// And the refund fail test helper's refusals.
	refusal := doc.Components.Schemas["FailTestRefundRequest"].Value.Properties["reason"].Value
	var refusals []string
	for _, r := range refusal.Enum {
		refusals = append(refusals, r.(string))
	}
	assert.Equal(t, models.TestPayoutRefusals(), refusals)
	assert.Equal(t, models.DefaultTestPayoutRefusal, refusal.Default)
}

// checkClosed reports an object schema that allows properties it does not
// list. A schema without its own properties (the document served as
// /v1/openapi.json) is not a response object of this API.
func checkClosed(t *testing.T, at string, s *openapi3.Schema) {
	t.Helper()
	if s == nil {
		return
	}
	if len(s.Properties) > 0 {
		if !assert.NotNilf(t, s.AdditionalProperties.Has, "%s must set additionalProperties: false", at) {
			return
		}
		assert.Falsef(t, *s.AdditionalProperties.Has, "%s must set additionalProperties: false", at)
		for name, p := range s.Properties {
			if p.Ref == "" {
				checkClosed(t, at+"/properties/"+name, p.Value)
			}
		}
	}
	if s.Items != nil && s.Items.Ref == "" {
		checkClosed(t, at+"/items", s.Items.Value)
	}
}

// normalizedPath writes a gin route in the document's syntax with its parameter
// names dropped: /v1/orders/:ref and /v1/orders/{id_or_number} are both
// /v1/orders/{}.
func normalizedPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") || strings.HasPrefix(s, "{") {
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	var served []string
	for _, r := range newTestServer(t, api.Config{}, api.Deps{}).Routes() {
		served = append(served, r.Method+" "+normalizedPath(r.Path))
	}
	var documented []string
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+normalizedPath(path))
		}
	}
	sort.Strings(served)
	sort.Strings(documented)
	require.NotEmpty(t, served)
	assert.Equal(t, served, documented, "the routes gin serves and the operations api/openapi.json documents")
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	// No key, and a key that does not exist: the document is public.
	for _, auth := range []string{"", "Bearer mc_test_" + strings.Repeat("x", 32)} {
		r := e.send(t, request{method: http.MethodGet, path: "/v1/openapi.json", auth: auth})
		require.Equalf(t, http.StatusOK, r.status, "body %s", clip(r.body, 300))
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
		assert.True(t, bytes.Equal(api.OpenAPIDocument(), r.body), "GET /v1/openapi.json serves exactly the embedded document")
		assert.Empty(t, r.header.Get("X-RateLimit-Limit"), "the per-key headers are not sent: the document is limited per address")
	}
	// The accessor hands out a copy.
	doc := api.OpenAPIDocument()
	doc[0] = 'x'
	assert.Equal(t, byte('{'), api.OpenAPIDocument()[0])
}

// TestOpenAPIValidationFails proves the check in send has teeth: the same
// function that passes real responses refuses ones that drifted.
func TestOpenAPIValidationFails(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	check := func(method, path string, status int, header http.Header, body []byte) error {
		return v.validateResponse(httptest.NewRequest(method, path, nil), status, header, body)
	}
	jsonHeader := func(extra ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"req_x"}}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}

	t.Run("healthz", func(t *testing.T) {
		require.NoError(t, check("GET", "/healthz", 200, jsonHeader(), []byte(`{"status":"ok"}`)), "control: the real answer passes")
		for name, tc := range map[string]struct {
			status int
			header http.Header
			body   string
		}{
			"an extra field":         {200, jsonHeader(), `{"status":"ok","uptime":3}`},
			"a wrong value":          {200, jsonHeader(), `{"status":"fine"}`},
			"a wrong type":           {200, jsonHeader(), `{"status":1}`},
			"an undocumented status": {201, jsonHeader(), `{"status":"ok"}`},
			"no X-Request-Id":        {200, http.Header{"Content-Type": {"application/json"}}, `{"status":"ok"}`},
			"another content type":   {200, http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r"}}, `ok`},
		} {
			assert.Errorf(t, check("GET", "/healthz", tc.status, tc.header, []byte(tc.body)), "%s must be refused", name)
		}
	})

	t.Run("errors", func(t *testing.T) {
		good := `{"error":{"code":"not_found","message":"No such endpoint"}}`
		require.NoError(t, check("GET", "/nope", 404, jsonHeader(), []byte(good)))
		require.NoError(t, check("DELETE", "/v1/carts/x", 405, jsonHeader("Allow", "GET"), []byte(`{"error":{"code":"method_not_allowed","message":"m"}}`)))
		assert.Error(t, check("DELETE", "/v1/carts/x", 405, jsonHeader(), []byte(`{"error":{"code":"method_not_allowed","message":"m"}}`)), "405 without Allow")
		assert.Error(t, check("GET", "/nope", 404, jsonHeader(), []byte(`{"error":{"code":"no_such_code","message":"m"}}`)), "unknown code")
		assert.Error(t, check("GET", "/nope", 404, jsonHeader(), []byte(`{"error":{"code":"rate_limited","message":"m"}}`)), "code of another status")
		assert.Error(t, check("GET", "/nope", 404, jsonHeader(), []byte(`{"error":{"code":"not_found","message":"m","hint":"x"}}`)), "extra field in the error")
		assert.Error(t, check("GET", "/nope", 404, jsonHeader(), []byte(`{"error":{"code":"not_found"}}`)), "no message")
		assert.Error(t, check("GET", "/readyz", 503, jsonHeader(), []byte(`{"error":{"code":"service_unavailable","message":"m"}}`)), "503 without Retry-After")
		assert.Error(t, check("POST", "/webhooks/zinc", 204, http.Header{"X-Request-Id": {"r"}}, []byte(`{}`)), "a body on a 204")
	})

	t.Run("order", func(t *testing.T) {
		e := newOrdersEnv(t, sqlstore.DialectSQLite)
		key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
		created := e.newOrder(t, key)
		path := "/v1/orders/" + created.ID
		r := e.get(t, path, key) // validated by send
		require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
		require.NoError(t, check("GET", path, r.status, r.header, r.body), "control: the real answer passes")

		edit := func(f func(order map[string]any)) []byte {
			var body map[string]map[string]any
			dec := json.NewDecoder(bytes.NewReader(r.body))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&body))
			f(body["order"])
			b, err := json.Marshal(body)
			require.NoError(t, err)
			return b
		}
		for name, body := range map[string][]byte{
			"a field the document does not know": edit(func(o map[string]any) { o["loyalty_points"] = 3 }),
			"a nested field it does not know":    edit(func(o map[string]any) { o["payment"].(map[string]any)["fee"] = "0" }),
			"total as a string":                  edit(func(o map[string]any) { o["total"] = "12.00" }),
			"amount_due as a number":             edit(func(o map[string]any) { o["payment"].(map[string]any)["amount_due"] = 1 }),
			"a status it does not know":          edit(func(o map[string]any) { o["status"] = "lost" }),
			"null where it is not nullable":      edit(func(o map[string]any) { o["tracking_url"] = nil }),
			"a required field missing":           edit(func(o map[string]any) { delete(o, "shipments") }),
			"a carrier that is a number":         edit(func(o map[string]any) { o["tracking"].(map[string]any)["carrier"] = 5 }),
		} {
			err := check("GET", path, http.StatusOK, r.header, body)
			if assert.Errorf(t, err, "%s must be refused", name) {
				t.Logf("%s: %v", name, err)
			}
		}
		noLimit := r.header.Clone()
		noLimit.Del("X-RateLimit-Remaining")
		assert.Error(t, check("GET", path, http.StatusOK, noLimit, r.body), "a documented header missing")
		assert.Error(t, check("GET", path, http.StatusCreated, r.header, r.body), "a status the route does not answer")
	})
}

// TestOpenAPIRequestExamples validates well-formed requests (the README's
// walkthrough) against the document's request schemas, and a few that the
// server refuses.
func TestOpenAPIRequestExamples(t *testing.T) {
	v, err := openAPI()
	require.NoError(t, err)
	order := `{"cart_id":"crt_NikswNzLVwAdGVT6cx5aiqav","customer_email":"ada@example.com","payment_asset":"USDC",
		"shipping_address":{"name":"Ada Lovelace","phone":"+1 415 555 0100","line1":"1 Market St",
		"city":"San Francisco","region":"CA","postal_code":"94107","country":"US"}}`
	cases := []struct {
		method, path, body string
		header             map[string]string
		valid              bool
	}{
		{"POST", "/v1/products/preview", `{"url":"https://www.amazon.com/dp/B08N5WRWNW"}`, nil, true},
		{"POST", "/v1/carts", `{"items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","quantity":1}],"ship_to_country":"US","ship_to_postal_code":"94107"}`, nil, true},
		{"POST", "/v1/orders", order, map[string]string{"Idempotency-Key": "7d1f0c2e-first-try"}, true},
		{"GET", "/v1/orders/32205377465", "", nil, true},
		{"GET", "/v1/carts/crt_NikswNzLVwAdGVT6cx5aiqav", "", nil, true},
		{"GET", "/v1/orders?status=created&created%5Bgte%5D=2026-11-21T00:00:00Z&limit=100&starting_after=ord_qFvWY8oemOivwzGNjVPB6TmZ", "", nil, true},
		{"GET", "/v1/orders?limit=101", "", nil, false},
		{"GET", "/v1/orders?status=lost", "", nil, false},
		{"POST", "/v1/orders/32205377465/cancel", "", nil, true},
		{"POST", "/v1/orders/32205377465/cancel", `{"reason":"changed my mind"}`, nil, true},
		{"POST", "/v1/orders/32205377465/cancel", `{"reason":"x","why":"y"}`, nil, false},
		{"POST", "/v1/test_helpers/orders/32205377465/payments", "", nil, true},
		{"POST", "/v1/test_helpers/orders/32205377465/payments", `{"amount":"100"}`, nil, true},
		{"POST", "/v1/test_helpers/orders/32205377465/payments", `{"amount":12.5,"asset":"XLM"}`, nil, true},
		{"POST", "/v1/products/preview", `{"url":"https://www.amazon.com/dp/B08N5WRWNW","Url":"x"}`, nil, false},
		{"POST", "/v1/carts", `{"items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","quantity":11}],"ship_to_country":"US"}`, nil, false},
		{"POST", "/v1/carts", `{"items":[],"ship_to_country":"US"}`, nil, false},
		{"POST", "/v1/carts", `{"items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","quantity":1}],"ship_to_country":"US","metadata":{"customer_ref":"C-1042","campaign":""}}`, nil, true},
		{"POST", "/v1/carts", `{"items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","quantity":1}],"ship_to_country":"US","metadata":{"n":1}}`, nil, false},
		{"POST", "/v1/orders", strings.Replace(order, `"cart_id"`, `"metadata":{"order_ref":"SO-77"},"cart_id"`, 1), nil, true},
		{"POST", "/v1/orders", strings.Replace(order, `"cart_id"`, `"cartId"`, 1), nil, false},
		{"POST", "/v1/orders", order, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %s", tc.method, tc.path, clip([]byte(tc.body), 40)), func(t *testing.T) {
			var body io.Reader = http.NoBody
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req := httptest.NewRequest(tc.method, tc.path, body)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer mc_test_"+strings.Repeat("a", 32))
			for k, val := range tc.header {
				req.Header.Set(k, val)
			}
			err := v.validateRequest(t, req)
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestOpenAPIWebhookAndTrackingResponses sends what the webhook tests send
// through send, so those routes' answers are validated too.
func TestOpenAPIWebhookAndTrackingResponses(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite, withWebhooks())
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	o := e.newOrder(t, key)
	hook := func(provider, sig, body string) response {
		return e.send(t, request{method: http.MethodPost, path: "/webhooks/" + provider, body: body,
			header: map[string]string{"X-Test-Signature": sig}})
	}
	assert.Equal(t, http.StatusNoContent, hook("zinc", "good", "evt_1 zn_1 "+o.ID).status)
	assert.Equal(t, http.StatusNoContent, hook("zinc", "good", "evt_2 zn_unknown").status)
	requireError(t, hook("zinc", "forged", "evt_3 zn_1 "+o.ID), http.StatusUnauthorized, models.CodeInvalidSignature, "")
	requireError(t, hook("zinc", "good", "evt_4 zn_\x00"), http.StatusBadRequest, models.CodeInvalidRequest, "")
	requireError(t, hook("acme", "good", "evt_5"), http.StatusNotFound, models.CodeNotFound, "")
	e.wf.hintErr = errors.New("temporal: connection refused")
	r := hook("zinc", "good", "evt_6 zn_1 "+o.ID)
	requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
	assert.Equal(t, "2", r.header.Get("Retry-After"))

	assert.Equal(t, http.StatusOK, e.get(t, "/track/"+o.Number, "").status)
	assert.Equal(t, http.StatusNotFound, e.get(t, "/track/123", "").status)
	assert.Equal(t, http.StatusOK, e.get(t, "/readyz", "").status)
}
