package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Migrations are plain SQL, one directory per dialect, named
// NNNN_description.sql and applied in order, each in its own transaction
// together with its row in schema_migrations. A migration, once released, is
// never edited: a change is a new file.
//
//go:embed migrations
var migrationFS embed.FS

// migrationLockID is an arbitrary constant naming Memocart's Postgres
// advisory lock, so replicas starting together migrate one at a time.
const migrationLockID = 0x6d656d6f63617274 // "memocart"

// migrationSteps are the Go parts of migrations, by version, run after
// the migration's SQL in its transaction: what SQL cannot compute alike on
// both dialects, such as exact sums of SQLite's text amounts.
var migrationSteps = map[int]func(tx *gorm.DB) error{
	12: refundLedgerStep,
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and an underscore", name)
		}
		body, err := fs.ReadFile(migrationFS, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// MigrationStatus is one migration and whether it has been applied.
type MigrationStatus struct {
	Version   int
	Name      string
	AppliedAt *time.Time
}

// Migrate applies every migration not yet applied and returns the names of
// those it applied. It is safe to run from several processes at once.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	return s.migrate(ctx, math.MaxInt)
}

// migrate applies the migrations not yet applied up to and including
// version.
func (s *Store) migrate(ctx context.Context, version int) ([]string, error) {
	migs, err := loadMigrations(s.dialect)
	if err != nil {
		return nil, err
	}
	create := `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`
	if s.dialect == DialectSQLite {
		create = strings.Replace(create, "timestamptz", "DATETIME", 1)
	}
	if err := s.db.WithContext(ctx).Exec(create).Error; err != nil {
		// Two Postgres replicas racing on CREATE TABLE IF NOT EXISTS can
		// collide on the catalog; the loser finds the table on retry.
		if err2 := s.db.WithContext(ctx).Exec(create).Error; err2 != nil {
			return nil, fmt.Errorf("creating schema_migrations: %w", err)
		}
	}
	var applied []string
	for _, m := range migs {
		if m.version > version {
			break
		}
		done, err := s.applyMigration(ctx, m)
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.name, err)
		}
		if done {
			applied = append(applied, m.name)
		}
	}
	return applied, nil
}

func (s *Store) applyMigration(ctx context.Context, m migration) (bool, error) {
	applied := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect == DialectPostgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(migrationLockID)).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Table("schema_migrations").Where("version = ?", m.version).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if err := tx.Exec(m.sql).Error; err != nil {
			return err
		}
		if step := migrationSteps[m.version]; step != nil {
			if err := step(tx); err != nil {
				return err
			}
		}
		applied = true
		return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, time.Now().UTC()).Error
	})
	return applied, err
}

// Migrations lists every known migration and when it was applied.
func (s *Store) Migrations(ctx context.Context) ([]MigrationStatus, error) {
	migs, err := loadMigrations(s.dialect)
	if err != nil {
		return nil, err
	}
	type row struct {
		Version   int
		AppliedAt time.Time
	}
	var rows []row
	if err := s.db.WithContext(ctx).Table("schema_migrations").Find(&rows).Error; err != nil {
		return nil, err
	}
	at := map[int]time.Time{}
	for _, r := range rows {
		at[r.Version] = r.AppliedAt
	}
	out := make([]MigrationStatus, 0, len(migs))
	for _, m := range migs {
		st := MigrationStatus{Version: m.version, Name: m.name}
		if t, ok := at[m.version]; ok {
			t = utc(t)
			st.AppliedAt = &t
		}
		out = append(out, st)
	}
	return out, nil
}
