package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// TestLockPayoutAccount: two stores on one database are two workers. On
// Postgres one holds the payout account's lock until it releases it or
// its session dies, and the other waits, within its context. SQLite
// serves one process, whose payer takes turns itself: the lock is free.
func TestLockPayoutAccount(t *testing.T) {
	const key = "Test SDF Network ; September 2015\x00GPAYOUT"
	for _, dialect := range sqlstoretest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := t.Context()
			dsn := sqlstoretest.DSN(t, dialect)
			a, b := openAt(t, dsn), openAt(t, dsn)
			tryLock := func(st *sqlstore.Store, key string, wait time.Duration) (func(), error) {
				ctx, cancel := context.WithTimeout(ctx, wait)
				defer cancel()
				return st.LockPayoutAccount(ctx, key)
			}

			unlockA, err := a.LockPayoutAccount(ctx, key)
			require.NoError(t, err)
			if dialect == sqlstore.DialectSQLite {
				unlockB, err := tryLock(b, key, time.Second)
				require.NoError(t, err)
				unlockB()
				unlockA()
				return
			}
			_, err = tryLock(b, key, 300*time.Millisecond)
			require.ErrorIs(t, err, context.DeadlineExceeded, "the other worker waits")
			other, err := tryLock(b, key+"2", time.Second)
			require.NoError(t, err, "another account's lock is another lock")
			other()

			unlockA()
			unlockB, err := tryLock(b, key, 5*time.Second)
			require.NoError(t, err, "released")
			unlockB()

			// A worker whose session dies (killed, cut off) frees the
			// account, and its late release harms nobody.
			unlockA, err = a.LockPayoutAccount(ctx, key)
			require.NoError(t, err)
			n, err := b.TerminatePayoutLockHolders(ctx, key)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			unlockB, err = tryLock(b, key, 5*time.Second)
			require.NoError(t, err, "released with the session")
			unlockA()
			_, err = tryLock(a, key, 300*time.Millisecond)
			require.ErrorIs(t, err, context.DeadlineExceeded, "still held by the other worker")
			unlockB()
		})
	}
}
