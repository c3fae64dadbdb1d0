package upstream

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBaseURL: empty is unset and takes the default; anything but an
// http(s) URL with a host and no query is refused in the client's words.
func TestBaseURL(t *testing.T) {
	got, err := BaseURL("zinc", "BaseURL", "", "https://api.example.com")
	assert.NoError(t, err)
	assert.Equal(t, "https://api.example.com", got)
	for raw, ok := range map[string]bool{
		"https://api.example.com":      true,
		"http://127.0.0.1:8080/v1/":    true,
		"ftp://api.example.com":        false,
		"https://":                     false,
		"api.example.com":              false,
		"https://api.example.com/?a=b": false,
		"https://api.example.com/%zz":  false,
	} {
		got, err := BaseURL("ebay", "APIURL", raw, "https://default.example.com")
		if ok {
			assert.NoError(t, err, raw)
			assert.Equal(t, raw, got)
		} else {
			assert.EqualError(t, err, fmt.Sprintf("ebay: APIURL %q is not an http(s) base URL", raw))
		}
	}
}

// TestOrDefault: zero is unset and takes the default; a negative setting
// is refused in the client's words.
func TestOrDefault(t *testing.T) {
	got, err := OrDefault("zinc", "Timeout", 0, 10*time.Second)
	assert.NoError(t, err)
	assert.Equal(t, 10*time.Second, got)
	got, err = OrDefault("zinc", "Timeout", time.Second, 10*time.Second)
	assert.NoError(t, err)
	assert.Equal(t, time.Second, got)
	_, err = OrDefault("ebay", "RequestsPerSecond", -0.5, 5)
	assert.EqualError(t, err, "ebay: RequestsPerSecond must not be negative")
}
