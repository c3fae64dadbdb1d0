package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

func TestRequestFingerprint(t *testing.T) {
	base := requestFingerprint("POST", "/v1/carts", []byte(`{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US"}`))
	same := map[string]string{
		"spacing":             "{ \"items\" : [ {\"product_url\":\"u\", \"quantity\":1} ],\n\t\"ship_to_country\":\"US\" }",
		"key order":           `{"ship_to_country":"US","items":[{"quantity":1,"product_url":"u"}]}`,
		"escaped the same":    `{"items":[{"product_url":"\u0075","quantity":1}],"ship_to_country":"\u0055S"}`,
		"trailing whitespace": `{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US"}` + "\n",
	}
	for name, body := range same {
		if got := requestFingerprint("POST", "/v1/carts", []byte(body)); got != base {
			t.Errorf("%s: fingerprint differs; the same request must match", name)
		}
	}
	different := map[string]struct{ method, path, body string }{
		"another value":       {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":2}],"ship_to_country":"US"}`},
		"number as written":   {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":1.0}],"ship_to_country":"US"}`},
		"array order":         {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":1},{"product_url":"v","quantity":1}],"ship_to_country":"US"}`},
		"another path":        {"POST", "/v1/products/preview", `{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US"}`},
		"another method":      {"PUT", "/v1/carts", `{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US"}`},
		"a duplicate key":     {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US","ship_to_country":"US"}`},
		"a string not a num":  {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":"1"}],"ship_to_country":"US"}`},
		"no body":             {"POST", "/v1/carts", ``},
		"invalid JSON prefix": {"POST", "/v1/carts", `{"items":[{"product_url":"u","quantity":1}],"ship_to_country":"US"}x`},
	}
	for name, r := range different {
		if got := requestFingerprint(r.method, r.path, []byte(r.body)); got == base {
			t.Errorf("%s: same fingerprint; a different request must not match", name)
		}
	}
	// Bodies that are not canonical JSON count byte for byte.
	for name, pair := range map[string][2]string{
		"lone surrogates":       {`{"a":"\ud800"}`, `{"a":"\udbff"}`},
		"invalid UTF-8":         {"{\"a\":\"\xff\"}", "{\"a\":\"\xfe\"}"},
		"whitespace only":       {" ", ""},
		"not JSON":              {"a=1", "a=2"},
		"duplicate keys differ": {`{"a":1,"a":2}`, `{"a":2,"a":1}`},
	} {
		if requestFingerprint("POST", "/p", []byte(pair[0])) == requestFingerprint("POST", "/p", []byte(pair[1])) {
			t.Errorf("%s: %q and %q share a fingerprint", name, pair[0], pair[1])
		}
	}
	// Two calls on two copies: the fingerprint depends on the bytes, not
	// on the slice or any state kept between calls.
	first, second := requestFingerprint("POST", "/p", []byte("a=1")), requestFingerprint("POST", "/p", []byte("a=1"))
	if first != second {
		t.Error("the same raw body must match itself")
	}
	// A method/path boundary cannot be shifted into the body.
	if requestFingerprint("POST", "/a"+"b", nil) == requestFingerprint("POST", "/a", []byte("b")) {
		t.Error("path and body run together")
	}
}

// A kept answer replays byte for byte; one kept before JSON bodies ended
// with a newline gets it, so that a replay ends as every answer does.
func TestReplayEndsJSONWithANewline(t *testing.T) {
	for name, tt := range map[string]struct {
		contentType, kept, want string
	}{
		"kept with its newline":    {"application/json; charset=utf-8", "{\"a\":1}\n", "{\"a\":1}\n"},
		"kept without a newline":   {"application/json; charset=utf-8", `{"a":1}`, "{\"a\":1}\n"},
		"not JSON, left as it was": {"text/plain", "ok", "ok"},
	} {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			kept := []byte(tt.kept)
			replay(c, &models.StoredResponse{Status: http.StatusCreated, Header: map[string]string{"Content-Type": tt.contentType}, Body: kept})
			if w.Code != http.StatusCreated || w.Body.String() != tt.want {
				t.Errorf("replayed %d %q, want 201 %q", w.Code, w.Body.String(), tt.want)
			}
			if string(kept) != tt.kept {
				t.Errorf("the kept body changed: %q", kept)
			}
		})
	}
}
