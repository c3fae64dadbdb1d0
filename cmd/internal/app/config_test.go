package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLiveProviderConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "https://creatorsapi.amazon", cfg.AmazonAPIURL)
	assert.Equal(t, "https://api.ebay.com", cfg.EbayAPIURL)
	assert.Equal(t, "https://api.zinc.com", cfg.ZincAPIURL)
	assert.Equal(t, models.PollSchedule{First: 7 * time.Minute, Pending: 4 * time.Minute, Ordered: 30 * time.Minute, Shipped: time.Hour}, cfg.ZincPoll)
	assert.Equal(t, 10*time.Minute, cfg.PreviewCacheTTL)
	assert.Empty(t, cfg.AmazonCredentials)
	assert.Equal(t, "Live purchasing is not configured on this deployment", noPurchasing(cfg)[models.ModeLive])
	assert.Nil(t, liveWebhooks(cfg), "no secret, no webhooks")

	vars := map[string]string{
		"MEMOCART_AMAZON_NA_CREDENTIALS": "amzn1.client:s3cret:shop-20",
		"MEMOCART_ZINC_API_KEY":          "zn_live_abcdefghijkl",
		"MEMOCART_ZINC_WEBHOOK_SECRET":   "zn_whsec_abcdefgh",
		"MEMOCART_ZINC_POLL_SCHEDULE":    "1m, 2m,3m,4m",
		"MEMOCART_PREVIEW_CACHE_TTL":     "0",
	}
	cfg, err = loadConfig(envOf(vars))
	require.NoError(t, err)
	assert.Equal(t, AmazonCredential{ClientID: "amzn1.client", ClientSecret: "s3cret", PartnerTag: "shop-20"}, cfg.AmazonCredentials["NA"])
	assert.Equal(t, models.PollSchedule{First: time.Minute, Pending: 2 * time.Minute, Ordered: 3 * time.Minute, Shipped: 4 * time.Minute}, cfg.ZincPoll)
	assert.Negative(t, cfg.PreviewCacheTTL, "0 turns the cache off")

	// With webhooks and no schedule set, checks once bought are a safety
	// net every 6 hours; Zinc's advised checks while buying stay.
	delete(vars, "MEMOCART_ZINC_POLL_SCHEDULE")
	hooked, err := loadConfig(envOf(vars))
	require.NoError(t, err)
	assert.Equal(t, models.PollSchedule{First: 7 * time.Minute, Pending: 4 * time.Minute, Ordered: 6 * time.Hour, Shipped: 6 * time.Hour}, hooked.ZincPoll)
	assert.Nil(t, noPurchasing(cfg))
	assert.Contains(t, liveWebhooks(cfg), "zinc")

	masked := cfg.Masked(envOf(vars))
	for _, secret := range []string{"s3cret", "zn_live_abcdefghijkl", "zn_whsec_abcdefgh"} {
		assert.NotContains(t, masked, secret)
	}

	// A credential may name its version, which decides its token request.
	cfg, err = loadConfig(envOf(map[string]string{"MEMOCART_AMAZON_EU_CREDENTIALS": "amzn1.client:s3cret:shop-21:2.2"}))
	require.NoError(t, err)
	assert.Equal(t, AmazonCredential{ClientID: "amzn1.client", ClientSecret: "s3cret", PartnerTag: "shop-21", Version: "2.2"}, cfg.AmazonCredentials["EU"])

	for name, bad := range map[string]string{
		"MEMOCART_AMAZON_EU_CREDENTIALS": "only-an-id",
		"MEMOCART_AMAZON_FE_CREDENTIALS": "id:secret::3.3",
		"MEMOCART_AMAZON_NA_CREDENTIALS": "id:secret:tag:3.1:extra",
		"MEMOCART_ZINC_POLL_SCHEDULE":    "7m,4m",
		"MEMOCART_PREVIEW_CACHE_TTL":     "-1m",
		"MEMOCART_EBAY_API_URL":          "ftp://api.ebay.com",
		"MEMOCART_DEV_LIVE":              "yes",
	} {
		_, err := loadConfig(envOf(map[string]string{name: bad}))
		require.Error(t, err, name)
		assert.True(t, strings.Contains(err.Error(), name), "the error names %s: %v", name, err)
	}
}

// TestHardeningAndTuningConfig: the variables issues 8 and 9 added, their
// defaults and their refusals.
func TestHardeningAndTuningConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, cfg.RequestTimeout)
	assert.Equal(t, 5*time.Second, cfg.KeyCacheTTL)
	assert.Equal(t, 10000, cfg.WorkerStickyCacheSize)
	assert.Equal(t, 1000, cfg.WorkerMaxWorkflowTasks)
	assert.Equal(t, 1000, cfg.WorkerMaxActivities)
	assert.Empty(t, cfg.AdminAddr, "the admin listener is opt-in")

	cfg, err = loadConfig(envOf(map[string]string{
		"MEMOCART_KEY_CACHE_TTL": "0", "MEMOCART_WORKER_STICKY_CACHE_SIZE": "500", "MEMOCART_ADMIN_ADDR": "127.0.0.1:6060",
	}))
	require.NoError(t, err)
	assert.Negative(t, cfg.KeyCacheTTL, "0 turns the cache off")
	assert.Equal(t, 500, cfg.WorkerStickyCacheSize)
	assert.Equal(t, "127.0.0.1:6060", cfg.AdminAddr)

	for k, v := range map[string]string{
		"MEMOCART_REQUEST_TIMEOUT": "0s", "MEMOCART_KEY_CACHE_TTL": "-1s", "MEMOCART_WORKER_STICKY_CACHE_SIZE": "0",
		"MEMOCART_WORKER_MAX_ACTIVITIES": "many", "MEMOCART_ADMIN_ADDR": "6060",
	} {
		_, err := loadConfig(envOf(map[string]string{k: v}))
		assert.ErrorContainsf(t, err, k, "%s=%s must be refused", k, v)
	}
}

// TestPublicRateLimitConfig: the per-address limit of the public routes
// and the proxies trusted to name the client.
func TestPublicRateLimitConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 60, cfg.PublicRateLimit)
	assert.Empty(t, cfg.TrustedProxies, "no proxy is trusted by default")

	cfg, err = loadConfig(envOf(map[string]string{
		"MEMOCART_PUBLIC_RATE_LIMIT": "0", "MEMOCART_TRUSTED_PROXIES": " 10.0.0.0/8, 192.0.2.1 ,2001:db8::/32,",
	}))
	require.NoError(t, err)
	assert.Negative(t, cfg.PublicRateLimit, "0 turns the limit off")
	assert.Equal(t, []string{"10.0.0.0/8", "192.0.2.1", "2001:db8::/32"}, cfg.TrustedProxies)

	cfg, err = loadConfig(envOf(map[string]string{"MEMOCART_PUBLIC_RATE_LIMIT": "120"}))
	require.NoError(t, err)
	assert.Equal(t, 120, cfg.PublicRateLimit)

	for k, v := range map[string]string{
		"MEMOCART_PUBLIC_RATE_LIMIT": "-5", "MEMOCART_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal",
	} {
		_, err := loadConfig(envOf(map[string]string{k: v}))
		assert.ErrorContainsf(t, err, k, "%s=%s must be refused", k, v)
	}
	_, err = loadConfig(envOf(map[string]string{"MEMOCART_PUBLIC_RATE_LIMIT": "many"}))
	assert.ErrorContains(t, err, "MEMOCART_PUBLIC_RATE_LIMIT")
}

// TestSandboxPaymentAddressConfig: the test-mode payment_address is, by
// default, the sandbox's valid StrKey, and a value that fails StrKey
// validation (what a wallet checks) is refused at start.
func TestSandboxPaymentAddressConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, sandbox.PaymentAddress, cfg.SandboxPayTo)
	require.NoError(t, models.ValidateStellarAccount(cfg.SandboxPayTo))

	for _, bad := range []string{"GBSANDBOXMEMOCARTTESTMODEPAYMENTSNEVERLEAVETHESANDBOXXXX", "gbguktkpinavevbaknau4rccj5mduicoivlekuraizku4rcfiqxcawhj"} {
		_, err := loadConfig(envOf(map[string]string{"MEMOCART_SANDBOX_PAYMENT_ADDRESS": bad}))
		assert.ErrorContainsf(t, err, "MEMOCART_SANDBOX_PAYMENT_ADDRESS", "%q must be refused", bad)
	}
}

// TestPayoutAccountConfig: MEMOCART_STELLAR_PAYOUT_ACCOUNT is a G…
// account; a worker whose payout seed is of another account refuses to
// start, and the account refunds are paid from is one of the service's
// own, never a destination, whether or not the setting is given.
func TestPayoutAccountConfig(t *testing.T) {
	kp, err := keypair.FromRawSeed([32]byte{1})
	require.NoError(t, err)
	other, err := keypair.FromRawSeed([32]byte{2})
	require.NoError(t, err)
	for _, bad := range []string{"M" + kp.Address()[1:], kp.Seed(), strings.ToLower(kp.Address())} {
		_, err := loadConfig(envOf(map[string]string{"MEMOCART_STELLAR_PAYOUT_ACCOUNT": bad}))
		assert.ErrorContains(t, err, "MEMOCART_STELLAR_PAYOUT_ACCOUNT")
	}

	seedFile := filepath.Join(t.TempDir(), "payout-seed")
	require.NoError(t, os.WriteFile(seedFile, []byte(kp.Seed()+"\n"), 0o600))
	worker := func(account string) (Env, error) {
		cfg, err := loadConfig(envOf(map[string]string{
			"MEMOCART_STELLAR_NETWORK":            "testnet",
			"MEMOCART_STELLAR_ACCOUNT":            other.Address(),
			"MEMOCART_STELLAR_HORIZON_URL":        "http://127.0.0.1:1",
			"MEMOCART_STELLAR_PAYOUT_SECRET_FILE": seedFile,
			"MEMOCART_STELLAR_PAYOUT_ACCOUNT":     account,
		}))
		return Env{Cfg: cfg, Log: slog.New(slog.DiscardHandler)}, err
	}
	e, err := worker(other.Address())
	require.NoError(t, err)
	_, _, err = newPayouts(e, nil, nil)
	assert.ErrorContains(t, err, "MEMOCART_STELLAR_PAYOUT_ACCOUNT", "a seed of another account")
	for _, account := range []string{kp.Address(), ""} {
		e, err := worker(account)
		require.NoError(t, err)
		p, payoutAccount, err := newPayouts(e, nil, nil)
		require.NoError(t, err)
		assert.Equal(t, kp.Address(), payoutAccount)
		assert.ElementsMatch(t, []string{other.Address(), kp.Address()}, p.ServiceAccounts)
	}
}

// TestPayoutMaxFeeConfig: MEMOCART_STELLAR_PAYOUT_MAX_FEE is a number of
// stroops from the network's minimum fee to 1 XLM, by default
// payout.DefaultMaxFee.
func TestPayoutMaxFeeConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(map[string]string{}))
	require.NoError(t, err)
	assert.Equal(t, int64(payout.DefaultMaxFee), cfg.StellarPayoutMaxFee)
	cfg, err = loadConfig(envOf(map[string]string{"MEMOCART_STELLAR_PAYOUT_MAX_FEE": "5000"}))
	require.NoError(t, err)
	assert.Equal(t, int64(5000), cfg.StellarPayoutMaxFee)
	for _, bad := range []string{"99", "0", "-1", "10000001", "1e4", "0.5"} {
		_, err := loadConfig(envOf(map[string]string{"MEMOCART_STELLAR_PAYOUT_MAX_FEE": bad}))
		assert.ErrorContainsf(t, err, "MEMOCART_STELLAR_PAYOUT_MAX_FEE", "%q must be refused", bad)
	}
}
