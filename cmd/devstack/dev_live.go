package main

import (
	"cmp"
	"fmt"

	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/cmd/internal/app"
)

// testHookLiveServers, set only by this package's end-to-end tests before
// run starts, replaces the servers dev would start with the test's own, so
// the test can drive their clocks and inject failures.
var testHookLiveServers *testservers.Servers

// startDevLive starts the providers' test servers (or takes the test's)
// and points live mode at them (testservers.Configure), so a person can
// walk the live path (preview, cart, order, Stellar payment, purchase,
// delivery, refund) on one machine with no credentials. The returned stop
// closes what it started.
func startDevLive(e *app.Env) (*testservers.Servers, func(), error) {
	srv, stop := testHookLiveServers, func() {}
	if srv == nil {
		srv = testservers.Start()
		stop = srv.Close
	}
	vars, err := srv.Configure(e.Getenv, e.Cfg.DataDir)
	if err != nil {
		stop()
		return nil, nil, err
	}
	getenv := testservers.Overlay(vars, e.Getenv)
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		stop()
		return nil, nil, err
	}
	e.Cfg, e.Getenv = cfg, getenv
	// The Creators API test server answers for every Amazon host name
	// through its own client.
	e.Live = e.Live.WithAmazon(srv.Creators.Client())
	return srv, stop, nil
}

// devLiveBanner is what dev prints about the live path.
func devLiveBanner(s *testservers.Servers, liveKey string) string {
	return fmt.Sprintf(`
Live mode runs against test servers (MEMOCART_DEV_LIVE=testservers):
  Amazon Creators API: %[1]s   eBay Browse API: %[2]s
  Zinc:                %[3]s   Horizon (testnet): %[4]s
  Live API key:        %[5]s
  Refunds paid from:   %[6]s

Walk the live path (docs/production.md, "Walk the live path on one machine"):
  export LIVE=%[5]s
  export HORIZON=%[4]s
`, s.Creators.URL, s.Browse.URL, s.Zinc.URL, s.Horizon.URL, liveKey, cmp.Or(s.Payout, "the account of MEMOCART_STELLAR_PAYOUT_SECRET_FILE"))
}
