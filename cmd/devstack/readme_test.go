package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeWalkthrough runs the README's walkthrough as a newcomer would:
// every sh block of its section, in order, in one bash, against `devstack
// dev`, with the two variables set exactly as dev's banner prints them. Only
// `make run` is left out (the test started dev itself). Run twice, it must
// create two orders (a fresh idempotency key each time) and reach
// delivered both times, so the README cannot drift from the product.
func TestReadmeWalkthrough(t *testing.T) {
	needWalkTools(t)
	blocks := docBlocks(t, "../../README.md", "\n## Walkthrough")
	require.GreaterOrEqual(t, len(blocks), 6, "setup, preview, cart, order, pay, poll")

	s := startDev(t, "sqlite", nil)
	script := walkScript(t, s.out.String(), blocks, "API", "KEY")
	script += `printf '\nORDER=%s\n' "$ORDER"` + "\n"

	numbers := map[string]bool{}
	for run := 1; run <= 2; run++ {
		out := runWalk(t, script, 2*time.Minute)
		m := regexp.MustCompile(`(?m)^ORDER=(\d+)$`).FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		number := string(m[1])
		numbers[number] = true
		assert.Contains(t, string(out), "\ndelivered\n", "the poll loop saw delivered")
		assert.Regexp(t, `"number":"`+number+`","status":"delivered"`, string(out), "the last answer is the delivered order")
		assert.Contains(t, string(out), "query=OrderNumber%3D%22"+number+"%22", "the Temporal UI link names the order")
	}
	assert.Len(t, numbers, 2, "each run created its own order")
}

func needWalkTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the walkthroughs need %s (README says so)", tool)
	}
}

// docBlocks returns the sh code blocks of the section of a document that
// starts at heading, up to the next heading of the same or a higher level
// outside a code block, in order.
func docBlocks(t *testing.T, path, heading string) []string {
	t.Helper()
	return docBlocksOf(t, path, heading, "sh")
}

// docBlocksOf is docBlocks for code blocks of language lang.
func docBlocksOf(t *testing.T, path, heading, lang string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	start := strings.Index(string(doc), heading)
	require.GreaterOrEqual(t, start, 0, "%s has the section %q", path, strings.TrimSpace(heading))
	lines := strings.Split(string(doc)[start+1:], "\n")
	depth := strings.Index(lines[0], " ")
	var blocks []string
	var block *strings.Builder
	for _, line := range lines[1:] {
		switch {
		case block == nil && line == "```"+lang:
			block = &strings.Builder{}
		case block != nil && line == "```":
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			if d := strings.Index(line, " "); d > 0 && d <= depth && strings.Trim(line[:d], "#") == "" {
				return blocks
			}
		}
	}
	return blocks
}

// walkScript joins the blocks into one bash script as a reader runs them:
// `make run` lines left out (the test started dev), and each `export NAME=`
// line of the given names replaced by the one dev's banner printed.
func walkScript(t *testing.T, banner string, blocks []string, names ...string) string {
	t.Helper()
	printed := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(export ([A-Z]+)=\S+)$`).FindAllStringSubmatch(banner, -1) {
		printed[m[2]] = m[1]
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, line := range strings.Split(b, "\n") {
			trimmed := strings.TrimSpace(line)
			if trimmed == "make run" || strings.HasPrefix(trimmed, "make run ") || strings.HasSuffix(trimmed, " make run") {
				continue
			}
			for _, name := range names {
				if strings.HasPrefix(trimmed, "export "+name+"=") {
					require.Contains(t, printed, name, "the banner prints export %s=...:\n%s", name, banner)
					seen[name] = true
					line = printed[name]
				}
			}
			script.WriteString(line + "\n")
		}
	}
	for _, name := range names {
		require.True(t, seen[name], "the walkthrough sets %s as the banner does", name)
	}
	return script.String()
}

// runWalk runs a walkthrough script in a clean environment and returns its
// output; it fails the test when the script fails.
func runWalk(t *testing.T, script string, timeout time.Duration) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the walkthrough:\n%s\nscript:\n%s", out, script)
	return out
}
