package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// devAccount owns the key dev prints.
const devAccount = "dev"

// runDev is `memocart dev`: the whole service in one process on embedded
// defaults, for a laptop or a demo. Nothing here is for production.
func runDev(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "Usage: memocart dev\n\nMigrates the database (SQLite under MEMOCART_DATA_DIR unless MEMOCART_DATABASE_URL is set),\ncreates and prints a test-mode Pro API key (or MEMOCART_DEV_API_KEY), and serves the API on MEMOCART_HTTP_ADDR.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	e.log.Info("starting dev stack", slog.String("config", e.cfg.masked(e.getenv)))
	st, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		e.log.Info("applied migrations", slog.Any("migrations", applied))
	}
	secret, err := ensureDevKey(ctx, e, st)
	if err != nil {
		return err
	}
	limiter, closeLimiter, err := newLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()

	srv := newAPIServer(e, st, limiter)
	ready := make(chan string, 1)
	go func() {
		addr, ok := <-ready
		if !ok {
			return
		}
		fmt.Fprintf(e.stdout, "\nMemocart dev is running.\n  API:           http://%s\n  Test API key:  %s\n\nTry:\n  curl -s -X POST http://%s/v1/products/preview -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{\"url\":\"https://www.amazon.com/dp/B08N5WRWNW\"}'\n\n",
			addr, secret, addr, secret)
	}()
	return api.Serve(ctx, e.cfg.HTTPAddr, srv.Handler(), e.log, ready)
}

// ensureDevKey stores the key from MEMOCART_DEV_API_KEY, or a fresh random
// one, as a test-mode Pro key of the dev account, and returns its secret.
func ensureDevKey(ctx context.Context, e env, st *sqlstore.Store) (string, error) {
	secret := e.cfg.DevAPIKey
	if secret != "" {
		mode, err := models.ParseAPIKey(e.cfg.KeyPrefix, secret)
		if err != nil || mode != models.ModeTest {
			return "", fmt.Errorf("MEMOCART_DEV_API_KEY must be %s_test_ followed by at least 16 letters or digits", e.cfg.KeyPrefix)
		}
	} else {
		var err error
		if secret, err = models.NewAPIKeySecret(e.cfg.KeyPrefix, models.ModeTest, rand.Reader); err != nil {
			return "", err
		}
	}
	now := time.Now()
	acct, err := st.EnsureAccount(ctx, devAccount, now)
	if err != nil {
		return "", err
	}
	k, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeTest, Tier: models.TierPro, CreatedAt: now})
	if err != nil {
		return "", err
	}
	if k.RevokedAt != nil || k.AccountID != acct.ID {
		return "", fmt.Errorf("MEMOCART_DEV_API_KEY names key %s, which is revoked or belongs to another account", k.ID)
	}
	return secret, nil
}
