package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"time"
)

// unlockTimeout bounds the release of a payout account's lock; a release
// that fails closes the connection, which releases it too.
const unlockTimeout = 5 * time.Second

// LockPayoutAccount waits, within ctx, until this process holds the lock
// of the payout account named by key, shared by every process on the
// database, and returns the function that releases it
// (payout.AccountLock): every payout from an account takes its next
// sequence number, so the workers must submit from it one at a time.
//
// On Postgres it is a session advisory lock held on a connection of its
// own, which Postgres releases when the connection ends: a worker that
// dies or loses the database frees the account. SQLite serves one
// process, whose payer already pays one at a time: the lock is a no-op.
func (s *Store) LockPayoutAccount(ctx context.Context, key string) (unlock func(), err error) {
	if s.dialect != DialectPostgres {
		return func() {}, nil
	}
	db, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("a connection for the payout account's lock: %w", err)
	}
	id := payoutLockID(key)
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", id); err != nil {
		// The wait may have been cancelled just as the lock was granted:
		// closing the session releases it either way.
		discard(conn.Raw)
		_ = conn.Close()
		return nil, fmt.Errorf("waiting for the payout account's lock: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
		defer cancel()
		var released bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", id).Scan(&released); err != nil || !released {
			discard(conn.Raw)
		}
		_ = conn.Close()
	}, nil
}

// discard makes a connection's Close end its session instead of
// returning it to the pool.
func discard(raw func(func(any) error) error) {
	_ = raw(func(any) error { return driver.ErrBadConn })
}

// payoutLockID is key's advisory lock id: a hash, apart from
// migrationLockID's, in Postgres's bigint.
func payoutLockID(key string) int64 {
	sum := sha256.Sum256([]byte("memocart payout account\x00" + key))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}
