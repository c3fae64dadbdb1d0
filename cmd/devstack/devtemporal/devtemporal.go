// Package devtemporal runs a complete Temporal dev server inside the current
// process: the real server (frontend, history, matching and worker services)
// on SQLite, plus the Temporal Web UI. `devstack dev` uses it so a developer
// needs no Docker, and the end-to-end tests use it so they run against a real
// server without mocks.
//
// It is a development tool, not a deployment path: one history shard, no
// auth, no TLS. It may import the standard library, the Temporal server,
// SDK client and API modules, and the Temporal UI server; nothing from
// memocart itself.
package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporal"
)

// DefaultGRPCPort and DefaultUIPort are the ports `temporal server start-dev`
// uses. Options treats 0 as "pick a free port", so `devstack dev` passes these
// explicitly to stay compatible with tools that assume the usual addresses.
const (
	DefaultGRPCPort = 7233
	DefaultUIPort   = 8233
)

// Options configures Start. The zero value is valid: an in-memory server on
// free ports with the UI enabled and the "default" namespace.
type Options struct {
	// DataDir holds the SQLite database (temporal.db plus its WAL files), so
	// workflows survive a restart. Empty means an in-memory database that is
	// gone when the process exits, which is what tests want.
	DataDir string
	// Host is the IP the frontend and UI listen on; default 127.0.0.1. The
	// internal services always listen on 127.0.0.1.
	Host string
	// GRPCPort is the frontend's gRPC port; 0 picks a free one.
	GRPCPort int
	// UIPort is the Web UI's HTTP port; 0 picks a free one and -1 disables
	// the UI.
	UIPort int
	// Namespace is created at start if missing (24h retention); default
	// "default".
	Namespace string
	// SearchAttributes are custom search attributes registered on Namespace
	// at start. Registering an attribute that already exists with the same
	// type is a no-op, so restarts on the same DataDir are fine.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger receives the server's logs at warn and above (Temporal logs a
	// lot at info). Nil discards them.
	Logger *slog.Logger
}

// Server is a running dev server. Stop it to release its ports.
type Server struct {
	frontend  string // host:port clients dial
	uiURL     string
	namespace string

	temporal temporal.Server
	ui       *uiserver.Server
	uiDone   chan struct{} // closed when the UI's serve loop has returned
	logLevel *slog.LevelVar

	stopOnce sync.Once
	stopErr  error
}

const (
	// startupPoll is how often Start re-checks readiness. Short, because
	// every readiness step usually succeeds within a few polls.
	startupPoll = 50 * time.Millisecond
	// startupTimeout bounds the readiness waits when the caller's context
	// has no deadline, so a server that never becomes ready is an error
	// rather than a hang.
	startupTimeout = 2 * time.Minute
	// levelSilent is a log floor above every level the server uses.
	levelSilent = slog.LevelError + 100
)

// Start starts the server and returns once the frontend accepts
// connections, the namespace exists, the search attributes are registered
// and visible, and the UI (if enabled) answers HTTP. If ctx ends first, or
// any step fails, everything already started is stopped again.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	logLevel := new(slog.LevelVar)
	logLevel.Set(slog.LevelWarn)
	logger := opts.Logger.With(slog.String("component", "devtemporal"))

	// Fail fast, before touching DataDir, when a requested port is taken
	// (typically by another dev server).
	if err := checkRequestedPorts(opts); err != nil {
		return nil, err
	}
	sqlConf, err := prepareSQLite(opts.DataDir, opts.Namespace, opts.SearchAttributes)
	if err != nil {
		return nil, err
	}
	// Ports last, right before the server binds them, to keep the window in
	// which another process could take a port short.
	p, err := pickPorts(opts)
	if err != nil {
		return nil, err
	}
	srv, err := newTemporalServer(opts, p, sqlConf, serverLogger{log: logger, level: logLevel})
	if err != nil {
		return nil, err
	}
	// Start does not take a context; it is bounded by the server's own
	// service start timeouts. Waiting for it even when ctx ends means a
	// failed Start never leaves listeners behind.
	if err := startTemporal(srv); err != nil {
		return nil, err
	}

	s := &Server{
		frontend:  net.JoinHostPort(p.dialHost, strconv.Itoa(p.frontendGRPC)),
		namespace: opts.Namespace,
		temporal:  srv,
		logLevel:  logLevel,
	}
	if err := s.setup(ctx, opts.SearchAttributes); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if p.ui > 0 {
		if err := s.startUI(ctx, opts, p); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	logger.Info("temporal dev server started",
		slog.String("frontend", s.frontend),
		slog.String("ui", s.uiURL),
		slog.String("namespace", s.namespace),
		slog.Duration("took", time.Since(begin)))
	return s, nil
}

// withDefaults fills in defaults and rejects values Start cannot honour.
func (o Options) withDefaults() (Options, error) {
	if o.Host == "" || o.Host == "localhost" {
		// The server needs an IP, not a name, for its bind and broadcast
		// addresses.
		o.Host = "127.0.0.1"
	}
	if net.ParseIP(o.Host) == nil {
		return o, fmt.Errorf("devtemporal: host %q is not an IP address", o.Host)
	}
	if o.GRPCPort < 0 || o.GRPCPort > 65535 {
		return o, fmt.Errorf("devtemporal: gRPC port %d out of range", o.GRPCPort)
	}
	if o.UIPort < -1 || o.UIPort > 65535 {
		return o, fmt.Errorf("devtemporal: UI port %d out of range (-1 disables the UI)", o.UIPort)
	}
	if o.GRPCPort != 0 && o.GRPCPort == o.UIPort {
		return o, fmt.Errorf("devtemporal: gRPC and UI ports are both %d", o.GRPCPort)
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	for name, typ := range o.SearchAttributes {
		if name == "" {
			return o, errors.New("devtemporal: empty search attribute name")
		}
		if _, ok := enumspb.IndexedValueType_name[int32(typ)]; !ok || typ == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return o, fmt.Errorf("devtemporal: search attribute %q has invalid type %d", name, typ)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// startTemporal starts the server, turning a panic into an error. The
// server's logger panics on Fatal (see serverLogger), and Fatal is how the
// server reports, say, a port taken between pickPorts and its own bind.
func startTemporal(srv temporal.Server) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("devtemporal: starting temporal server: %v", r)
		}
	}()
	if err := srv.Start(); err != nil {
		return fmt.Errorf("devtemporal: starting temporal server: %w", err)
	}
	return nil
}

// startUI serves the Web UI and waits until it answers HTTP.
func (s *Server) startUI(ctx context.Context, opts Options, p ports) error {
	ui, err := newUIServer(opts, p)
	if err != nil {
		return err
	}
	s.ui = ui
	s.uiDone = make(chan struct{})
	s.uiURL = "http://" + net.JoinHostPort(p.dialHost, strconv.Itoa(p.ui))
	go func() {
		defer close(s.uiDone)
		// Start blocks until Stop and only returns nil; a failed bind makes
		// the UI server exit the process itself, which pickPorts' check
		// makes unlikely.
		_ = ui.Start()
	}()
	if err := waitHTTP(ctx, s.uiURL+"/healthz", s.uiDone); err != nil {
		return fmt.Errorf("devtemporal: waiting for the UI at %s: %w", s.uiURL, err)
	}
	return nil
}

// waitHTTP polls url until it answers 200, ctx ends, or gone is closed.
func waitHTTP(ctx context.Context, url string, gone <-chan struct{}) error {
	hc := &http.Client{Timeout: time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-gone:
			return errors.New("UI server stopped")
		case <-time.After(startupPoll):
		}
	}
}

// FrontendHostPort is the address SDK clients dial, e.g. "127.0.0.1:7233".
func (s *Server) FrontendHostPort() string { return s.frontend }

// UIURL is the Web UI's base URL, e.g. "http://127.0.0.1:8233", or "" when
// the UI is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Namespace is the namespace Start created or found.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the UI and the server and waits until their listeners are
// closed. It is safe to call more than once; later calls return the first
// call's result.
//
// One resource outlives Stop: the server's SQLite plugin keeps its
// connection to each database open for the life of the process (by design
// in go.temporal.io/server v1.32: its pool never closes). A later Start on
// the same DataDir reuses that connection, so restarting in-process works.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// Shutdown makes the services log warnings and errors about
		// cancelled polls and closed task queues ("task queue closed");
		// none of it is news to whoever called Stop, and a failure to stop
		// is returned below.
		s.logLevel.Set(levelSilent)
		if s.ui != nil {
			s.ui.Stop()
			<-s.uiDone
		}
		if err := s.temporal.Stop(); err != nil {
			s.stopErr = fmt.Errorf("devtemporal: stopping temporal server: %w", err)
		}
	})
	return s.stopErr
}
