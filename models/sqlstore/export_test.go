package sqlstore

import (
	"context"

	"github.com/memocart/memocart/models"
)

// MigrateUpTo applies the migrations up to and including version, so a
// test can put rows in an older schema and check what a later migration
// makes of them.
func (s *Store) MigrateUpTo(ctx context.Context, version int) error {
	_, err := s.migrate(ctx, version)
	return err
}

// Exec runs raw SQL, for tests that write rows an older schema had.
func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	return s.db.WithContext(ctx).Exec(sql, args...).Error
}

// StoredWebhookSecret returns an endpoint's secret column as stored, for
// tests of its sealing.
func (s *Store) StoredWebhookSecret(ctx context.Context, id string) (string, error) {
	var r webhookEndpointRow
	err := s.db.WithContext(ctx).Select("secret").Where("id = ?", id).Take(&r).Error
	return r.Secret, err
}

// SetStoredWebhookSecret overwrites an endpoint's secret column, for tests
// that move a sealed secret to another row.
func (s *Store) SetStoredWebhookSecret(ctx context.Context, id, stored string) error {
	return s.db.WithContext(ctx).Model(&webhookEndpointRow{}).Where("id = ?", id).Update("secret", stored).Error
}

// CreateOrderPipelined is the pipelined creation path alone (Postgres), for
// tests that check which cases it takes and what it leaves behind.
func (s *Store) CreateOrderPipelined(ctx context.Context, req models.OrderRequest) (models.Order, error) {
	return s.createOrderPipelined(ctx, req)
}

// CreateOrderGeneral is the general creation transaction alone.
func (s *Store) CreateOrderGeneral(ctx context.Context, req models.OrderRequest) (models.Order, bool, error) {
	return s.createOrderGeneral(ctx, req)
}

// Errors of the pipelined path.
var (
	ErrNotCommon   = errNotCommon
	ErrNumberTaken = errNumberTaken
)

// OpenTransactions counts the sessions of this store's database that are
// idle inside a transaction (Postgres): a path that left one open holds
// its locks until the connection closes.
func (s *Store) OpenTransactions(ctx context.Context) (int, error) {
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n).Error
	return n, err
}

// BackendPIDs lists the server processes of this store's database
// (Postgres): a connection the pool discarded and replaced shows as a new one.
func (s *Store) BackendPIDs(ctx context.Context) ([]int, error) {
	var pids []int
	err := s.db.WithContext(ctx).Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`).Scan(&pids).Error
	return pids, err
}
