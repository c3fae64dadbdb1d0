//go:build clustertest

// The end-to-end test of the topology: `make cluster-test`. It builds the
// Temporal binaries and the prod memocart, so it is kept out of `make
// test` by its build tag.

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/memocart/memocart/workflows"
)

func TestClusterTakesAnOrderToDelivered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 18*time.Minute)
	defer cancel()
	moduleDir := goModuleDir(t)

	// The state dir is not under t.TempDir(): its parents are private to
	// root, and Postgres runs as the postgres user when the test is root.
	stateDir, err := os.MkdirTemp("", "memocart-cluster-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(stateDir, 0o755))
	memocart := filepath.Join(stateDir, "memocart")
	build := exec.CommandContext(ctx, "go", "build", "-o", memocart, "./cmd/memocart")
	build.Dir = filepath.Join(moduleDir, "..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building memocart: %s", out)

	// The Temporal binaries are shared between runs: linking them is most
	// of a warm start.
	cacheDir, err := os.UserCacheDir()
	require.NoError(t, err)
	var progress bytes.Buffer
	c, err := New(Options{
		StateDir: stateDir, BinDir: filepath.Join(cacheDir, "memocart", "cluster-bin"),
		ModuleDir: moduleDir, Memocart: memocart, PortBase: freePortBase(t),
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
			"MEMOCART_SANDBOX_STEP_DELAY=200ms", "MEMOCART_LOG_LEVEL=info"},
		Out: &progress,
	})
	require.NoError(t, err)
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			_ = c.Down(context.Background())
		}
		if t.Failed() {
			t.Logf("cluster output:\n%s", progress.String())
			for _, n := range c.Names() {
				t.Logf("--- last lines of %s:\n%s", n, tail(c.LogPath(n), 15))
			}
		}
		_ = os.RemoveAll(stateDir)
	})

	began := time.Now()
	require.NoError(t, c.Up(ctx))
	t.Logf("up in %v on port base %d:\n%s", time.Since(began).Round(time.Millisecond), c.ports.Base, progress.String())
	key := c.APIKey()
	require.True(t, strings.HasPrefix(key, "mc_test_"), "test key %q", key)
	env, err := os.ReadFile(c.EnvFile())
	require.NoError(t, err)
	assert.Contains(t, string(env), "export KEY='"+key+"'")
	assert.Contains(t, string(env), "export MEMOCART_TEMPORAL_ADDRESS='"+addr(c.ports.Frontend)+"'")

	// A second up finds everything running and starts nothing.
	pidsBefore := pids(t, c)
	progress.Reset()
	require.NoError(t, c.Up(ctx))
	assert.Equal(t, pidsBefore, pids(t, c))
	assert.NotContains(t, progress.String(), " started ")

	api1, api2 := "http://"+addr(c.ports.API[0]), "http://"+addr(c.ports.API[1])
	code, body := call(t, "POST", api1+"/v1/carts", key, map[string]any{
		"items": []map[string]any{{"product_url": "https://www.amazon.com/dp/B08N5WRWNW", "quantity": 1}}, "ship_to_country": "US"})
	require.Equal(t, http.StatusCreated, code, body)
	cartID := body["cart"].(map[string]any)["id"].(string)
	code, body = call(t, "POST", api1+"/v1/orders", key, map[string]any{
		"cart_id": cartID, "customer_email": "ada@example.com", "payment_asset": "USDC",
		"shipping_address": map[string]any{"name": "Ada Lovelace", "phone": "+1 415 555 0100", "line1": "1 Market St",
			"city": "San Francisco", "region": "CA", "postal_code": "94107", "country": "US"}})
	require.Equal(t, http.StatusCreated, code, body)
	number := body["order"].(map[string]any)["number"].(string)
	// Paid through the other replica: the order's state is in Postgres and
	// Temporal, not in the process that created it.
	code, body = call(t, "POST", api2+"/v1/test_helpers/orders/"+number+"/payments", key, nil)
	require.Equal(t, http.StatusCreated, code, body)
	assert.Equal(t, "matched", body["payment"].(map[string]any)["outcome"])

	var seen []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body = call(t, "GET", api2+"/v1/orders/"+number, key, nil)
		require.Equal(t, http.StatusOK, code, body)
		st := body["order"].(map[string]any)["status"].(string)
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		if st == "delivered" {
			break
		}
		require.False(t, time.Now().After(deadline), "order stuck in %s (seen %v)", st, seen)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("order %s: %v", number, seen)

	// The workflow is found by its search attribute in SQL visibility, as an
	// operator finds it in the UI.
	tc, err := c.dialTemporal(ctx)
	require.NoError(t, err)
	defer tc.Close()
	require.NoError(t, workflows.CheckNamespace(ctx, tc.OperatorService(), Namespace))
	require.Eventually(t, func() bool {
		resp, err := tc.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: Namespace, Query: fmt.Sprintf(`OrderNumber = %q AND OrderStatus = "delivered"`, number)})
		return err == nil && len(resp.GetExecutions()) == 1
	}, 30*time.Second, 200*time.Millisecond, "order workflow not listed by OrderNumber and OrderStatus")

	var status bytes.Buffer
	require.NoError(t, c.PrintStatus(ctx, &status), status.String())
	for _, n := range c.Names() {
		assert.Regexp(t, `(?m)^`+n+`\s+\d+\s+\S+.*\s+ok\s+`, status.String())
	}

	// A component killed is reported and comes back on start.
	require.NoError(t, c.Stop("worker-1", true))
	assert.Error(t, c.PrintStatus(ctx, io.Discard))
	require.NoError(t, c.Start(ctx, "worker-1"))
	require.NoError(t, c.PrintStatus(ctx, io.Discard))
	// So does a crashed Postgres (its backends are in sessions of their
	// own), and the rest of the cluster reconnects to it.
	require.NoError(t, c.Stop("postgres", true))
	require.NoError(t, c.Start(ctx, "postgres"))
	require.Eventually(t, func() bool { return c.PrintStatus(ctx, io.Discard) == nil }, time.Minute, 500*time.Millisecond)

	// Down leaves no process of the cluster and frees every port.
	all := pids(t, c)
	downDone = true
	require.NoError(t, c.Down(ctx))
	for name, pid := range all {
		assert.Empty(t, groupMembers(pid), "%s (process group %d) left processes", name, pid)
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		assert.True(t, os.IsNotExist(err), "%s (pid %d) not reaped", name, pid)
	}
	entries, err := os.ReadDir(c.path("run"))
	require.NoError(t, err)
	assert.Empty(t, entries, "pid files left")
	require.NoError(t, c.checkPortsFree())
}

// pids returns the pid of every component, all of which must run.
func pids(t *testing.T, c *Cluster) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, n := range c.Names() {
		rec, ok := readPID(c.pidPath(n))
		require.True(t, ok, "%s is not running", n)
		out[n] = rec.pid
	}
	return out
}

func call(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// freePortBase returns a base, away from the default one a developer's
// cluster uses, whose every port is free now.
func freePortBase(t *testing.T) int {
	t.Helper()
	for base := 27000; base+939 <= MaxMembershipPort; base += 1000 {
		free := true
		for _, p := range PortsAt(base).All() {
			ln, err := net.Listen("tcp", addr(p))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port base")
	return 0
}

// goModuleDir is this module's directory (cmd/devstack): its go.mod pins the
// Temporal binaries, and the service module is two levels up.
func goModuleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	return filepath.Dir(strings.TrimSpace(string(out)))
}
