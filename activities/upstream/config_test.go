package upstream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestIsBaseURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://api.example.com":      true,
		"http://127.0.0.1:8080/v1/":    true,
		"ftp://api.example.com":        false,
		"https://":                     false,
		"api.example.com":              false,
		"https://api.example.com/?a=b": false,
		"https://api.example.com/%zz":  false,
	} {
		assert.Equal(t, want, IsBaseURL(raw), raw)
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
