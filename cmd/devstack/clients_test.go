package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
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

// tsPackage returns the absolute path of the TypeScript client
// (api/typescript), compiled from its sources once per test run with its
// pinned tsc. Its node_modules come from `make ts` (npm ci from the lock
// file), which make test-e2e runs first; without them the test fails and
// says so.
func tsPackage(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../api/typescript")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "typescript", "bin", "tsc"))
	require.NoError(t, err, "the TypeScript client's dependencies are not installed: run make ts (npm ci in api/typescript)")
	tsBuild.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		tsBuildOut, tsBuildErr = exec.CommandContext(ctx, "npm", "--prefix", dir, "run", "build").CombinedOutput()
	})
	require.NoError(t, tsBuildErr, "npm run build in api/typescript:\n%s", tsBuildOut)
	return dir
}

var (
	tsBuild    sync.Once
	tsBuildOut []byte
	tsBuildErr error
)

// TestClientsTypeScriptIntegration runs the TypeScript client's
// integration tests (api/typescript/test/integration: preview → cart →
// order → test payment → delivered, the order's events listed and caught
// up on, the contract's errors) against `devstack dev`, with the two
// variables they need.
func TestClientsTypeScriptIntegration(t *testing.T) {
	pkg := tsPackage(t)
	s := startDev(t, "sqlite", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "--prefix", pkg, "run", "test:integration")
	cmd.Env = append(os.Environ(), "MEMOCART_API="+s.baseURL, "MEMOCART_KEY="+s.key)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^# pass [1-9]\d*$`, string(out))
	assert.Regexp(t, `(?m)^# fail 0$`, string(out))
	assert.Regexp(t, `(?m)^# skipped 0$`, string(out))
	t.Logf("integration tests:\n%s", out)
}

// TestClientsQuickstartTypeScript runs docs/clients.md's TypeScript
// quickstart as a reader would, against `devstack dev`: the program as the
// page shows it, in a directory of its own where @memocart/client is the
// package of this repository, compiled with the package's pinned tsc and
// run with node with the two variables the page exports. A renamed field,
// a new required one or a changed answer fails it.
func TestClientsQuickstartTypeScript(t *testing.T) {
	blocks := docBlocksOf(t, "../../docs/clients.md", "\n## TypeScript", "ts")
	require.Len(t, blocks, 1, "one TypeScript program in the TypeScript section")
	pkg := tsPackage(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "quickstart.ts"), []byte(blocks[0]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "type": "module"}`+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "node_modules", "@memocart"), 0o755))
	require.NoError(t, os.Symlink(pkg, filepath.Join(dir, "node_modules", "@memocart", "client")))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tsc := exec.CommandContext(ctx, "node", filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc"),
		"--strict", "--target", "es2022", "--lib", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--types", "node", "--typeRoots", filepath.Join(pkg, "node_modules", "@types"), "--outDir", "out", "quickstart.ts")
	tsc.Dir = dir
	out, err := tsc.CombinedOutput()
	require.NoError(t, err, "tsc:\n%s", out)

	s := startDev(t, "sqlite", nil)
	cmd := exec.CommandContext(ctx, "node", filepath.Join("out", "quickstart.js"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMOCART_API="+s.baseURL, "MEMOCART_KEY="+s.key)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^preview: .+ \d+\.\d{2} USD$`, string(out))
	assert.Regexp(t, `(?m)^order: \d{11} pay \d+\.\d{2} USDC to G[A-Z2-7]{55} memo \d{11}$`, string(out))
	assert.Regexp(t, `(?m)^status: delivered$`, string(out))
	assert.Regexp(t, `(?m)^webhook: order\.paid evt_\w{24} verified, order \d{11}$`, string(out))
	assert.Regexp(t, `(?m)^webhook: order\.delivered evt_\w{24} verified, order \d{11}$`, string(out))
	// The order printed is the one the webhooks were about.
	number := regexp.MustCompile(`(?m)^order: (\d{11}) `).FindStringSubmatch(string(out))
	require.NotNil(t, number)
	assert.Regexp(t, `(?m)^webhook: order\.delivered evt_\w{24} verified, order `+number[1]+`$`, string(out))
	t.Logf("quickstart output:\n%s", out)
}
