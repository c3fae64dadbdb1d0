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
// outlives `memocart cluster up`, ignores the terminal's ^C, and leads a
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
	fmt.Fprintf(logf, "=== %s memocart cluster starts: %s\n", time.Now().Format(time.RFC3339), strings.Join(cmd.Args, " "))
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
// process of the group is left; after timeout the group gets SIGKILL.
func stopGroup(rec pidRecord, sig syscall.Signal, timeout time.Duration) (killed bool, err error) {
	pgid := rec.pid
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("signalling process group %d: %w", pgid, err)
	}
	if waitGroupGone(pgid, timeout) {
		return false, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return true, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	if !waitGroupGone(pgid, 10*time.Second) {
		return true, fmt.Errorf("process group %d still has processes 10s after SIGKILL", pgid)
	}
	return true, nil
}

// waitGroupGone polls until no live (non-zombie) process is in the group.
// A zombie has released everything but its pid; its parent (init, or this
// process's reaper goroutine) collects it.
func waitGroupGone(pgid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if len(groupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupMembers lists the live processes of a process group.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.pgrp != pgid {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

type procStat struct {
	state byte
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
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, errors.New("malformed stat")
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

func procStartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}
