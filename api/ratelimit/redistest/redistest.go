// Package redistest starts throwaway redis-server processes for tests that
// need a Redis they may break: stop, restart, or hang. It never touches a
// shared server.
//
// The redis-server binary must be on PATH; Start fails the test with an
// install hint when it is not. Each Instance listens on 127.0.0.1 on a free
// port, keeps its files in its own temp directory and persists nothing.
//
// Pause and Resume use SIGSTOP and SIGCONT, so the package is for Unix.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds how long Start and Restart wait for PING to answer.
const readyTimeout = 10 * time.Second

// startAttempts is how many free ports Start tries: another process may take
// the one it picked before redis-server binds it.
const startAttempts = 3

// Instance is one redis-server process. Its methods are for the test's own
// goroutine: they fail the test with t.Fatal.
type Instance struct {
	t      testing.TB
	bin    string
	dir    string
	port   int
	output *lockedBuffer // every run's stdout and stderr

	mu     sync.Mutex
	proc   *process // nil while stopped
	paused bool
}

// process is one run of redis-server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returns
}

// Start runs a fresh redis-server and waits until it answers PING. It is
// killed when the test ends.
func Start(t testing.TB) *Instance {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found on PATH (install the redis-server package, e.g. apt-get install redis-server): %v", err)
	}
	in := &Instance{t: t, bin: bin, dir: t.TempDir(), output: &lockedBuffer{}}
	t.Cleanup(func() {
		in.kill()
		if t.Failed() {
			t.Logf("redistest: redis-server output:\n%s", in.output.String())
		}
	})

	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		in.port = port
		if lastErr = in.start(); lastErr == nil {
			return in
		}
	}
	t.Fatalf("redistest: starting redis-server: %v", lastErr)
	return nil
}

// Addr is the host:port the server listens on; it stays the same across
// Restart.
func (in *Instance) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in.port))
}

// URL is a redis:// URL for database db, as redis.ParseURL accepts.
func (in *Instance) URL(db int) string {
	return fmt.Sprintf("redis://%s/%d", in.Addr(), db)
}

// Stop kills the server (SIGKILL, as in a crash) and waits for it to exit.
// Clients then get connection refused. Stopping a stopped server does
// nothing.
func (in *Instance) Stop() {
	in.t.Helper()
	in.kill()
}

// Restart stops the server if it runs and starts a new, empty one on the
// same port, waiting until it answers PING.
func (in *Instance) Restart() {
	in.t.Helper()
	in.kill()
	if err := in.start(); err != nil {
		in.t.Fatalf("redistest: restarting redis-server on %s: %v", in.Addr(), err)
	}
}

// Pause stops the server process with SIGSTOP: it keeps its port and open
// connections, the kernel still accepts new ones, but nothing is ever
// answered, as with a hung server. Resume undoes it.
func (in *Instance) Pause() {
	in.t.Helper()
	in.signal(syscall.SIGSTOP, true)
}

// Resume continues a paused server with SIGCONT.
func (in *Instance) Resume() {
	in.t.Helper()
	in.signal(syscall.SIGCONT, false)
}

func (in *Instance) signal(sig syscall.Signal, paused bool) {
	in.t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == nil {
		in.t.Fatalf("redistest: %v: redis-server on %s is not running", sig, in.Addr())
	}
	if err := in.proc.cmd.Process.Signal(sig); err != nil {
		in.t.Fatalf("redistest: %v to redis-server on %s: %v", sig, in.Addr(), err)
	}
	in.paused = paused
}

// start runs redis-server on in.port and waits for PING. On failure the
// process is gone and the error carries its output.
func (in *Instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc != nil {
		return errors.New("already running")
	}
	out := in.output
	cmd := exec.Command(in.bin,
		"--port", strconv.Itoa(in.port),
		"--bind", "127.0.0.1",
		"--dir", in.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "", // stdout, which lands in in.output
	)
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()

	deadline := time.Now().Add(readyTimeout)
	for {
		err := ping(in.Addr())
		if err == nil {
			in.proc = p
			in.paused = false
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("redis-server exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.exited
			return fmt.Errorf("no PONG within %v (last error: %v); output: %s", readyTimeout, err, out.String())
		}
	}
}

// kill ends the process, continuing it first if paused, and waits for it.
func (in *Instance) kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := in.proc
	if p == nil {
		return
	}
	if in.paused {
		// SIGKILL ends a stopped process too; continuing it first keeps the
		// process table free of surprises for whoever looks at it meanwhile.
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	in.proc = nil
	in.paused = false
}

// ping sends one inline PING and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. It is free when
// returned; Start retries if redis-server loses the race for it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects the server's output; the exec package writes to it
// from its own goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
