package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A component's process is started in its own session (Setsid), so it
// outlives `devstack cluster up`, ignores the terminal's ^C, and leads a
// process group that holds everything it forks (Postgres's backends):
// stopping signals the whole group and waits until none of it is left.
//
// Its pid file holds the pid and the process's start time (field 22 of
// /proc/<pid>/stat): a pid the kernel has since given to another process
// does not match, so a stale pid file never makes us signal a stranger.

// pidRecord is what a pid file holds.
type pidRecord struct {
	pid   int
	start uint64 // clock ticks after boot
}

// spawn starts cmd detached with its output appended to logPath and
// records it in pidPath. reap is closed once the process has exited and
// been waited for, which matters only while this process lives: after
// `up` returns, the orphans are reaped by init.
func spawn(cmd *exec.Cmd, logPath, pidPath string, cred *syscall.Credential) (reap <-chan struct{}, err error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor
	fmt.Fprintf(logf, "=== %s devstack cluster starts: %s\n", time.Now().Format(time.RFC3339), strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	start, err := procStartTime(cmd.Process.Pid)
	if err == nil {
		err = os.WriteFile(pidPath, fmt.Appendf(nil, "%d %d\n", cmd.Process.Pid, start), 0o644)
	}
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return nil, fmt.Errorf("recording pid: %w", err)
	}
	return done, nil
}

// readPID returns the live process a pid file names, or ok=false when the
// file is missing or its process is gone (or is another process now).
func readPID(pidPath string) (rec pidRecord, ok bool) {
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return pidRecord{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return pidRecord{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return pidRecord{}, false
	}
	rec = pidRecord{pid: pid, start: start}
	st, err := readStat(pid)
	if err != nil || st.start != start || st.state == 'Z' {
		return rec, false
	}
	return rec, true
}

// stopGroup sends sig to the process group led by rec and waits until no
// process of the group, and none of the leader's descendants, is left;
// after timeout they all get SIGKILL. Descendants count because a program
// may move its children to groups of their own (Postgres makes every
// backend a session leader): they are found before signalling and killed
// one by one when it comes to SIGKILL.
func stopGroup(rec pidRecord, sig syscall.Signal, timeout time.Duration) (killed bool, err error) {
	pgid := rec.pid
	tree := descendants(rec.pid)
	if sig == syscall.SIGKILL {
		killAll(tree)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("signalling process group %d: %w", pgid, err)
	}
	if waitGone(rec, pgid, tree, timeout) {
		return sig == syscall.SIGKILL, nil
	}
	killAll(tree)
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return true, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	if !waitGone(rec, pgid, tree, 10*time.Second) {
		return true, fmt.Errorf("process group %d still has processes 10s after SIGKILL", pgid)
	}
	return true, nil
}

// killAll sends SIGKILL to each process still the one recorded.
func killAll(procs []pidRecord) {
	for _, p := range procs {
		if st, err := readStat(p.pid); err == nil && st.start == p.start {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// waitGone polls until no live process of the group or of tree is left,
// then gives the leader's parent a moment to reap it: a server restarted
// on the same data directory takes a leader that is still a zombie for a
// live one (Postgres checks its lock file's pid with kill(pid, 0)).
func waitGone(leader pidRecord, pgid int, tree []pidRecord, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if len(groupMembers(pgid)) == 0 && !anyAlive(tree) {
			break
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	for reap := time.Now().Add(5 * time.Second); time.Now().Before(reap); time.Sleep(50 * time.Millisecond) {
		if st, err := readStat(leader.pid); err != nil || st.start != leader.start {
			break
		}
	}
	return true
}

func anyAlive(procs []pidRecord) bool {
	for _, p := range procs {
		if st, err := readStat(p.pid); err == nil && st.start == p.start && st.state != 'Z' {
			return true
		}
	}
	return false
}

// pids lists the processes /proc shows.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// descendants returns every live descendant of pid, with start times.
func descendants(pid int) []pidRecord {
	children := map[int][]pidRecord{}
	for _, p := range pids() {
		st, err := readStat(p)
		if err != nil || st.state == 'Z' {
			continue
		}
		children[st.ppid] = append(children[st.ppid], pidRecord{pid: p, start: st.start})
	}
	var out []pidRecord
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// groupMembers lists the live processes of a process group.
func groupMembers(pgid int) []int {
	var out []int
	for _, pid := range pids() {
		if st, err := readStat(pid); err == nil && st.state != 'Z' && st.pgrp == pgid {
			out = append(out, pid)
		}
	}
	return out
}

type procStat struct {
	state byte
	ppid  int
	pgrp  int
	start uint64
}

// readStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from its last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[2] field 5 (pgrp),
	// f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed stat")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, errors.New("malformed stat")
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, nil
}

func procStartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}
