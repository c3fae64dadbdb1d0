package cluster

import (
	"fmt"
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
	"golang.org/x/sys/unix"
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

// shmChildEnv names the segment id a child of TestShmHelperProcess
// attaches; shmChildExitAfter, when it leaves on its own.
const (
	shmChildEnv       = "MEMOCART_TEST_SHM_ATTACH"
	shmChildExitAfter = "MEMOCART_TEST_SHM_EXIT_AFTER"
)

// TestShmHelperProcess is not a test: run by the shm tests as a child
// process, it attaches a segment (as a Postgres backend does) and stays.
func TestShmHelperProcess(t *testing.T) {
	id, err := strconv.Atoi(os.Getenv(shmChildEnv))
	if err != nil {
		return
	}
	if _, err := unix.SysvShmAttach(id, 0, 0); err != nil {
		os.Exit(3)
	}
	d, err := time.ParseDuration(os.Getenv(shmChildExitAfter))
	if err != nil {
		d = time.Hour
	}
	time.Sleep(d)
	os.Exit(0)
}

// oldServerSegment makes a System V segment, a child attached to it that
// leaves after exitAfter (or stays), and a stale postmaster.pid naming
// it in dir; it returns the child and the segment.
func oldServerSegment(t *testing.T, dir, exitAfter string) (*exec.Cmd, shmSegment) {
	t.Helper()
	key := 0x4d430000 | os.Getpid()&0xffff
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	child := exec.Command(os.Args[0], "-test.run=^TestShmHelperProcess$")
	child.Env = append(os.Environ(), shmChildEnv+"="+strconv.Itoa(id), shmChildExitAfter+"="+exitAfter)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill() })
	seg := shmSegment{key: key, id: id}
	require.Eventually(t, func() bool { n, _ := attachments(seg); return n == 1 }, 10*time.Second, 10*time.Millisecond)
	// The killed postmaster's pid (0: none alive), data directory, start
	// time, port, socket directory, listen address, segment, status.
	pidFile := fmt.Sprintf("0\n%s\n0\n5432\n\n127.0.0.1\n %9d %9d\nready   \n", dir, key, id)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(pidFile), 0o600))
	return child, seg
}

// TestShmReleasedWaitsForTheOldServer: a backend of a killed postmaster
// still attached to its segment is waited for while it leaves on its own,
// and killed once the wait is over, so that Postgres can start again.
func TestShmReleasedWaitsForTheOldServer(t *testing.T) {
	t.Run("leaves on its own", func(t *testing.T) {
		dir := t.TempDir()
		child, seg := oldServerSegment(t, dir, "300ms")
		killed, err := shmReleased(dir, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, killed)
		n, _ := attachments(seg)
		assert.Zero(t, n, "released when it returned")
		assert.NoError(t, child.Wait(), "the child left on its own")
	})
	t.Run("killed after the wait", func(t *testing.T) {
		dir := t.TempDir()
		child, seg := oldServerSegment(t, dir, "")
		killed, err := shmReleased(dir, 300*time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, []int{child.Process.Pid}, killed)
		n, _ := attachments(seg)
		assert.Zero(t, n, "released when it returned")
		var exit *exec.ExitError
		require.ErrorAs(t, child.Wait(), &exit)
		assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	})
	t.Run("no pid file", func(t *testing.T) {
		killed, err := shmReleased(t.TempDir(), time.Minute)
		assert.NoError(t, err)
		assert.Empty(t, killed)
	})
	t.Run("the postmaster runs", func(t *testing.T) {
		dir := t.TempDir()
		live := exec.Command("sleep", "30")
		live.Dir = dir
		require.NoError(t, live.Start())
		t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
		pidFile := fmt.Sprintf("%d\n%s\n0\n5432\n\n127.0.0.1\n   1   1\nready   \n", live.Process.Pid, dir)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(pidFile), 0o600))
		_, err := shmReleased(dir, time.Minute)
		assert.ErrorContains(t, err, "still runs")
	})
}

// TestPrometheusConfigChecks: the configuration the cluster's Prometheus
// starts with passes promtool's check, rules file included, and scrapes
// each api and worker admin listener.
func TestPrometheusConfigChecks(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool (Debian's prometheus package) checks the configuration")
	rules, err := filepath.Abs("../../../docs/monitoring/memocart.rules.yml")
	require.NoError(t, err)
	c, err := New(Options{StateDir: t.TempDir(), RulesFile: rules})
	require.NoError(t, err)
	require.NoError(t, c.prometheusConfig(t.Context()))
	out, err := exec.Command(promtool, "check", "config", c.prometheusConfigPath()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS: 1 rule files found")
	conf, err := os.ReadFile(c.prometheusConfigPath())
	require.NoError(t, err)
	p := c.Ports()
	for _, port := range []int{p.APIAdmin[0], p.APIAdmin[1], p.WorkerAdmin[0], p.WorkerAdmin[1]} {
		assert.Contains(t, string(conf), "['127.0.0.1:"+strconv.Itoa(port)+"']")
	}
}
