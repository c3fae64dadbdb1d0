package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCommandsRefuseArguments: the commands that take flags only refuse an
// argument after them, naming it, after printing their usage and flags.
func TestCommandsRefuseArguments(t *testing.T) {
	for name, usage := range map[string]string{"chaos": chaosUsage, "payouts": payoutsUsage, "cost": costUsage, "listen": listenUsage} {
		var out, errOut syncBuffer
		err := run(t.Context(), []string{name, "extra"}, func(string) string { return "" }, &out, &errOut)
		assert.EqualError(t, err, name+`: unexpected arguments ["extra"]`)
		assert.True(t, strings.HasPrefix(errOut.String(), usage+"\n"), "%s: usage first:\n%s", name, errOut.String())
		assert.Contains(t, errOut.String(), "\n  -", "%s: then the flags", name)
	}
}
