package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// devAccount owns the key dev prints.
const devAccount = "dev"

// ensureDevKey stores the key from MEMOCART_DEV_API_KEY, or else the one
// kept in the data directory (made on the first start), as a test-mode Pro
// key of the dev account, and returns its secret. Keeping it means a restart
// prints the key the developer already exported.
func ensureDevKey(ctx context.Context, e app.Env, st *sqlstore.Store) (string, error) {
	secret := e.Cfg.DevAPIKey
	if secret != "" {
		mode, err := models.ParseAPIKey(e.Cfg.KeyPrefix, secret)
		if err != nil || mode != models.ModeTest {
			return "", fmt.Errorf("MEMOCART_DEV_API_KEY must be %s_test_ followed by at least 16 letters or digits", e.Cfg.KeyPrefix)
		}
	} else {
		var err error
		if secret, err = keptSecret(filepath.Join(e.Cfg.DataDir, "dev-api-key"), e.Cfg.KeyPrefix, models.ModeTest); err != nil {
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

// newDevLiveKey stores the live-mode Pro key of the dev account kept in the
// data directory (made on the first start), for walking the live path
// against the test servers, and returns its secret.
func newDevLiveKey(ctx context.Context, e app.Env, st *sqlstore.Store) (string, error) {
	secret, err := keptSecret(filepath.Join(e.Cfg.DataDir, "dev-live-api-key"), e.Cfg.KeyPrefix, models.ModeLive)
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

// keptSecret returns the API key secret of the given mode kept in path, or
// makes one and keeps it there (readable by its owner only). A file that
// does not hold a well-formed key of that mode is replaced.
func keptSecret(path, prefix string, mode models.Mode) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		secret := strings.TrimSpace(string(b))
		if m, err := models.ParseAPIKey(prefix, secret); err == nil && m == mode {
			return secret, nil
		}
	}
	secret, err := models.NewAPIKeySecret(prefix, mode, rand.Reader)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return secret, os.WriteFile(path, []byte(secret+"\n"), 0o600)
}
