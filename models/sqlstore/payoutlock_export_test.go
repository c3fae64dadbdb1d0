package sqlstore

import "context"

// TerminatePayoutLockHolders ends the Postgres sessions holding key's
// payout account lock in this database, as a worker's death or a cut
// connection would, and returns how many it ended.
func (s *Store) TerminatePayoutLockHolders(ctx context.Context, key string) (int, error) {
	id := uint64(payoutLockID(key))
	var n int
	err := s.db.WithContext(ctx).Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = ? AND objid = ? AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		int64(uint32(id>>32)), int64(uint32(id))).Scan(&n).Error
	return n, err
}
