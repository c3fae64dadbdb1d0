package api

import (
	"net/http"
	"strings"
)

// normalizePath lets every route answer as clients expect before Gin
// routes the request:
//
//   - a path with trailing slashes is the path without them: a client
//     that appends one (POST /v1/products/preview/) gets the endpoint, not
//     a 404 or an empty redirect a POST cannot follow;
//   - HEAD is answered wherever GET is, as GET with the body dropped (the
//     HTTP server discards a HEAD response's body; the headers, status and
//     Content-Length are GET's), so link checkers and monitors work.
func normalizePath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trimmed := len(r.URL.Path) > 1 && strings.HasSuffix(r.URL.Path, "/")
		if !trimmed && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		if trimmed {
			r2.URL.Path = strings.TrimRight(r.URL.Path, "/")
			if r2.URL.Path == "" {
				r2.URL.Path = "/"
			}
			r2.URL.RawPath = ""
		}
		if r.Method == http.MethodHead {
			// The ResponseWriter remembers the request as HEAD and drops
			// whatever body GET writes.
			r2.Method = http.MethodGet
		}
		next.ServeHTTP(w, r2)
	})
}
