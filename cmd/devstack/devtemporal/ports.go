package devtemporal

import (
	"fmt"
	"net"
	"strconv"
)

// internalHost is where the history, matching and worker services listen.
// Nothing outside the process talks to them.
const internalHost = "127.0.0.1"

// ports are all the ports one server uses. The services find each other
// through static host lists (no gossip ring), so there are no membership
// ports to allocate.
type ports struct {
	host     string // frontend and UI bind address
	dialHost string // address clients use to reach host

	frontendGRPC int
	frontendHTTP int
	history      int
	matching     int
	worker       int
	ui           int // 0 when the UI is disabled
}

// checkRequestedPorts checks that the ports the caller asked for can be
// bound. Both the Temporal server and the UI server end the process (or
// panic) instead of returning an error when a bind fails, so a taken port
// must be caught before they try.
func checkRequestedPorts(o Options) error {
	if o.GRPCPort != 0 {
		if err := checkPortFree(o.Host, o.GRPCPort); err != nil {
			return fmt.Errorf("devtemporal: frontend gRPC port %d: %w", o.GRPCPort, err)
		}
	}
	if o.UIPort > 0 {
		if err := checkPortFree(o.Host, o.UIPort); err != nil {
			return fmt.Errorf("devtemporal: UI port %d: %w", o.UIPort, err)
		}
	}
	return nil
}

// pickPorts resolves every port the server needs. It checks requested ports
// again, as late as possible, and reserves free ports all at once, so one
// server's ports are distinct, releasing them just before the server binds
// them; the remaining race with other processes is the usual one for
// free-port pickers.
func pickPorts(o Options) (ports, error) {
	p := ports{host: o.Host, dialHost: o.Host, frontendGRPC: o.GRPCPort, ui: o.UIPort}
	if ip := net.ParseIP(o.Host); ip.IsUnspecified() {
		p.dialHost = "127.0.0.1"
	}
	if err := checkRequestedPorts(o); err != nil {
		return p, err
	}

	type want struct {
		host string
		dst  *int
	}
	wants := []want{
		{p.host, &p.frontendHTTP},
		{internalHost, &p.history},
		{internalHost, &p.matching},
		{internalHost, &p.worker},
	}
	if p.frontendGRPC == 0 {
		wants = append(wants, want{p.host, &p.frontendGRPC})
	}
	if p.ui == 0 {
		wants = append(wants, want{p.host, &p.ui})
	}
	if p.ui < 0 {
		p.ui = 0
	}

	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for _, w := range wants {
		l, err := net.Listen("tcp", net.JoinHostPort(w.host, "0"))
		if err != nil {
			return p, fmt.Errorf("devtemporal: reserving a free port on %s: %w", w.host, err)
		}
		held = append(held, l)
		*w.dst = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// checkPortFree reports whether host:port can be bound right now.
func checkPortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port in use (is another Temporal dev server running?): %w", err)
	}
	return l.Close()
}
