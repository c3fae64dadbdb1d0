package app

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHealthcheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	check := func(args ...string) error {
		return Run(t.Context(), append([]string{"healthcheck"}, args...), func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
	}
	assert.NoError(t, check(srv.URL+"/readyz"))
	assert.ErrorContains(t, check(srv.URL+"/other"), "503")
	assert.ErrorContains(t, check("http://127.0.0.1:1/readyz"), "healthcheck:")
	assert.ErrorContains(t, check("ftp://example.com/"), "not an http(s) URL")
	assert.Error(t, check())
}
