package main

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/memocart/memocart/activities/amazon/creatorstest"
	"github.com/memocart/memocart/activities/ebay/browsetest"
	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
)

// devLiveServers are the providers' test servers that `devstack dev` runs
// with MEMOCART_DEV_LIVE=testservers, so a person can walk the live path
// (preview, cart, order, Stellar payment, purchase, delivery) on one
// machine with no credentials.
type devLiveServers struct {
	creators *creatorstest.Server
	browse   *browsetest.Server
	zinc     *zinctest.Server
	horizon  *horizontest.Server
	// payout is the account live refunds are paid from, funded on the
	// Horizon test server; empty when the service was given its own.
	payout string
}

// testHookLiveServers, set only by this package's end-to-end tests before
// run starts, replaces the servers dev would start with the test's own, so
// the test can drive their clocks and inject failures.
var testHookLiveServers *devLiveServers

// devLiveAccount is the Stellar account live payments go to with the test
// servers: a well-formed id that holds nobody's money.
var devLiveAccount = horizontest.AccountID("memocart-dev-live")

// devZincKey and devZincWebhookSecret are what dev configures Zinc's test
// server and the service with.
const (
	devZincKey           = "zn_test_memocartdevlive"
	devZincWebhookSecret = "whsec_memocartdevlive"
)

// startDevLive starts the test servers (or takes the test's) and points
// live mode at them. The returned stop closes what it started.
func startDevLive(e *app.Env) (*devLiveServers, func(), error) {
	srv, stop := testHookLiveServers, func() {}
	if srv == nil {
		srv = &devLiveServers{
			creators: creatorstest.New(),
			browse:   browsetest.New(),
			zinc:     zinctest.New(zinctest.WithAPIKey(devZincKey), zinctest.WithTimings(zinctest.DevTimings), zinctest.WithRealClock()),
			horizon:  horizontest.New(devLiveAccount),
		}
		stop = func() {
			srv.creators.Close()
			srv.browse.Close()
			srv.zinc.Close()
			srv.horizon.Close()
		}
	}
	c := &e.Cfg
	id, secret := srv.creators.Credentials()
	c.AmazonAPIURL, c.AmazonTokenURL = srv.creators.URL, srv.creators.TokenURL()
	c.AmazonCredentials = map[string]app.AmazonCredential{}
	for _, group := range []string{"NA", "EU", "FE"} {
		c.AmazonCredentials[group] = app.AmazonCredential{ClientID: id, ClientSecret: secret, PartnerTag: "memocartdev-20"}
	}
	c.EbayAPIURL = srv.browse.URL
	c.EbayClientID, c.EbayClientSecret = srv.browse.Credentials()
	c.ZincAPIURL, c.ZincAPIKey, c.ZincWebhookSecret = srv.zinc.URL, devZincKey, devZincWebhookSecret
	if e.Getenv("MEMOCART_ZINC_POLL_SCHEDULE") == "" {
		c.ZincPoll = models.PollSchedule{First: 3 * time.Second, Pending: 3 * time.Second, Ordered: 3 * time.Second, Shipped: 3 * time.Second}
	}
	// Payments go to the Horizon test server, unless the receiving side
	// is configured explicitly (the end-to-end tests pick their own).
	if e.Getenv("MEMOCART_STELLAR_ACCOUNT") == "" {
		c.StellarNetwork, c.StellarAccount, c.StellarHorizonURL = models.StellarTestnet, devLiveAccount, srv.horizon.URL
		if e.Getenv("MEMOCART_STELLAR_USDC_ISSUER") == "" {
			c.USDCIssuer = models.DefaultUSDCIssuer(models.StellarTestnet)
		}
	}
	srv.horizon.SetUSDCIssuer(c.USDCIssuer)
	if e.Getenv("MEMOCART_STELLAR_PAYOUT_SECRET_FILE") == "" && c.StellarHorizonURL == srv.horizon.URL {
		payout, path, err := fundDevPayout(srv.horizon, c.DataDir)
		if err != nil {
			stop()
			return nil, nil, err
		}
		srv.payout, c.StellarPayoutSecretFile = payout, path
		if e.Getenv("MEMOCART_STELLAR_PAYOUT_ACCOUNT") == "" {
			c.StellarPayoutAccount = payout
		}
	}
	// Test money: live refunds up to this go out without an operator, so
	// a walk reaches `sent` on its own (production's default waits for
	// `memocart refunds approve`).
	if e.Getenv("MEMOCART_REFUND_AUTO_APPROVE_MAX") == "" {
		c.RefundAutoApproveMax = devRefundAutoApproveMax
	}
	e.Live = e.Live.WithAmazon(srv.creators.Client())
	return srv, stop, nil
}

// devRefundAutoApproveMax is dev live's MEMOCART_REFUND_AUTO_APPROVE_MAX.
var devRefundAutoApproveMax = decimal.NewFromInt(1000)

// devPayoutFunds is what the dev payout account holds on the Horizon test
// server, in XLM and in USDC: enough for any walk.
const devPayoutFunds = "100000"

// fundDevPayout makes the account live refunds are paid from on the
// Horizon test server: a key derived from a fixed name (it holds test
// money only), funded in XLM and USDC, its seed written to a file in
// dataDir that only the owner may read, as a payout seed file must be.
// It returns the account and the file's path.
func fundDevPayout(h *horizontest.Server, dataDir string) (string, string, error) {
	kp, err := devPayoutKey()
	if err != nil {
		return "", "", err
	}
	if err := h.SetAccount(horizontest.Account{ID: kp.Address(), XLM: devPayoutFunds, USDC: devPayoutFunds, TrustUSDC: true}); err != nil {
		return "", "", fmt.Errorf("funding the dev payout account: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", "", err
	}
	path := filepath.Join(dataDir, "dev-live-payout-seed")
	if err := os.WriteFile(path, []byte(kp.Seed()+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("writing the dev payout seed: %w", err)
	}
	// WriteFile keeps the mode of a file that exists: make sure of it.
	return kp.Address(), path, os.Chmod(path, 0o600)
}

// listening tells the servers where the API listens: Zinc's test server
// delivers its webhooks there.
func (s *devLiveServers) listening(addr string) {
	s.zinc.SetWebhook("http://"+addr+"/webhooks/zinc", devZincWebhookSecret)
}

// banner is what dev prints about the live path.
func (s *devLiveServers) banner(liveKey string) string {
	return fmt.Sprintf(`
Live mode runs against test servers (MEMOCART_DEV_LIVE=testservers):
  Amazon Creators API: %[1]s   eBay Browse API: %[2]s
  Zinc:                %[3]s   Horizon (testnet): %[4]s
  Live API key:        %[5]s
  Refunds paid from:   %[6]s

Walk the live path (docs/production.md, "Walk the live path on one machine"):
  export LIVE=%[5]s
  export HORIZON=%[4]s
`, s.creators.URL, s.browse.URL, s.zinc.URL, s.horizon.URL, liveKey, cmp.Or(s.payout, "the account of MEMOCART_STELLAR_PAYOUT_SECRET_FILE"))
}

// devPayoutKey is the dev payout account's key: derived from a fixed
// name, as it holds test money only.
func devPayoutKey() (*keypair.Full, error) {
	return keypair.FromRawSeed(sha256.Sum256([]byte("memocart dev live payout")))
}
