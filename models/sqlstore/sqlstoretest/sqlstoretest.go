// Package sqlstoretest gives tests a fresh, migrated database: a SQLite
// file in a temp directory, or a new Postgres database created on the server
// named by MEMOCART_TEST_DATABASE_URL and dropped when the test ends.
//
// Postgres tests run whenever that variable is set; if it is set and the
// server cannot be reached, the test fails rather than skips, so CI cannot
// pass without having run them.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// EnvPostgresURL names the variable holding an admin URL of a Postgres
// server the tests may create and drop databases on.
const EnvPostgresURL = "MEMOCART_TEST_DATABASE_URL"

// Dialects returns the dialects to run store tests against: SQLite always,
// Postgres when EnvPostgresURL is set.
func Dialects() []string {
	if os.Getenv(EnvPostgresURL) != "" {
		return []string{sqlstore.DialectSQLite, sqlstore.DialectPostgres}
	}
	return []string{sqlstore.DialectSQLite}
}

// DSN creates a fresh empty database of the dialect and returns its DSN;
// the database is removed when the test ends.
func DSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case sqlstore.DialectSQLite:
		return "sqlite://" + filepath.Join(t.TempDir(), "memocart.db")
	case sqlstore.DialectPostgres:
		return freshPostgres(t)
	default:
		t.Fatalf("unknown dialect %q", dialect)
		return ""
	}
}

// Open returns a migrated store on a fresh database of the dialect,
// recording event bodies with Renderer (the service's processes use the
// API's renderer; api tests set it too). A SQLite database starts as a
// copy of one migrated once per test process (migratedSQLite); Migrate
// then finds nothing to apply.
func Open(t testing.TB, dialect string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	dsn := DSN(t, dialect)
	if dialect == sqlstore.DialectSQLite {
		b, err := migratedSQLite()
		if err != nil {
			t.Fatalf("migrate the SQLite template: %v", err)
		}
		if err := os.WriteFile(strings.TrimPrefix(dsn, "sqlite://"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sqlstore.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("open %s store: %v", dialect, err)
	}
	st.SetEventRenderer(Renderer{})
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s store: %v", dialect, err)
	}
	return st
}

// sqliteTemplate is a SQLite database migrated once per test process,
// kept as its file's bytes. SQLite runs in Go here, and under -race the
// migrations of every test's database took most of the api tests' time.
var sqliteTemplate struct {
	once  sync.Once
	bytes []byte
	err   error
}

func migratedSQLite() ([]byte, error) {
	sqliteTemplate.once.Do(func() {
		dir, err := os.MkdirTemp("", "memocart-sqlite-template-")
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "memocart.db")
		ctx := context.Background()
		st, err := sqlstore.Open(ctx, "sqlite://"+path, nil)
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		_, err = st.Migrate(ctx)
		// Closed before it is read: the last connection's close
		// checkpoints the write-ahead log into the file.
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		sqliteTemplate.bytes, sqliteTemplate.err = os.ReadFile(path)
	})
	return sqliteTemplate.bytes, sqliteTemplate.err
}

func freshPostgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvPostgresURL)
	if admin == "" {
		t.Fatalf("%s is not set; Postgres tests need it (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", EnvPostgresURL)
	}
	id, err := models.NewID("t", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name := "memocart_test_" + strings.ToLower(strings.TrimPrefix(id, "t_"))
	db, err := gorm.Open(postgres.Open(admin), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("connect to Postgres at %s (set by %s): %v", redact(admin), EnvPostgresURL, err)
	}
	sqlDB, _ := db.DB()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.WithContext(ctx).Exec("CREATE DATABASE " + name).Error; err != nil {
		_ = sqlDB.Close()
		t.Fatalf("create test database on %s: %v", redact(admin), err)
	}
	t.Cleanup(func() {
		defer sqlDB.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.WithContext(ctx).Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error; err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPostgresURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// MustAccount creates an account and a key for it, returning the key's
// secret and stored form. For tests that need an authenticated caller.
func MustAccount(t testing.TB, st *sqlstore.Store, name string, mode models.Mode, tier models.Tier) (string, models.APIKey) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.EnsureAccount(ctx, name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret, err := models.NewAPIKeySecret(models.DefaultKeyPrefix, mode, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: mode, Tier: tier, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return secret, k
}

// Renderer writes event bodies for tests outside the API: the envelope
// and the ids of what the event is about, with the order's status as the
// recording transaction saw it.
type Renderer struct{}

// ClaimURL is the claim page of token on an example host.
func (Renderer) ClaimURL(token string) string { return "https://pay.example/claim/" + token }

// RenderEvent writes ev's envelope and subject as JSON.
func (Renderer) RenderEvent(ev models.Event, s models.EventSubject) ([]byte, error) {
	data := map[string]any{"order": map[string]any{"id": s.Order.ID, "status": s.Order.Status, "payment_status": s.Order.PaymentStatus}}
	if p := s.Payment; p != nil {
		data["payment"] = map[string]any{"id": p.ID, "outcome": p.Outcome}
	}
	if rf := s.Refund; rf != nil {
		data["refund"] = map[string]any{"id": rf.ID, "status": rf.Status}
	}
	return json.Marshal(map[string]any{
		"id": ev.ID, "type": ev.Type, "created_at": ev.CreatedAt.Format(time.RFC3339), "mode": ev.Mode, "data": data,
	})
}
