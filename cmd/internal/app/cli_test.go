package app

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// cli runs memocart commands in process with the variables given, as a
// shell would, and returns stdout, stderr and the error run returns (a
// non-zero exit).
type cli struct {
	t    *testing.T
	vars map[string]string
}

func (c cli) run(args ...string) (string, string, error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	err := Run(c.t.Context(), args, func(k string) string { return c.vars[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

func (c cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	require.NoError(c.t, err, "memocart %v\nstderr: %s", args, errOut)
	return out
}

// TestOperatorCommandsNeverCreateADatabase: run from the wrong directory,
// an operator command says where it looked instead of working on a new
// empty database.
func TestOperatorCommandsNeverCreateADatabase(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": dir}}
	for _, args := range [][]string{
		{"keys", "list"},
		{"keys", "create", "--account", "acme", "--mode", "test", "--tier", "pro"},
		{"keys", "revoke", "key_x"},
		{"payments", "list"},
		{"payments", "clear-alert", "stellar_before_history"},
		{"webhooks", "list"},
	} {
		_, _, err := c.run(args...)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "no database at "+filepath.Join(dir, "memocart.db"), "%v", args)
		assert.Contains(t, err.Error(), "MEMOCART_DATA_DIR", "%v names the way out", args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was created")

	// memocart migrate is how a database is made; then they work.
	c.ok("migrate")
	assert.Equal(t, "[]\n", c.ok("keys", "list", "--json"))
}

func TestKeysCommands(t *testing.T) {
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": t.TempDir()}}
	c.ok("migrate")

	var created keyOut
	require.NoError(t, json.Unmarshal([]byte(c.ok("keys", "create", "--account", "acme", "--mode", "test", "--tier", "pro", "--json")), &created))
	assert.NotEmpty(t, created.ID)
	assert.Equal(t, "acme", created.Account)
	assert.Equal(t, "test", created.Mode)
	assert.Equal(t, "pro", created.Tier)
	require.Regexp(t, `^mc_test_[0-9A-Za-z]{16,}$`, created.Key)
	other := c.ok("keys", "create", "--account", "acme", "--mode", "live", "--tier", "free") // the plain form: the key alone
	require.Regexp(t, `^mc_live_[0-9A-Za-z]{16,}\n$`, other)

	var listed []keyOut
	require.NoError(t, json.Unmarshal([]byte(c.ok("keys", "list", "--json")), &listed))
	require.Len(t, listed, 2)
	for _, k := range listed {
		assert.Empty(t, k.Key, "a listed key never shows its secret")
		assert.Nil(t, k.RevokedAt)
	}

	// Revoke by the key itself, as printed.
	out := c.ok("keys", "revoke", created.Key)
	assert.Contains(t, out, "revoked "+created.ID)
	out = c.ok("keys", "revoke", created.ID)
	assert.Contains(t, out, "was already revoked")
	require.NoError(t, json.Unmarshal([]byte(c.ok("keys", "list", "--json", "--account", "acme")), &listed))
	for _, k := range listed {
		assert.Equal(t, k.ID == created.ID, k.RevokedAt != nil, k.ID)
	}

	for _, ref := range []string{"key_nope", "mc_test_0000000000000000000000"} {
		_, _, err := c.run("keys", "revoke", ref)
		require.Error(t, err, ref)
		assert.Contains(t, err.Error(), "no key", ref)
	}
}

func TestPaymentsCommandsCheckTheDatabaseFirst(t *testing.T) {
	dir := t.TempDir()
	// A Temporal address that counts who connects: nothing should.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var dialled atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			_ = conn.Close()
		}
	}()
	c := cli{t: t, vars: map[string]string{"MEMOCART_DATA_DIR": dir, "MEMOCART_TEMPORAL_ADDRESS": ln.Addr().String()}}
	c.ok("migrate")

	number, err := models.NewOrderNumber(rand.Reader)
	require.NoError(t, err)
	_, _, err = c.run("payments", "attach", "pay_missing", number)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no payment pay_missing")
	_, _, err = c.run("payments", "attach", "pay_missing", "not-a-number")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a valid order number")
	assert.Zero(t, dialled.Load(), "Temporal contacted before the database said no")

	// clear-alert: an unknown kind is an error naming the open ones.
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(dir, "memocart.db"), nil)
	require.NoError(t, err)
	require.NoError(t, st.RaiseAlert(t.Context(), "stellar_before_history", "cursor older than history", time.Now()))
	require.NoError(t, st.Close())

	var listed paymentsOut
	require.NoError(t, json.Unmarshal([]byte(c.ok("payments", "list", "--json")), &listed))
	require.Len(t, listed.Alerts, 1)
	assert.Equal(t, "stellar_before_history", listed.Alerts[0].Kind)
	assert.Empty(t, listed.Unmatched)
	assert.Empty(t, listed.RefundsDue)

	_, _, err = c.run("payments", "clear-alert", "stellar_before_histroy")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no open alert "stellar_before_histroy" (open: stellar_before_history)`)
	assert.Contains(t, c.ok("payments", "clear-alert", "stellar_before_history"), "cleared")
	_, _, err = c.run("payments", "clear-alert", "stellar_before_history")
	require.Error(t, err, "clearing twice")

	_, _, err = c.run("payments", "frobnicate")
	require.Error(t, err)
}
