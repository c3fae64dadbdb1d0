package sqlstore

import "context"

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
