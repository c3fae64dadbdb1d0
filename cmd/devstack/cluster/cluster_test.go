package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortsAreDistinct(t *testing.T) {
	seen := map[int]bool{}
	for _, p := range PortsAt(DefaultPortBase).All() {
		assert.False(t, seen[p], "port %d used twice", p)
		seen[p] = true
	}
}

// TestSpawnAndStopGroup: a spawned process is found by its pid file,
// stopping it takes its children too, and a pid file naming another
// process (a reused pid) is not taken for it.
func TestSpawnAndStopGroup(t *testing.T) {
	dir := t.TempDir()
	pidPath, logPath := filepath.Join(dir, "x.pid"), filepath.Join(dir, "x.log")
	// A parent that forks a child into its own group and ignores SIGTERM,
	// so the stop has to fall back to SIGKILL for the whole group.
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 300 & echo child $!; wait`)
	reaped, err := spawn(cmd, logPath, pidPath, nil)
	require.NoError(t, err)
	rec, ok := readPID(pidPath)
	require.True(t, ok)
	assert.Equal(t, cmd.Process.Pid, rec.pid)
	require.Eventually(t, func() bool { return len(groupMembers(rec.pid)) == 2 }, 10*time.Second, 20*time.Millisecond)
	log, _ := os.ReadFile(logPath)
	assert.Contains(t, string(log), "devstack cluster starts: sh -c")

	killed, err := stopGroup(rec, syscall.SIGTERM, 300*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, killed, "SIGTERM was ignored: the group needed SIGKILL")
	assert.Empty(t, groupMembers(rec.pid))
	<-reaped
	_, ok = readPID(pidPath)
	assert.False(t, ok, "a stopped process is not running")

	// Same pid, another start time: not ours.
	self, err := procStartTime(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pidPath, []byte(strings.Join([]string{strconv.Itoa(os.Getpid()), strconv.Itoa(int(self) + 1)}, " ")), 0o644))
	_, ok = readPID(pidPath)
	assert.False(t, ok)
	require.NoError(t, os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())+" "+strconv.Itoa(int(self))), 0o644))
	_, ok = readPID(pidPath)
	assert.True(t, ok)
}

// TestStopReachesChildrenInOtherSessions: Postgres makes each backend a
// session leader, out of the postmaster's group; a kill must reach them.
func TestStopReachesChildrenInOtherSessions(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid (util-linux) is needed: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `setsid sleep 300 & wait`)
	reaped, err := spawn(cmd, filepath.Join(dir, "p.log"), filepath.Join(dir, "p.pid"), nil)
	require.NoError(t, err)
	rec, ok := readPID(filepath.Join(dir, "p.pid"))
	require.True(t, ok)
	// The child shows up forked, in the group, before setsid(1) moves it
	// out: wait until it has left.
	var child []pidRecord
	require.Eventually(t, func() bool {
		child = descendants(rec.pid)
		if len(child) != 1 {
			return false
		}
		st, err := readStat(child[0].pid)
		return err == nil && st.pgrp != rec.pid
	}, 10*time.Second, 20*time.Millisecond, "the child left the group")

	_, err = stopGroup(rec, syscall.SIGKILL, 5*time.Second)
	require.NoError(t, err)
	<-reaped
	assert.False(t, anyAlive(child), "the child in its own session survived")
}

func TestGracefulStopNeedsNoKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "300")
	reaped, err := spawn(cmd, filepath.Join(dir, "s.log"), filepath.Join(dir, "s.pid"), nil)
	require.NoError(t, err)
	rec, ok := readPID(filepath.Join(dir, "s.pid"))
	require.True(t, ok)
	killed, err := stopGroup(rec, syscall.SIGTERM, 10*time.Second)
	require.NoError(t, err)
	assert.False(t, killed)
	<-reaped
}

func TestWithEnvAndCleanEnv(t *testing.T) {
	base := []string{"PATH=/bin", "MEMOCART_HTTP_ADDR=0.0.0.0:1", "MEMOCART_SANDBOX_STEP_DELAY=1s", "DB=cassandra", "HOME=/root"}
	got := withEnv(base, map[string]string{"MEMOCART_HTTP_ADDR": "127.0.0.1:2"})
	assert.Equal(t, []string{"PATH=/bin", "MEMOCART_SANDBOX_STEP_DELAY=1s", "DB=cassandra", "HOME=/root", "MEMOCART_HTTP_ADDR=127.0.0.1:2"}, got)
	// The Temporal binaries read DB and friends: none of the caller's.
	assert.Equal(t, []string{"PATH=/bin", "HOME=/root"}, cleanEnv(base))
}

func TestNewKeepsTheRunningClustersPorts(t *testing.T) {
	dir := t.TempDir()
	c, err := New(Options{StateDir: dir, PortBase: 30000})
	require.NoError(t, err)
	require.NoError(t, c.saveState())
	c, err = New(Options{StateDir: dir})
	require.NoError(t, err)
	assert.Equal(t, 30000+233, c.Ports().Frontend, "the saved base is kept")
	_, err = New(Options{StateDir: dir, PortBase: 65000})
	assert.ErrorContains(t, err, "out of range")
	// Temporal's membership ports (base+933..939) must fit a smallint.
	_, err = New(Options{StateDir: dir, PortBase: 32000})
	assert.ErrorContains(t, err, "out of range")
	_, err = New(Options{StateDir: dir, PortBase: 31828})
	assert.NoError(t, err)

	// A running component pins the base.
	cmd := exec.Command("sleep", "300")
	reaped, err := spawn(cmd, c.LogPath("redis"), c.pidPath("redis"), nil)
	require.NoError(t, err)
	defer func() { _ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); <-reaped }()
	_, err = New(Options{StateDir: dir, PortBase: 31000})
	assert.ErrorContains(t, err, "running on port base 30000")
	assert.Equal(t, map[string]int{"redis": cmd.Process.Pid}, c.PIDs(), "only the running components, by name")
}
