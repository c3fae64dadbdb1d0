package sqlstoretest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/memocart/memocart/models/sqlstore"
)

// EnvPostgresBin optionally names the directory holding initdb and postgres
// for StartPostgres; without it the highest /usr/lib/postgresql/*/bin is
// used, then /usr/local/pgsql/bin, then PATH.
const EnvPostgresBin = "MEMOCART_TEST_PG_BIN"

// Budgets. The machine running the tests may be small and shared, so they
// are generous; a healthy instance needs a fraction of each.
const (
	pgReadyTimeout = 60 * time.Second // postmaster accepting connections, crash recovery included
	pgStopTimeout  = 60 * time.Second // fast shutdown
	pgKillTimeout  = 10 * time.Second // SIGKILL until every process is gone
)

// PGInstance is a private, throwaway PostgreSQL server for one test: its
// own data directory, port and postmaster process, which the test may
// stop, restart, crash (Kill) or freeze (Pause) to exercise failure paths.
//
// Running as root: initdb and postgres refuse to run as root, so when the
// test process is root the server runs as the "postgres" system user (or
// "nobody" if there is none): the binaries are started with
// SysProcAttr.Credential set to that user, so the pid we hold is still the
// postmaster itself (no runuser/su in between), and the instance's whole
// directory is created directly under os.TempDir() (not t.TempDir(), whose
// parents are root-only 0700) and chowned to that user. Root can signal
// and read /proc of that user's processes, so Pause/Kill work the same.
// Without root everything runs as the test's own user.
//
// The postmaster gets Pdeathsig=SIGKILL, so a test binary that dies
// without its cleanups (timeout panic, kill -9) takes the server with it;
// only the instance's directory under os.TempDir() is left then.
//
// A fresh cluster is initdb's output copied from the user cache directory
// (memocart-test/pg-cluster-*, about 40 MB, made by the first instance),
// which takes well under half of initdb's time; see templateDir.
//
// The exported methods other than URL, Port, PID, DataDir and LogPath call
// t.Fatal on failure and so must be called from the test's goroutine; they
// are safe against each other.
type PGInstance struct {
	t       testing.TB
	binDir  string
	root    string // owned by the run user; holds data/, sock/ and postgres.log
	dataDir string
	sockDir string
	logPath string
	port    int
	cred    *syscall.Credential // nil: run as ourselves
	env     []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed once cmd has exited and been reaped
	paused []int         // pids stopped by Pause, postmaster first
}

// StartPostgres initialises a fresh cluster in a temporary directory,
// starts a postmaster on a free 127.0.0.1 port and waits until it accepts
// connections. The server is killed and its directory removed when the
// test ends; if the test failed, the tail of the server log is logged.
func StartPostgres(t testing.TB) *PGInstance {
	t.Helper()
	binDir, err := findPostgresBin()
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	p := &PGInstance{t: t, binDir: binDir}

	if os.Geteuid() == 0 {
		cred, err := unprivilegedCredential()
		if err != nil {
			t.Fatalf("StartPostgres: running as root and %v", err)
		}
		p.cred = cred
	}
	p.root, err = os.MkdirTemp("", "memocart-pg-")
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Cleanup(p.cleanup)
	p.dataDir = filepath.Join(p.root, "data")
	p.sockDir = filepath.Join(p.root, "sock")
	p.logPath = filepath.Join(p.root, "postgres.log")
	if err := os.Mkdir(p.sockDir, 0o700); err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	if p.cred != nil {
		for _, d := range []string{p.root, p.sockDir} {
			if err := os.Chown(d, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
				t.Fatalf("StartPostgres: chown %s to the postgres user: %v", d, err)
			}
		}
	}
	p.env = childEnv(p.root)
	t.Logf("postgres instance in %s (binaries %s); server log: %s", p.root, binDir, p.logPath)

	began := time.Now()
	how := "initdb"
	if tmpl := p.templateDir(); tmpl != "" && copyTree(tmpl, p.dataDir, p.cred) == nil {
		how = "copy of cached cluster " + tmpl
	} else {
		_ = os.RemoveAll(p.dataDir)
		if err := p.initdb(); err != nil {
			t.Fatalf("StartPostgres: %v\n%s", err, p.logTail())
		}
		if tmpl != "" {
			p.saveTemplate(tmpl)
		}
	}
	initdbTook := time.Since(began)

	// The free port is found by binding and releasing it, so another
	// process may take it before the postmaster binds; try a few.
	for attempt := 1; ; attempt++ {
		if p.port, err = freePort(); err != nil {
			t.Fatalf("StartPostgres: %v", err)
		}
		err = p.start()
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(p.logTail(), "could not bind") {
			t.Fatalf("StartPostgres: %v\n%s", err, p.logTail())
		}
	}
	t.Logf("postgres ready at %s (pid %d): cluster by %s in %v, start %v",
		p.URL(), p.PID(), how, initdbTook.Round(time.Millisecond), (time.Since(began) - initdbTook).Round(time.Millisecond))
	return p
}

// URL returns the superuser URL of the instance's "postgres" database.
func (p *PGInstance) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Port returns the TCP port the instance listens on (kept across restarts).
func (p *PGInstance) Port() int { return p.port }

// DataDir returns the cluster's data directory.
func (p *PGInstance) DataDir() string { return p.dataDir }

// LogPath returns the file receiving the server's stdout and stderr (all
// runs, appended).
func (p *PGInstance) LogPath() string { return p.logPath }

// PID returns the postmaster's pid, or 0 when it is not running.
func (p *PGInstance) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Open returns a migrated store on the instance's database, recording
// event bodies with Renderer, closed when the test ends.
func (p *PGInstance) Open(t testing.TB) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, p.URL(), nil)
	if err != nil {
		t.Fatalf("open store on %s: %v", p.URL(), err)
	}
	st.SetEventRenderer(Renderer{})
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate store on %s: %v", p.URL(), err)
	}
	return st
}

// Start starts the stopped (or killed) server again on the same port and
// data directory and waits until it accepts connections; after Kill that
// includes crash recovery.
//
// A client's pooled connections to the old server are dead. database/sql
// with pgx replaces one idle over a second before handing it out, but one
// used within the last second fails its next call with driver.ErrBadConn
// (database/sql retries getting a connection, not the call on it), so the
// first calls after a restart may fail once per such connection.
func (p *PGInstance) Start() {
	p.t.Helper()
	began := time.Now()
	if err := p.start(); err != nil {
		p.t.Fatalf("postgres start: %v\n%s", err, p.logTail())
	}
	p.t.Logf("postgres restarted (pid %d) in %v", p.PID(), time.Since(began).Round(time.Millisecond))
}

// Stop shuts the server down cleanly (SIGINT: fast shutdown, which ends
// open sessions) and waits for it to exit. A paused server is resumed
// first. Stopping a server that is not running does nothing.
func (p *PGInstance) Stop() {
	p.t.Helper()
	if err := p.stop(); err != nil {
		p.t.Fatalf("postgres stop: %v\n%s", err, p.logTail())
	}
}

// Kill crashes the server: every one of its processes gets SIGKILL at
// once and Kill waits until they are gone. The next Start runs crash
// recovery. Killing a server that is not running does nothing.
func (p *PGInstance) Kill() {
	p.t.Helper()
	if err := p.kill(); err != nil {
		p.t.Fatalf("postgres kill: %v", err)
	}
}

// Pause freezes the server with SIGSTOP: the postmaster and every backend
// and helper process. Open connections then hang without an answer, and
// new ones are accepted by the kernel but never answered, as with a server
// whose host has stalled. Pause returns once every process is stopped.
func (p *PGInstance) Pause() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		p.t.Fatal("postgres pause: not running")
	}
	if p.paused != nil {
		return
	}
	pids, err := freezeTree(p.cmd.Process.Pid)
	p.paused = pids // even on error: Resume continues what was stopped
	if err != nil {
		p.t.Fatalf("postgres pause: %v", err)
	}
}

// Resume continues a paused server (SIGCONT to every process Pause
// stopped). Resuming a server that is not paused does nothing.
func (p *PGInstance) Resume() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resumeLocked()
}

func (p *PGInstance) resumeLocked() {
	if p.paused == nil {
		return
	}
	// Backends first, then the postmaster, so it finds its children running.
	for i := len(p.paused) - 1; i >= 0; i-- {
		_ = syscall.Kill(p.paused[i], syscall.SIGCONT)
	}
	p.paused = nil
}

func (p *PGInstance) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// command prepares a binary from binDir to run as the server's user,
// its output appended to the log; the caller closes the returned file.
func (p *PGInstance) command(name string, args ...string) (*exec.Cmd, *os.File, error) {
	logf, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(filepath.Join(p.binDir, name), args...)
	cmd.Dir = p.root
	cmd.Env = p.env
	cmd.Stdout = logf // an *os.File: the child writes to it directly
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: p.cred,
		// If the test binary dies without cleaning up (timeout panic,
		// kill), the postmaster goes too; its children follow when they
		// notice the postmaster is gone.
		Pdeathsig: syscall.SIGKILL,
		// Keep terminal signals (^C on `go test`) for us to handle.
		Setpgid: true,
	}
	return cmd, logf, nil
}

func (p *PGInstance) initdb() error {
	cmd, logf, err := p.command("initdb", "-D", p.dataDir, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err != nil {
		return err
	}
	defer logf.Close()
	_, _ = fmt.Fprintf(logf, "=== %s initdb\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb %s: %w", p.dataDir, err)
	}
	return nil
}

func (p *PGInstance) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return errors.New("already running")
	}
	cmd, logf, err := p.command("postgres",
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.port),
		"-k", p.sockDir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "logging_collector=off",
		"-c", "log_line_prefix=%m [%p] ",
		// Dynamic shared memory as files in the data directory, so a
		// killed instance leaves nothing behind in /dev/shm.
		"-c", "dynamic_shared_memory_type=mmap",
		"-c", "huge_pages=off",
	)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(logf, "=== %s postgres on port %d\n", time.Now().Format(time.RFC3339Nano), p.port)
	err = cmd.Start()
	logf.Close() // the child holds its own copy
	if err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done, p.paused = cmd, done, nil
	if err := p.waitReady(done); err != nil {
		_ = p.killLocked()
		return err
	}
	return nil
}

// waitReady pings until the server answers, it exits, or time runs out.
func (p *PGInstance) waitReady(exited <-chan struct{}) error {
	db, err := gorm.Open(postgres.Open(p.URL()), &gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	deadline := time.Now().Add(pgReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = sqlDB.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited before accepting connections (%v)", p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not accepting connections after %v: %w", pgReadyTimeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *PGInstance) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return nil
	}
	p.resumeLocked()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		// The postmaster exits only after all its children have.
		return nil
	case <-time.After(pgStopTimeout):
		_ = p.killLocked()
		return fmt.Errorf("no exit %v after SIGINT; killed", pgStopTimeout)
	}
}

func (p *PGInstance) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killLocked()
}

func (p *PGInstance) killLocked() error {
	if !p.runningLocked() {
		return nil
	}
	// Freeze everything first: a stopped process cannot exit or fork, so
	// no pid we signal can have been reused by then, and the postmaster
	// cannot react to its children dying.
	pids, freezeErr := freezeTree(p.cmd.Process.Pid)
	for i := len(pids) - 1; i >= 0; i-- {
		_ = syscall.Kill(pids[i], syscall.SIGKILL)
	}
	p.paused = nil
	if freezeErr != nil {
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(pgKillTimeout):
		return fmt.Errorf("postmaster %d still there %v after SIGKILL", p.cmd.Process.Pid, pgKillTimeout)
	}
	// The postmaster's children are reparented on its death; wait until
	// they have exited too (a zombie counts as gone: it has released its
	// shared memory), or a restart finds them still attached.
	deadline := time.Now().Add(pgKillTimeout)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("postgres process %d still alive %v after SIGKILL", pid, pgKillTimeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

func (p *PGInstance) cleanup() {
	if p.cmd != nil {
		// A clean stop leaves no shared memory behind; kill if it hangs.
		p.mu.Lock()
		p.resumeLocked()
		if p.runningLocked() {
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
			}
		}
		if err := p.killLocked(); err != nil {
			p.t.Errorf("postgres cleanup: %v", err)
		}
		p.mu.Unlock()
		p.removeStaleSysVShm()
	}
	if p.t.Failed() {
		p.t.Logf("postgres log %s:\n%s", p.logPath, p.logTail())
	}
	if err := os.RemoveAll(p.root); err != nil {
		p.t.Logf("removing postgres instance directory: %v", err)
	}
}

// removeStaleSysVShm removes the small System V segment a killed (not
// restarted) postmaster leaves behind. Its id is on line 7 of our own
// postmaster.pid, which a clean shutdown deletes; a restart would have
// removed the segment itself.
func (p *PGInstance) removeStaleSysVShm() {
	b, err := os.ReadFile(filepath.Join(p.dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return
	}
	id, err := strconv.Atoi(f[1])
	if err != nil || id < 0 {
		return
	}
	const ipcRMID = 0
	_, _, _ = syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), ipcRMID, 0)
}

// initdbFlagsVersion changes whenever initdb's flags do, so cached
// clusters made with other flags are not reused.
const initdbFlagsVersion = "1 -U postgres --auth=trust -E UTF8 --locale=C"

// templateDir names the cached copy of a fresh cluster made by these
// binaries, or "" when there is no cache directory. initdb takes seconds
// on a small machine; copying its output takes a fraction of that. The
// cache lives in the user cache directory (like Go's build cache), keyed
// by the binaries and initdb flags, and is only ever read or renamed into
// place whole, so a present entry is complete.
func (p *PGInstance) templateDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(filepath.Join(p.binDir, "postgres"))
	if err != nil {
		return ""
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%d|%s", p.binDir, fi.Size(), fi.ModTime().UnixNano(), initdbFlagsVersion))
	return filepath.Join(cache, "memocart-test", "pg-cluster-"+hex.EncodeToString(key[:8]))
}

// saveTemplate copies the fresh, never started cluster into the cache,
// best effort: another process may be doing the same.
func (p *PGInstance) saveTemplate(dir string) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	if copyTree(p.dataDir, filepath.Join(tmp, "data"), nil) != nil {
		return
	}
	_ = os.Rename(filepath.Join(tmp, "data"), dir) // fails harmlessly if another got there first
}

// copyTree copies the directory src to the new dst, keeping modes and
// symlinks, and chowns everything to cred when set.
func copyTree(src, dst string, cred *syscall.Credential) error {
	if _, err := os.Stat(filepath.Join(src, "PG_VERSION")); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected file %s in a fresh cluster", path)
		}
		if cred != nil {
			return os.Lchown(target, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// logTail returns the last lines of the server log.
func (p *PGInstance) logTail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return "(no postgres log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return "--- tail of " + p.logPath + " ---\n" + string(b)
}

// freezeTree SIGSTOPs root and then all its descendants, and waits until
// each is stopped. It returns the pids it stopped, root first. Root is
// stopped first and waited for, so that it cannot fork while its children
// are collected (fork restarts rather than completes when a stop is
// pending). Only processes descending from root are ever signalled.
func freezeTree(root int) ([]int, error) {
	if err := syscall.Kill(root, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("SIGSTOP %d: %w", root, err)
	}
	pids := []int{root}
	if err := waitStopped(root); err != nil {
		return pids, err
	}
	seen := map[int]bool{root: true}
	for round := 0; round < 3; round++ {
		added := 0
		for _, pid := range descendants(root) {
			if seen[pid] {
				continue
			}
			seen[pid] = true
			if syscall.Kill(pid, syscall.SIGSTOP) == nil {
				pids = append(pids, pid)
				added++
			}
		}
		if added == 0 {
			break
		}
	}
	for _, pid := range pids[1:] {
		if err := waitStopped(pid); err != nil {
			return pids, err
		}
	}
	return pids, nil
}

// waitStopped waits until pid is in the stopped state (or gone).
func waitStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _, ok := procStat(pid)
		if !ok || st == 'T' || st == 't' || st == 'Z' || st == 'X' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped after SIGSTOP (state %c)", pid, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// procStat reads a process's state and parent pid from /proc/PID/stat.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

// descendants lists every process below root, by walking /proc (this
// kernel does not offer /proc/PID/task/TID/children everywhere).
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is our environment without anything that would point the
// server elsewhere (PG*), in the C locale, with HOME in the instance.
func childEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LANG=C", "LC_ALL=C", "HOME="+home)
}

// unprivilegedCredential picks the user a root test process runs the
// server as.
func unprivilegedCredential() (*syscall.Credential, error) {
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			errs = append(errs, fmt.Errorf("user %s has unusable ids %s:%s", name, u.Uid, u.Gid))
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, fmt.Errorf("postgres refuses to run as root and there is no user to run it as: %w", errors.Join(errs...))
}

// findPostgresBin returns a directory holding initdb and postgres.
func findPostgresBin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(EnvPostgresBin); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("%s=%s holds no initdb and postgres", EnvPostgresBin, dir)
		}
		return dir, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { // highest version first
		return versionLess(versionOf(matches[j]), versionOf(matches[i]))
	})
	for _, m := range matches {
		if dir := filepath.Dir(m); has(dir) {
			return dir, nil
		}
	}
	if has("/usr/local/pgsql/bin") {
		return "/usr/local/pgsql/bin", nil
	}
	if initdb, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(initdb)) {
		return filepath.Dir(initdb), nil
	}
	return "", fmt.Errorf("no PostgreSQL server binaries found (looked for initdb and postgres in /usr/lib/postgresql/*/bin, /usr/local/pgsql/bin and PATH); install the postgresql package or set %s", EnvPostgresBin)
}

// versionOf returns the numeric parts of the version directory in
// /usr/lib/postgresql/VERSION/bin/initdb.
func versionOf(initdb string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(filepath.Dir(initdb))), ".") {
		n, _ := strconv.Atoi(part)
		v = append(v, n)
	}
	return v
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
