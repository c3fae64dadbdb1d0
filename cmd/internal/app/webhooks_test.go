package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestWebhooksCommand drives `memocart webhooks` on a database without a
// running stack.
func TestWebhooksCommand(t *testing.T) {
	runCmd := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}}.run
	_, errOut, err := runCmd("migrate")
	require.NoError(t, err, errOut)
	_, errOut, err = runCmd("keys", "create", "--account", "acme", "--mode", "test", "--tier", "pro")
	require.NoError(t, err, errOut)

	_, _, err = runCmd("webhooks", "create", "--account", "nobody", "--mode", "test", "--url", "https://hooks.example.com/x", "--events", "*")
	assert.ErrorContains(t, err, "no such account")
	_, _, err = runCmd("webhooks", "create", "--account", "acme", "--mode", "live", "--url", "https://127.0.0.1/x", "--events", "*")
	assert.ErrorContains(t, err, "--url")
	_, _, err = runCmd("webhooks", "create", "--account", "acme", "--mode", "test", "--url", "https://hooks.example.com/x", "--events", "order.lost")
	assert.ErrorContains(t, err, "--events")

	out, errOut, err := runCmd("webhooks", "create", "--account", "acme", "--mode", "test", "--url", "https://hooks.example.com/x", "--events", "order.paid, order.delivered")
	require.NoError(t, err, errOut)
	secret := strings.TrimSpace(out)
	assert.Regexp(t, `^whsec_[0-9A-Za-z]{32}$`, secret, "stdout holds the secret and nothing else")
	assert.Contains(t, errOut, "order.paid,order.delivered")
	id := strings.Fields(strings.TrimPrefix(errOut, "created webhook endpoint "))[0]
	require.True(t, models.ValidID("we", id), errOut)

	out, _, err = runCmd("webhooks", "list")
	require.NoError(t, err)
	assert.Contains(t, out, id)
	assert.Contains(t, out, "https://hooks.example.com/x")
	assert.NotContains(t, out, secret, "listings never show a secret")
	out, _, err = runCmd("webhooks", "deliveries", id)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "a header and no attempts: %q", out)

	out, _, err = runCmd("webhooks", "delete", id)
	require.NoError(t, err)
	assert.Contains(t, out, "deleted "+id)
	_, _, err = runCmd("webhooks", "delete", id)
	assert.Error(t, err, "deleted twice")
	out, _, err = runCmd("webhooks", "list", "--account", "acme")
	require.NoError(t, err)
	assert.Contains(t, out, "deleted")
	out, _, err = runCmd("webhooks", "list", "--account", "acme", "--json")
	require.NoError(t, err)
	var listed []endpointOut
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed, 1)
	assert.Equal(t, id, listed[0].ID)
	assert.Equal(t, "deleted", listed[0].Status)
	assert.Equal(t, []string{"order.paid", "order.delivered"}, listed[0].Events)
	assert.NotNil(t, listed[0].DeletedAt)
	assert.NotContains(t, out, secret)
	_, _, err = runCmd("webhooks", "frobnicate")
	assert.Error(t, err)
}

func TestWebhookConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.True(t, cfg.WebhookTestLoopback, "test keys may use localhost by default (development)")
	assert.Nil(t, cfg.WebhookSecretsKey)

	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	vars := map[string]string{"MEMOCART_WEBHOOK_SECRETS_KEY": key, "MEMOCART_WEBHOOK_TEST_LOOPBACK": "false"}
	cfg, err = loadConfig(envOf(vars))
	require.NoError(t, err)
	assert.Len(t, cfg.WebhookSecretsKey, 32)
	assert.False(t, cfg.WebhookTestLoopback)
	masked := cfg.Masked(envOf(vars))
	assert.Contains(t, masked, "MEMOCART_WEBHOOK_SECRETS_KEY=****", "nothing of the key is shown")
	assert.NotContains(t, masked, key[:4])

	for k, v := range map[string]string{
		"MEMOCART_WEBHOOK_SECRETS_KEY":   "c2hvcnQ=", // 5 bytes
		"MEMOCART_WEBHOOK_TEST_LOOPBACK": "maybe",
	} {
		_, err := loadConfig(envOf(map[string]string{k: v}))
		assert.ErrorContains(t, err, k, fmt.Sprintf("%s=%s must be refused", k, v))
	}
}
