package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// busyOnce is the SQLite dialector whose first open fails as SQLite does
// when two processes switch a new file to WAL at once: after the pool is
// opened (gorm.Open then closes it).
type busyOnce struct {
	sqliteDialector
	failed *bool
}

func (d busyOnce) Initialize(db *gorm.DB) error {
	if err := d.sqliteDialector.Initialize(db); err != nil {
		return err
	}
	if !*d.failed {
		*d.failed = true
		return errors.New("database is locked (5) (SQLITE_BUSY)")
	}
	return nil
}

// A retry after SQLITE_BUSY opens a pool of its own: reusing the config
// of the failed attempt answered "sql: database is closed" (seen in CI, in
// TestConcurrentMigrate).
func TestOpenRetriesABusySQLiteWithAFreshPool(t *testing.T) {
	failed := false
	d := busyOnce{sqliteDialector{dsn: sqliteDSN(filepath.Join(t.TempDir(), "busy.db"))}, &failed}
	db, err := openRetryingBusy(context.Background(), d, DialectSQLite, func() *gorm.Config { return &gorm.Config{} })
	require.NoError(t, err)
	require.True(t, failed, "the first attempt failed busy")
	sqlDB, err := db.DB()
	require.NoError(t, err)
	defer sqlDB.Close()
	require.NoError(t, sqlDB.Ping(), "the retry's pool is open")
}
