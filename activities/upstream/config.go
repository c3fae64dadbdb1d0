package upstream

import (
	"fmt"
	"net/url"
)

// BaseURL is a client's base URL setting v, or def when v is empty. One
// that is not an http(s) base URL a client can append paths to (a scheme,
// a host, no query) is an error naming the client (pkg) and the setting
// (field).
func BaseURL(pkg, field, v, def string) (string, error) {
	if v == "" {
		v = def
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return v, fmt.Errorf("%s: %s %q is not an http(s) base URL", pkg, field, v)
	}
	return v, nil
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
