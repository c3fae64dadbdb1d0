package upstream

import (
	"fmt"
	"net/url"
)

// IsBaseURL reports whether raw is an http(s) base URL a client can append
// paths to: a scheme, a host, no query.
func IsBaseURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.RawQuery == ""
}

// OrDefault is a client's setting v, or def when v is zero (unset). A
// negative v is an error naming the client (pkg) and the setting (field).
func OrDefault[T ~int64 | ~float64](pkg, field string, v, def T) (T, error) {
	switch {
	case v < 0:
		return v, fmt.Errorf("%s: %s must not be negative", pkg, field)
	case v == 0:
		return def, nil
	}
	return v, nil
}
