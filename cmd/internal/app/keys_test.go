package app

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestKeysCreatePerMinuteBounds: an enterprise budget the limiter could not
// enforce is refused up front, not stored and then served unlimited.
func TestKeysCreatePerMinuteBounds(t *testing.T) {
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}}
	c.ok("migrate")
	create := func(perMinute int) (string, error) {
		out, errOut, err := c.run("keys", "create", "--account", "acme", "--mode", "test",
			"--tier", "enterprise", "--per-minute", strconv.Itoa(perMinute))
		return out + errOut, err
	}
	out, err := create(models.MaxPerMinute + 1)
	require.Error(t, err)
	assert.Contains(t, err.Error()+out, "--per-minute must be at most 600000")
	_, err = create(models.MaxPerMinute)
	require.NoError(t, err)
}

// TestCreateCommandsRefuseBadFlagsBeforeTheDatabase: keys create and
// webhooks create name every fault of their flags at once, and refuse
// before they look for a database (there is none here).
func TestCreateCommandsRefuseBadFlagsBeforeTheDatabase(t *testing.T) {
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}}
	for _, args := range [][]string{
		{"keys", "create", "--mode", "staging", "--tier", "pro"},
		{"webhooks", "create", "--mode", "staging", "--url", "https://hooks.example.com/x", "--events", "*"},
	} {
		_, _, err := c.run(args...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "--account is required", args)
		assert.Contains(t, err.Error(), "--mode must be test or live", args)
		assert.NotContains(t, err.Error(), "no database", args)
	}
}
