package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// StartAdmin serves net/http/pprof on MEMOCART_ADMIN_ADDR when it is set,
// on its own listener: profiles are never reachable on the public API
// address. It returns the bound address ("" when off) and a stop function.
func StartAdmin(ctx context.Context, e Env) (string, func(), error) {
	if e.Cfg.AdminAddr == "" {
		return "", func() {}, nil
	}
	if e.Cfg.AdminAddr == e.Cfg.HTTPAddr {
		return "", nil, errors.New("MEMOCART_ADMIN_ADDR must differ from MEMOCART_HTTP_ADDR: profiles are never served on the public address")
	}
	ln, err := net.Listen("tcp", e.Cfg.AdminAddr)
	if err != nil {
		return "", nil, fmt.Errorf("admin listener on %s: %w", e.Cfg.AdminAddr, err)
	}
	addr := ln.Addr().String()
	if host, _, _ := net.SplitHostPort(addr); !net.ParseIP(host).IsLoopback() {
		e.Log.Warn("admin listener (pprof) is not on a loopback address: keep it off the public network", slog.String("addr", addr))
	}
	mux := http.NewServeMux()
	// Liveness of a process without a public listener (the worker), for
	// memocart cluster status and container healthchecks.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	observabilityRoutes(mux, e)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.Log.Error("admin listener stopped", slog.Any("error", err))
		}
	}()
	e.Log.Info("admin listener (pprof) on", slog.String("addr", "http://"+addr+"/debug/pprof/"))
	stop := func() {
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}
	return addr, stop, nil
}
