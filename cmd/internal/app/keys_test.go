package app

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestKeysCreatePerMinuteBounds: an enterprise budget the limiter could not
// enforce is refused up front, not stored and then served unlimited.
func TestKeysCreatePerMinuteBounds(t *testing.T) {
	env := map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	require.NoError(t, Run(context.Background(), []string{"migrate"}, getenv, &bytes.Buffer{}, &bytes.Buffer{}))
	create := func(perMinute int) (string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), []string{"keys", "create", "--account", "acme", "--mode", "test",
			"--tier", "enterprise", "--per-minute", strconv.Itoa(perMinute)}, getenv, &out, &errOut)
		return out.String() + errOut.String(), err
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
	env := map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}
	for _, args := range [][]string{
		{"keys", "create", "--mode", "staging", "--tier", "pro"},
		{"webhooks", "create", "--mode", "staging", "--url", "https://hooks.example.com/x", "--events", "*"},
	} {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "--account is required", args)
		assert.Contains(t, err.Error(), "--mode must be test or live", args)
		assert.NotContains(t, err.Error(), "no database", args)
	}
}
