package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/memocart/memocart/models"
)

type accountRow struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

func (accountRow) TableName() string { return "accounts" }

type apiKeyRow struct {
	ID            string
	AccountID     string
	KeyHash       string
	Mode          string
	Tier          string
	PerMinute     int
	DisplayPrefix string
	Last4         string
	CreatedAt     time.Time
	RevokedAt     *time.Time
	// Filled by the join with accounts on reads.
	AccountName string `gorm:"->;-:migration"`
}

func (apiKeyRow) TableName() string { return "api_keys" }

func (r apiKeyRow) toModel() models.APIKey {
	k := models.APIKey{
		ID: r.ID, AccountID: r.AccountID, AccountName: r.AccountName,
		Mode: models.Mode(r.Mode), Tier: models.Tier(r.Tier), PerMinute: r.PerMinute,
		DisplayPrefix: r.DisplayPrefix, Last4: r.Last4, CreatedAt: utc(r.CreatedAt),
	}
	if r.RevokedAt != nil {
		t := utc(*r.RevokedAt)
		k.RevokedAt = &t
	}
	return k
}

// EnsureAccount returns the account with the given name, creating it if it
// does not exist. Concurrent callers get the same account.
func (s *Store) EnsureAccount(ctx context.Context, name string, now time.Time) (models.Account, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return models.Account{}, errors.New("account name is empty")
	}
	db := s.db.WithContext(ctx)
	row := accountRow{ID: newID("acct"), Name: name, CreatedAt: now.UTC()}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return models.Account{}, fmt.Errorf("creating account: %w", err)
	}
	var got accountRow
	if err := db.Where("name = ?", name).Take(&got).Error; err != nil {
		return models.Account{}, fmt.Errorf("reading account: %w", err)
	}
	return models.Account{ID: got.ID, Name: got.Name, CreatedAt: utc(got.CreatedAt)}, nil
}

// NewAPIKey describes a key to store: its secret (hashed here, never
// stored) and its attributes.
type NewAPIKey struct {
	Secret    string
	AccountID string
	Mode      models.Mode
	Tier      models.Tier
	PerMinute int
	CreatedAt time.Time
}

// CreateAPIKey stores the hash and display parts of a new key.
// Storing the same secret twice is a no-op returning the existing key, so
// a fixed dev key survives restarts.
func (s *Store) CreateAPIKey(ctx context.Context, k NewAPIKey) (models.APIKey, error) {
	if !k.Mode.Valid() || !k.Tier.Valid() {
		return models.APIKey{}, fmt.Errorf("invalid mode %q or tier %q", k.Mode, k.Tier)
	}
	display, last4 := models.APIKeyDisplay(k.Secret)
	row := apiKeyRow{
		ID: newID("key"), AccountID: k.AccountID, KeyHash: models.HashAPIKey(k.Secret),
		Mode: string(k.Mode), Tier: string(k.Tier), PerMinute: k.PerMinute,
		DisplayPrefix: display, Last4: last4, CreatedAt: k.CreatedAt.UTC(),
	}
	err := s.db.WithContext(ctx).Omit("AccountName").
		Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "key_hash"}}, DoNothing: true}).
		Create(&row).Error
	if err != nil {
		return models.APIKey{}, fmt.Errorf("storing api key: %w", err)
	}
	return s.apiKeyWhere(ctx, "k.key_hash = ?", row.KeyHash)
}

// AuthenticateAPIKey returns the live (not revoked) key whose secret
// hashes to hash, or models.ErrInvalidAPIKey.
func (s *Store) AuthenticateAPIKey(ctx context.Context, hash string) (models.APIKey, error) {
	k, err := s.apiKeyWhere(ctx, "k.key_hash = ?", hash)
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && k.RevokedAt != nil) {
		return models.APIKey{}, models.ErrInvalidAPIKey
	}
	return k, err
}

func (s *Store) apiKeyWhere(ctx context.Context, where string, args ...any) (models.APIKey, error) {
	var row apiKeyRow
	err := s.db.WithContext(ctx).Table("api_keys AS k").
		Select("k.*, a.name AS account_name").
		Joins("JOIN accounts a ON a.id = k.account_id").
		Where(where, args...).Take(&row).Error
	if err != nil {
		return models.APIKey{}, err
	}
	return row.toModel(), nil
}

// ListAPIKeys lists keys, newest first, of one account or of all accounts
// when accountName is empty.
func (s *Store) ListAPIKeys(ctx context.Context, accountName string) ([]models.APIKey, error) {
	q := s.db.WithContext(ctx).Table("api_keys AS k").
		Select("k.*, a.name AS account_name").
		Joins("JOIN accounts a ON a.id = k.account_id").
		Order("k.created_at DESC, k.id")
	if accountName != "" {
		q = q.Where("a.name = ?", accountName)
	}
	var rows []apiKeyRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("listing api keys: %w", err)
	}
	out := make([]models.APIKey, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// APIKeyByID returns a key, revoked or not, by its id.
func (s *Store) APIKeyByID(ctx context.Context, id string) (models.APIKey, error) {
	return s.apiKeyFound(s.apiKeyWhere(ctx, "k.id = ?", id))
}

// APIKeyByHash returns a key, revoked or not, by the hash of its secret
// (models.HashAPIKey): how an operator holding only the key finds its id.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (models.APIKey, error) {
	return s.apiKeyFound(s.apiKeyWhere(ctx, "k.key_hash = ?", hash))
}

func (s *Store) apiKeyFound(k models.APIKey, err error) (models.APIKey, error) {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.APIKey{}, ErrKeyNotFound
	}
	return k, err
}

// ErrKeyNotFound is returned by the key lookups and RevokeAPIKey when no key matches.
var ErrKeyNotFound = errors.New("no such api key")

// RevokeAPIKey revokes the key with the given id. Revoking twice keeps the
// first revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, now time.Time) (models.APIKey, error) {
	db := s.db.WithContext(ctx)
	res := db.Model(&apiKeyRow{}).Where("id = ? AND revoked_at IS NULL", id).Update("revoked_at", now.UTC())
	if res.Error != nil {
		return models.APIKey{}, fmt.Errorf("revoking api key: %w", res.Error)
	}
	k, err := s.apiKeyWhere(ctx, "k.id = ?", id)
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.APIKey{}, ErrKeyNotFound
	}
	return k, err
}
