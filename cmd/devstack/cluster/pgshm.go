package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Postgres refuses to start on a data directory while a process is still
// attached to the System V shared memory segment its postmaster.pid names
// ("pre-existing shared memory block is still in use"). After the
// postmaster is killed, a backend it forked after stopGroup listed its
// descendants, in a session of its own, leaves only when it next looks
// for its postmaster: shmReleased waits for that, and past its timeout
// kills what is still attached (the segment's key is this data
// directory's, so those processes are the old server's).

// shmSegment is what line 7 of postmaster.pid names: the key and id of
// the server's System V segment.
type shmSegment struct {
	key, id int
}

// staleSegment reads the segment of dataDir's postmaster.pid; ok is false
// when there is no pid file or it names no segment (a server that died
// before creating one). It refuses a pid file whose postmaster runs.
func staleSegment(dataDir string) (seg shmSegment, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return shmSegment{}, false, nil
	}
	if err != nil {
		return shmSegment{}, false, err
	}
	lines := strings.Split(string(b), "\n")
	if pid, err := strconv.Atoi(strings.TrimSpace(lines[0])); err == nil && pid > 0 {
		if runsIn(pid, dataDir) {
			return shmSegment{}, false, fmt.Errorf("postgres (pid %d) still runs on %s", pid, dataDir)
		}
	}
	if len(lines) < 7 {
		return shmSegment{}, false, nil
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return shmSegment{}, false, nil
	}
	key, err1 := strconv.Atoi(f[0])
	id, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return shmSegment{}, false, fmt.Errorf("postmaster.pid names no shared memory segment: %q", lines[6])
	}
	return shmSegment{key: key, id: id}, true, nil
}

// runsIn tells whether pid is a live process working in dir, as a
// postmaster works in its data directory (a pid reused by a stranger
// works elsewhere).
func runsIn(pid int, dir string) bool {
	if st, err := readStat(pid); err != nil || st.state == 'Z' {
		return false
	}
	cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(dir)
	return err == nil && filepath.Clean(cwd) == abs
}

// attachments returns how many processes are attached to seg, 0 when the
// segment is gone (or its id now names another key's segment).
func attachments(seg shmSegment) (int, error) {
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// key shmid perms size cpid lpid nattch ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 7 || fs[0] != strconv.Itoa(seg.key) || fs[1] != strconv.Itoa(seg.id) {
			continue
		}
		return strconv.Atoi(fs[6])
	}
	return 0, sc.Err()
}

// attachedPIDs lists the processes that map seg (their maps name it
// /SYSV<key in hex>).
func attachedPIDs(seg shmSegment) []int {
	name := fmt.Sprintf("/SYSV%08x", uint32(seg.key))
	var out []int
	for _, pid := range pids() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
		if err == nil && strings.Contains(string(b), name) {
			out = append(out, pid)
		}
	}
	return out
}

// shmReleased returns once nothing is attached to the segment of
// dataDir's stale postmaster.pid: at once when there is none; after
// waiting up to timeout for the old server's processes to leave; after
// killing those still there. It fails when they survive SIGKILL for 10 s.
func shmReleased(dataDir string, timeout time.Duration) (killed []int, err error) {
	seg, ok, err := staleSegment(dataDir)
	if err != nil || !ok {
		return nil, err
	}
	released := func(d time.Duration) (bool, error) {
		for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
			n, err := attachments(seg)
			if err != nil || n == 0 {
				return err == nil, err
			}
			if time.Now().After(deadline) {
				return false, nil
			}
		}
	}
	if ok, err := released(timeout); ok || err != nil {
		return nil, err
	}
	killed = attachedPIDs(seg)
	for _, pid := range killed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if ok, err := released(10 * time.Second); ok || err != nil {
		return killed, err
	}
	n, _ := attachments(seg)
	return killed, fmt.Errorf("%d processes still attached to shared memory segment %d (key %d) of %s 10s after SIGKILL to %v",
		n, seg.id, seg.key, dataDir, killed)
}
