package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// devAccount owns the key dev prints.
const devAccount = "dev"

// ensureDevKey stores the key from MEMOCART_DEV_API_KEY, or a fresh random
// one, as a test-mode Pro key of the dev account, and returns its secret.
func ensureDevKey(ctx context.Context, e app.Env, st *sqlstore.Store) (string, error) {
	secret := e.Cfg.DevAPIKey
	if secret != "" {
		mode, err := models.ParseAPIKey(e.Cfg.KeyPrefix, secret)
		if err != nil || mode != models.ModeTest {
			return "", fmt.Errorf("MEMOCART_DEV_API_KEY must be %s_test_ followed by at least 16 letters or digits", e.Cfg.KeyPrefix)
		}
	} else {
		var err error
		if secret, err = models.NewAPIKeySecret(e.Cfg.KeyPrefix, models.ModeTest, rand.Reader); err != nil {
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

// newDevLiveKey stores a fresh live-mode Pro key of the dev account, for
// walking the live path against the test servers, and returns its secret.
func newDevLiveKey(ctx context.Context, e app.Env, st *sqlstore.Store) (string, error) {
	secret, err := models.NewAPIKeySecret(e.Cfg.KeyPrefix, models.ModeLive, rand.Reader)
	if err != nil {
		return "", err
	}
	now := time.Now()
	acct, err := st.EnsureAccount(ctx, devAccount, now)
	if err != nil {
		return "", err
	}
	_, err = st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeLive, Tier: models.TierPro, CreatedAt: now})
	return secret, err
}
