package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
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

// ErrNumberTaken is what an attempt to create an order answers when its
// minted number was taken.
var ErrNumberTaken = errNumberTaken

// SQLDB is the store's connection pool, for tests that read the catalog.
func (s *Store) SQLDB() (*sql.DB, error) { return s.db.DB() }

// OpenTransactions counts the transactions left open on this store's
// database: an open one holds its locks until its connection closes. On
// Postgres it counts the sessions idle in a transaction. On SQLite it is 1
// when a new connection cannot take the write lock at once: every
// transaction of the store begins IMMEDIATE, so an open one holds it.
func (s *Store) OpenTransactions(ctx context.Context) (int, error) {
	if s.dialect == DialectSQLite {
		return s.sqliteWriteLockHeld(ctx)
	}
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n).Error
	return n, err
}

func (s *Store) sqliteWriteLockHeld(ctx context.Context) (int, error) {
	d, ok := s.db.Dialector.(sqliteDialector)
	if !ok {
		return 0, fmt.Errorf("not a SQLite store: %T", s.db.Dialector)
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(d.dsn, "file:"), "?")
	// busy_timeout 0: a held lock answers SQLITE_BUSY now instead of
	// being waited for.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		if sqliteBusy(err) {
			return 1, nil
		}
		return 0, err
	}
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	return 0, err
}

// BackendPIDs lists the server processes of this store's database
// (Postgres): a connection the pool discarded and replaced shows as a new one.
func (s *Store) BackendPIDs(ctx context.Context) ([]int, error) {
	var pids []int
	err := s.db.WithContext(ctx).Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`).Scan(&pids).Error
	return pids, err
}

// RefundRowTimes returns a refund's updated_at and workflow_started_at,
// which models.Refund does not carry, for tests of what a write wrote.
func (s *Store) RefundRowTimes(ctx context.Context, id string) (updatedAt time.Time, workflowStartedAt *time.Time, err error) {
	var r refundRow
	if err := s.db.WithContext(ctx).Select("updated_at", "workflow_started_at").Where("id = ?", id).Take(&r).Error; err != nil {
		return time.Time{}, nil, err
	}
	return utc(r.UpdatedAt), utcPtr(r.WorkflowStartedAt), nil
}

// StoredRefundClaim returns the claim row of a refund as stored: the hash
// it is found by and the token column (sealed or plain), for tests of
// what the database holds.
func (s *Store) StoredRefundClaim(ctx context.Context, refundID string) (tokenHash, token string, err error) {
	var r refundClaimRow
	err = s.db.WithContext(ctx).Where("refund_id = ?", refundID).Take(&r).Error
	return r.TokenHash, r.Token, err
}

// SetStoredRefundClaimToken overwrites a claim's token column, for tests
// that move a sealed token to another refund's row.
func (s *Store) SetStoredRefundClaimToken(ctx context.Context, refundID, stored string) error {
	return s.db.WithContext(ctx).Model(&refundClaimRow{}).Where("refund_id = ?", refundID).Update("token", stored).Error
}

// RefundClaimCount counts the stored claims.
func (s *Store) RefundClaimCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&refundClaimRow{}).Count(&n).Error
	return n, err
}

// SetStoredWebhookEventPayload overwrites an event's stored body.
func (s *Store) SetStoredWebhookEventPayload(ctx context.Context, id, payload string) error {
	return s.db.WithContext(ctx).Model(&webhookEventRow{}).Where("id = ?", id).Update("payload", payload).Error
}
