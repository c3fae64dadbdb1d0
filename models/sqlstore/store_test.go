package sqlstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// eachDialect runs fn against a fresh store of every configured dialect.
func eachDialect(t *testing.T, fn func(t *testing.T, st *sqlstore.Store)) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, sqlstoretest.Open(t, d))
		})
	}
}

// openAt opens a store on the database at dsn, closed when the test ends.
// It migrates nothing: each caller migrates as far as it needs. Event
// bodies are written by sqlstoretest.Renderer.
func openAt(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), dsn, nil)
	require.NoError(t, err)
	st.SetEventRenderer(sqlstoretest.Renderer{})
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// migratedTo is a fresh store of dialect migrated up to version only, for
// a migration's test to write the rows of the schema before it.
func migratedTo(t *testing.T, dialect string, version int) *sqlstore.Store {
	t.Helper()
	st := openAt(t, sqlstoretest.DSN(t, dialect))
	require.NoError(t, st.MigrateUpTo(context.Background(), version))
	return st
}

// eachDialectAt runs fn on a store of each dialect migrated up to version:
// a migration's test writes rows as they were before it, then migrates.
func eachDialectAt(t *testing.T, version int, fn func(t *testing.T, st *sqlstore.Store)) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) {
			fn(t, migratedTo(t, d, version))
		})
	}
}

// openMigrated opens a migrated store on the database at dsn that seals
// secrets with key, or keeps them plain when key is nil: two of them on
// one database show what a process with the key and one without read.
func openMigrated(t testing.TB, dsn string, key []byte) *sqlstore.Store {
	t.Helper()
	st := openAt(t, dsn)
	_, err := st.Migrate(context.Background())
	require.NoError(t, err)
	if key != nil {
		require.NoError(t, st.SetSecretKey(key))
	}
	return st
}

// openPostgres is a migrated store on a fresh Postgres database and its
// DSN, for a test of what Postgres plans; without Postgres the test fails
// rather than passing unrun.
func openPostgres(t *testing.T) (*sqlstore.Store, string) {
	t.Helper()
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.DialectPostgres) {
		t.Fatalf("%s is not set: this test needs Postgres", sqlstoretest.EnvPostgresURL)
	}
	dsn := sqlstoretest.DSN(t, sqlstore.DialectPostgres)
	return openMigrated(t, dsn, nil), dsn
}

func TestMigrateIsIdempotentAndRecorded(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		again, err := st.Migrate(ctx)
		require.NoError(t, err)
		assert.Empty(t, again, "second migrate applies nothing")
		ms, err := st.Migrations(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, ms)
		for _, m := range ms {
			assert.NotNil(t, m.AppliedAt, m.Name)
		}
	})
}

func TestConcurrentMigrate(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := sqlstoretest.DSN(t, d)
			ctx := context.Background()
			var wg sync.WaitGroup
			applied := make([][]string, 3)
			errs := make([]error, 3)
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := sqlstore.Open(ctx, dsn, nil)
					if err != nil {
						errs[i] = err
						return
					}
					defer st.Close()
					applied[i], errs[i] = st.Migrate(ctx)
				}()
			}
			wg.Wait()
			total := 0
			for i := range 3 {
				require.NoError(t, errs[i])
				total += len(applied[i])
			}
			st, err := sqlstore.Open(ctx, dsn, nil)
			require.NoError(t, err)
			defer st.Close()
			ms, err := st.Migrations(ctx)
			require.NoError(t, err)
			assert.Equal(t, len(ms), total, "each migration applied exactly once across racing processes")
		})
	}
}

func TestAPIKeys(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		acct, err := st.EnsureAccount(ctx, "acme", now)
		require.NoError(t, err)
		same, err := st.EnsureAccount(ctx, "acme", now.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, acct.ID, same.ID, "EnsureAccount is idempotent by name")

		secret, err := models.NewAPIKeySecret("mc", models.ModeTest, rand.Reader)
		require.NoError(t, err)
		k, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeTest, Tier: models.TierEnterprise, PerMinute: 5000, CreatedAt: now})
		require.NoError(t, err)
		assert.Equal(t, "acme", k.AccountName)
		assert.Equal(t, secret[len(secret)-4:], k.Last4)
		assert.Equal(t, 5000, k.RateLimit())
		assert.True(t, now.Equal(k.CreatedAt), "created_at round-trips: %v", k.CreatedAt)

		// The same secret stored again (a fixed dev key after restart) is the same key.
		again, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeTest, Tier: models.TierPro, CreatedAt: now})
		require.NoError(t, err)
		assert.Equal(t, k.ID, again.ID)

		got, err := st.AuthenticateAPIKey(ctx, models.HashAPIKey(secret))
		require.NoError(t, err)
		assert.Equal(t, k.ID, got.ID)

		_, err = st.AuthenticateAPIKey(ctx, models.HashAPIKey(secret+"x"))
		assert.ErrorIs(t, err, models.ErrInvalidAPIKey)

		list, err := st.ListAPIKeys(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, list, 1)
		other, err := st.ListAPIKeys(ctx, "nobody")
		require.NoError(t, err)
		assert.Empty(t, other)

		revoked, err := st.RevokeAPIKey(ctx, k.ID, now.Add(time.Minute))
		require.NoError(t, err)
		require.NotNil(t, revoked.RevokedAt)
		_, err = st.AuthenticateAPIKey(ctx, models.HashAPIKey(secret))
		assert.ErrorIs(t, err, models.ErrInvalidAPIKey, "revoked keys no longer authenticate")

		revokedAgain, err := st.RevokeAPIKey(ctx, k.ID, now.Add(time.Hour))
		require.NoError(t, err)
		assert.True(t, revoked.RevokedAt.Equal(*revokedAgain.RevokedAt), "first revocation time is kept")

		_, err = st.RevokeAPIKey(ctx, "key_missing", now)
		assert.True(t, errors.Is(err, sqlstore.ErrKeyNotFound))
	})
}

func TestCartRoundTripAndIsolation(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
		a, err := st.EnsureAccount(ctx, "a", now)
		require.NoError(t, err)
		b, err := st.EnsureAccount(ctx, "b", now)
		require.NoError(t, err)

		d := decimal.RequireFromString
		cart := models.Cart{
			ID: "crt_1", AccountID: a.ID, Mode: models.ModeTest, Status: models.CartReady,
			ShipToCountry: "US", ShipToPostalCode: "94107",
			Quote: models.Quote{Currency: "USD", Subtotal: d("1234567.89"), Shipping: d("0.10"), Tax: d("0.01"), ServiceFee: d("2.00"), Total: d("1234570.00")},
			Items: []models.CartItem{
				{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon, ProductID: "B000000001", Title: "One", ImageURL: "https://img/1", Quantity: 2, UnitPrice: d("0.10"), LineTotal: d("0.20")},
				{ProductURL: "https://www.ebay.com/itm/123456789012", Marketplace: models.MarketplaceEbay, ProductID: "123456789012", Title: "Two", ImageURL: "https://img/2", Quantity: 1, UnitPrice: d("1234567.69"), LineTotal: d("1234567.69")},
			},
			CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
		}
		require.NoError(t, st.CreateCart(ctx, cart))

		got, err := st.Cart(ctx, a.ID, models.ModeTest, "crt_1")
		require.NoError(t, err)
		assert.True(t, cart.Total.Equal(got.Total), "money is exact: %s", got.Total)
		assert.Equal(t, "1234567.89", got.Subtotal.StringFixed(2))
		assert.True(t, cart.CreatedAt.Equal(got.CreatedAt), "%v vs %v", cart.CreatedAt, got.CreatedAt)
		assert.True(t, cart.ExpiresAt.Equal(got.ExpiresAt))
		require.Len(t, got.Items, 2)
		assert.Equal(t, "B000000001", got.Items[0].ProductID, "items keep their order")
		assert.Equal(t, 2, got.Items[0].Quantity)

		_, err = st.Cart(ctx, b.ID, models.ModeTest, "crt_1")
		assert.ErrorIs(t, err, models.ErrCartNotFound, "another account cannot read the cart")
		_, err = st.Cart(ctx, a.ID, models.ModeLive, "crt_1")
		assert.ErrorIs(t, err, models.ErrCartNotFound, "the other mode cannot read the cart")
		_, err = st.Cart(ctx, a.ID, models.ModeTest, "crt_nope")
		assert.ErrorIs(t, err, models.ErrCartNotFound)
	})
}
