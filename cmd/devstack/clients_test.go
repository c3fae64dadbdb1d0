package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientsQuickstartGo runs docs/clients.md's Go quickstart as a reader
// would, against `devstack dev`: the program as the page shows it, in a
// module of its own that requires the Go client (from this repository),
// with the two variables the page exports. A renamed field, a new required
// one or a changed answer fails it.
func TestClientsQuickstartGo(t *testing.T) {
	blocks := docBlocksOf(t, "../../docs/clients.md", "\n### Quickstart", "go")
	require.Len(t, blocks, 1, "one Go program")
	clientDir, err := filepath.Abs("../../api/client")
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(clientDir, "go.sum"))
	require.NoError(t, err)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"main.go": blocks[0],
		"go.mod": "module quickstart\n\ngo 1.26.8\n\nrequire github.com/memocart/memocart/api/client v0.0.0\n\n" +
			"require github.com/shopspring/decimal v1.6.0 // indirect\n\nreplace github.com/memocart/memocart/api/client => " + clientDir + "\n",
		"go.sum": string(sum),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}

	s := startDev(t, "sqlite", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMOCART_API="+s.baseURL, "MEMOCART_KEY="+s.key, "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^preview: .+ USD$`, string(out))
	assert.Regexp(t, `(?m)^order: \d{11} pay \d+\.\d{2} USDC to G[A-Z2-7]{55} memo \d{11}$`, string(out))
	assert.Regexp(t, `(?m)^status: delivered$`, string(out))
	assert.Regexp(t, `(?m)^webhook: order\.paid evt_\w{24} verified, order \d{11}$`, string(out))
	assert.Regexp(t, `(?m)^webhook: order\.delivered evt_\w{24} verified, order \d{11}$`, string(out))
	t.Logf("quickstart output:\n%s", out)
}
