package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// raw sends a request outside e.send: the paths and methods here are not
// the OpenAPI document's own spelling, so its validator is not consulted;
// each answer is compared with the documented request's instead.
func (e *env) raw(t *testing.T, method, path, key, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.ts.URL+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := e.ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, b
}

func TestTrailingSlashIsThePathWithout(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	key := e.key(t, "acme", models.ModeTest, models.TierPro)

	want := e.post(t, "/v1/products/preview", key, previewBody(validPreviewURL))
	require.Equal(t, http.StatusOK, want.status, "%s", want.body)
	for _, path := range []string{"/v1/products/preview/", "/v1/products/preview//"} {
		status, header, body := e.raw(t, http.MethodPost, path, key, previewBody(validPreviewURL))
		assert.Equal(t, want.status, status, path)
		assert.Equal(t, "application/json; charset=utf-8", header.Get("Content-Type"), path)
		assert.JSONEq(t, string(want.body), string(body), path)
	}
	status, _, body := e.raw(t, http.MethodGet, "/healthz/", "", "")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"ok"}`, string(body))
	// Still an unknown route when the path without the slash is one.
	status, _, body = e.raw(t, http.MethodGet, "/v1/nope/", key, "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), `"not_found"`)
}

func TestHeadWhereGetIs(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	key := e.key(t, "acme", models.ModeTest, models.TierPro)
	for _, tc := range []struct {
		path, key string
	}{
		{"/healthz", ""},
		{"/readyz", ""},
		{"/track/12345678901", ""}, // no such order: the styled not-found page
		{"/v1/openapi.json", ""},
		{"/v1/carts/crt_missing", key},
		{"/v1/orders/ord_missing", ""}, // no key: 401
	} {
		getStatus, getHeader, getBody := e.raw(t, http.MethodGet, tc.path, tc.key, "")
		require.NotEmpty(t, getBody, tc.path)
		status, header, body := e.raw(t, http.MethodHead, tc.path, tc.key, "")
		assert.Equal(t, getStatus, status, tc.path)
		assert.Equal(t, getHeader.Get("Content-Type"), header.Get("Content-Type"), tc.path)
		assert.Empty(t, body, tc.path)
	}
	// HEAD where only POST is stays a method error, as GET would be.
	status, header, _ := e.raw(t, http.MethodHead, "/v1/carts", key, "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Contains(t, header.Get("Allow"), http.MethodPost)
}
