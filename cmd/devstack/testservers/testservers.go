// Package testservers runs the providers' test servers (Amazon's Creators
// API, eBay's Browse API, Zinc, Horizon) in the calling process and says
// how live mode is pointed at them: the MEMOCART_* variables, the payout
// account funded on the Horizon test server, where Zinc delivers its
// webhooks. `devstack dev` (MEMOCART_DEV_LIVE=testservers) applies them to
// its own configuration; `devstack chaos` and `devstack payouts` give them
// to the cluster's api and worker processes. Both take the rules from here.
//
// It may import the standard library, the test servers, models, the
// Stellar SDK's keypair, decimal and cmd/internal/app (to read the
// configuration the way the service will).
package testservers

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/memocart/memocart/activities/amazon/creatorstest"
	"github.com/memocart/memocart/activities/ebay/browsetest"
	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/internal/app"
)

// Servers are the providers' test servers live mode runs against.
type Servers struct {
	Creators *creatorstest.Server
	Browse   *browsetest.Server
	Zinc     *zinctest.Server
	Horizon  *horizontest.Server
	// Payout is the account live refunds are paid from, funded on Horizon
	// by Configure; empty when the service was given its own. USDCIssuer
	// is the issuer of the USDC the service takes, as Configure read it.
	Payout, USDCIssuer string
}

// Account is the Stellar account live payments go to on the test
// servers: a well-formed id that holds nobody's money.
var Account = horizontest.AccountID("memocart-dev-live")

// ZincKey and ZincWebhookSecret are what Zinc's test server and the
// service are configured with.
const (
	ZincKey           = "zn_test_memocartdevlive"
	ZincWebhookSecret = "whsec_memocartdevlive"
)

// AutoApproveMax is the MEMOCART_REFUND_AUTO_APPROVE_MAX set unless the
// environment sets one: test money, so live refunds reach `sent` on their
// own (production's default waits for `memocart refunds approve`).
var AutoApproveMax = decimal.NewFromInt(1000)

// zincPoll is the MEMOCART_ZINC_POLL_SCHEDULE set unless the environment
// sets one: the test server buys in seconds (zinctest.DevTimings).
const zincPoll = "3s,3s,3s,3s"

// payoutFunds is what the payout account holds on the Horizon test
// server, in XLM and in USDC: enough for any walk or run.
const payoutFunds = "100000"

// PayoutSeedFile is the payout seed's file name under the data directory
// Configure is given.
const PayoutSeedFile = "dev-live-payout-seed"

// Start starts the four servers as a person or a run of processes uses
// them: Zinc's clock runs at wall time and its orders go from pending to
// delivered in seconds.
func Start() *Servers {
	return &Servers{
		Creators: creatorstest.New(),
		Browse:   browsetest.New(),
		Zinc:     zinctest.New(zinctest.WithAPIKey(ZincKey), zinctest.WithTimings(zinctest.DevTimings), zinctest.WithRealClock()),
		Horizon:  horizontest.New(Account),
	}
}

// Close stops the servers.
func (s *Servers) Close() {
	s.Creators.Close()
	s.Browse.Close()
	s.Zinc.Close()
	s.Horizon.Close()
}

// Configure returns the MEMOCART_* variables that point live mode at the
// servers, given the environment getenv (whose variables they override
// only where said):
//   - the catalogs and Zinc: always the test servers;
//   - Zinc's poll schedule, unless set;
//   - the receiving side (network, account, Horizon), unless
//     MEMOCART_STELLAR_ACCOUNT is set (a test picking its own);
//   - the payout account, funded on the Horizon test server with its seed
//     in dataDir, unless MEMOCART_STELLAR_PAYOUT_SECRET_FILE is set or
//     payments are read from another Horizon;
//   - MEMOCART_REFUND_AUTO_APPROVE_MAX (AutoApproveMax), unless set.
//
// It tells the Horizon test server the USDC issuer the service will take.
func (s *Servers) Configure(getenv func(string) string, dataDir string) (map[string]string, error) {
	id, secret := s.Creators.Credentials()
	ebayID, ebaySecret := s.Browse.Credentials()
	vars := map[string]string{
		"MEMOCART_AMAZON_API_URL":   s.Creators.URL,
		"MEMOCART_AMAZON_TOKEN_URL": s.Creators.TokenURL(),
		"MEMOCART_EBAY_API_URL":     s.Browse.URL,
		"MEMOCART_EBAY_CLIENT_ID":   ebayID, "MEMOCART_EBAY_CLIENT_SECRET": ebaySecret,
		"MEMOCART_ZINC_API_URL": s.Zinc.URL, "MEMOCART_ZINC_API_KEY": ZincKey, "MEMOCART_ZINC_WEBHOOK_SECRET": ZincWebhookSecret,
	}
	for _, group := range []string{"NA", "EU", "FE"} {
		vars["MEMOCART_AMAZON_"+group+"_CREDENTIALS"] = id + ":" + secret + ":memocartdev-20"
	}
	unlessSet := func(name, value string) {
		if getenv(name) == "" {
			vars[name] = value
		}
	}
	unlessSet("MEMOCART_ZINC_POLL_SCHEDULE", zincPoll)
	if getenv("MEMOCART_STELLAR_ACCOUNT") == "" {
		vars["MEMOCART_STELLAR_NETWORK"] = "testnet"
		vars["MEMOCART_STELLAR_ACCOUNT"] = Account
		vars["MEMOCART_STELLAR_HORIZON_URL"] = s.Horizon.URL
	}
	unlessSet("MEMOCART_REFUND_AUTO_APPROVE_MAX", AutoApproveMax.String())

	// The issuer and the Horizon the service will use, read as it reads
	// them (defaults included).
	cfg, err := app.LoadConfig(Overlay(vars, getenv))
	if err != nil {
		return nil, fmt.Errorf("live mode on the test servers: %w", err)
	}
	s.USDCIssuer = cfg.USDCIssuer
	s.Horizon.SetUSDCIssuer(cfg.USDCIssuer)
	if cfg.StellarPayoutSecretFile == "" && cfg.StellarHorizonURL == s.Horizon.URL {
		payout, path, err := fundPayout(s.Horizon, dataDir)
		if err != nil {
			return nil, err
		}
		s.Payout = payout
		vars["MEMOCART_STELLAR_PAYOUT_SECRET_FILE"] = path
		unlessSet("MEMOCART_STELLAR_PAYOUT_ACCOUNT", payout)
	}
	return vars, nil
}

// Overlay returns getenv with vars in front of it.
func Overlay(vars map[string]string, getenv func(string) string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return getenv(name)
	}
}

// Listening tells the servers where an API replica listens (host:port):
// Zinc's test server delivers its webhooks there, to one URL, as Zinc
// does.
func (s *Servers) Listening(addr string) {
	s.Zinc.SetWebhook("http://"+addr+"/webhooks/zinc", ZincWebhookSecret)
}

// fundPayout makes the account live refunds are paid from on the Horizon
// test server: PayoutKey's, funded in XLM and USDC, its seed written to a
// file in dataDir that only the owner may read, as a payout seed file
// must be. It returns the account and the file's path.
func fundPayout(h *horizontest.Server, dataDir string) (string, string, error) {
	kp, err := PayoutKey()
	if err != nil {
		return "", "", err
	}
	if err := h.SetAccount(horizontest.Account{ID: kp.Address(), XLM: payoutFunds, USDC: payoutFunds, TrustUSDC: true}); err != nil {
		return "", "", fmt.Errorf("funding the payout account: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", "", err
	}
	path := filepath.Join(dataDir, PayoutSeedFile)
	if err := os.WriteFile(path, []byte(kp.Seed()+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("writing the payout seed: %w", err)
	}
	// WriteFile keeps the mode of a file that exists: make sure of it.
	return kp.Address(), path, os.Chmod(path, 0o600)
}

// PayoutKey is the payout account's key: derived from a fixed name, as it
// holds test money only.
func PayoutKey() (*keypair.Full, error) {
	return keypair.FromRawSeed(sha256.Sum256([]byte("memocart dev live payout")))
}
