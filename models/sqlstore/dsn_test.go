package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithConnectTimeout(t *testing.T) {
	assert.Equal(t, "postgres://u@h:5432/db?connect_timeout=5&sslmode=disable",
		withConnectTimeout("postgres://u@h:5432/db?sslmode=disable"))
	assert.Equal(t, "postgres://u@h/db?connect_timeout=30",
		withConnectTimeout("postgres://u@h/db?connect_timeout=30"), "the URL's own value wins")
}
