//go:build clustertest

package main

// The payouts driver on a cluster of its own: `make cluster-test`. It
// builds the prod memocart and runs the Temporal binaries, so it is kept
// out of `make test` by its build tag.

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/cmd/devstack/cluster/chaos"
	"github.com/memocart/memocart/cmd/internal/app"
)

// TestClusterPayoutsRefundsApprovedAtOncePaidOnce runs `devstack payouts`'
// driver with 5 refunds: the two-worker cluster with live mode on the
// test servers pays each refund approved at once exactly once (counted on
// the Horizon test server's ledger), with no submission refused for its
// sequence number, and the live books balance.
func TestClusterPayoutsRefundsApprovedAtOncePaidOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "memocart")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/memocart")
	build.Dir = filepath.Join("..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building memocart: %s", out)

	var progress bytes.Buffer
	e := app.Env{Stdout: &progress, Stderr: &progress}
	oc, err := startOwnCluster(ctx, e, "payouts-test", ownClusterFlags{memocart: bin}, true,
		map[string]string{"MEMOCART_REFUND_AUTO_APPROVE_MAX": "0"})
	require.NoError(t, err, "%s", progress.String())
	defer oc.down()

	rep, err := chaos.Payouts(ctx, oc.c, chaos.PayoutsOptions{Refunds: 5, Concurrency: 5, Live: oc.live, Memocart: oc.memocart,
		RequestTimeout: 10 * time.Second, Wait: 3 * time.Minute, Seed: uint64(time.Now().UnixNano()), Out: &progress})
	require.NoError(t, err, "%s", progress.String())
	var table strings.Builder
	rep.Print(&table)
	t.Log("\n" + table.String())
	require.Len(t, rep.Invariants, 5)
	for _, inv := range rep.Invariants {
		assert.Zero(t, inv.Count, "%s: %v", inv.Name, inv.Examples)
	}
	assert.Contains(t, table.String(), "| refunds approved at once | 5 |")
	assert.Contains(t, table.String(), "| transactions submitted to Horizon / refused before a ledger (by code) | 5 / 0 |",
		"one submission per refund")
	ledger := 0
	for _, p := range oc.live.Horizon.LedgerPayments() {
		if p.From == oc.live.Payout {
			ledger++
		}
	}
	assert.Equal(t, 5, ledger, "five payouts on the ledger")
}
