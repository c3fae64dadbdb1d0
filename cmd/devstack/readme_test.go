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
// every sh block of its section, in order, in one bash, against `memocart
// dev`, with the two variables set exactly as dev's banner prints them. Only
// `make run` is left out (the test started dev itself). Run twice, it must
// create two orders (a fresh idempotency key each time) and reach
// delivered both times, so the README cannot drift from the product.
func TestReadmeWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the walkthrough needs %s (README says so)", tool)
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	blocks := walkthroughBlocks(t, string(readme))

	s := startDev(t, "sqlite", nil)
	// The banner's own lines, as a newcomer copies them.
	exports := regexp.MustCompile(`(?m)^\s+(export (API|KEY)=\S+)$`).FindAllStringSubmatch(s.out.String(), -1)
	require.Len(t, exports, 2, "the banner prints export API=... and export KEY=...:\n%s", s.out.String())
	banner := map[string]string{}
	for _, m := range exports {
		banner[m[2]] = m[1]
	}

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, line := range strings.Split(b, "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case trimmed == "make run" || strings.HasPrefix(trimmed, "make run "):
				continue
			case strings.HasPrefix(trimmed, "export API="), strings.HasPrefix(trimmed, "export KEY="):
				name := trimmed[len("export ") : len("export ")+3]
				seen[name] = true
				line = banner[name]
			}
			script.WriteString(line + "\n")
		}
	}
	require.True(t, seen["API"] && seen["KEY"], "the walkthrough sets API and KEY as the banner does")
	script.WriteString(`printf '\nORDER=%s\n' "$ORDER"` + "\n")

	numbers := map[string]bool{}
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "run %d of the walkthrough:\n%s\nscript:\n%s", run, out, script.String())
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

// walkthroughBlocks returns the sh code blocks of the README's walkthrough
// section, in order.
func walkthroughBlocks(t *testing.T, readme string) []string {
	t.Helper()
	start := strings.Index(readme, "\n## Walkthrough")
	require.GreaterOrEqual(t, start, 0, "README has a Walkthrough section")
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	require.GreaterOrEqual(t, len(blocks), 6, "setup, preview, cart, order, pay, poll")
	return blocks
}
