package sqlstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Webhook endpoint secrets are stored so the service can sign with them,
// and refund claim tokens so the API can show a refund's claim_url again:
// the service needs the secret itself, not only a hash. With a key
// (SetSecretKey, from MEMOCART_WEBHOOK_SECRETS_KEY) each secret is sealed
// with AES-256-GCM under a fresh nonce, bound to the id of the row it
// belongs to (the endpoint's, the refund's), and stored as
// "v1:<base64 nonce+ciphertext>": a copy of the database alone reveals no
// secret, and a sealed secret moved to another row does not open. Without
// a key secrets are stored as "plain:<secret>" (development), and a
// deployment that adds a key later still reads them.

const (
	sealedPrefix = "v1:"
	plainPrefix  = "plain:"
)

// ErrSecretKeyNeeded means a sealed secret was read by a process without
// the key (or with another one).
var ErrSecretKeyNeeded = errors.New("secret is encrypted with a key this process does not have (MEMOCART_WEBHOOK_SECRETS_KEY)")

// SetSecretKey makes the store seal webhook secrets and refund claim
// tokens with key, 32 bytes.
// Call it before the store is used.
func (s *Store) SetSecretKey(key []byte) error {
	if len(key) != 32 {
		return fmt.Errorf("webhook secrets key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	s.secrets = aead
	return nil
}

// sealSecret returns the stored form of the secret of the row whose id is
// owner (a webhook endpoint, a refund's claim).
func (s *Store) sealSecret(owner, secret string) (string, error) {
	if s.secrets == nil {
		return plainPrefix + secret, nil
	}
	nonce := make([]byte, s.secrets.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := s.secrets.Seal(nonce, nonce, []byte(secret), []byte(owner))
	return sealedPrefix + base64.StdEncoding.EncodeToString(sealed), nil
}

// openSecret returns the secret of the row whose id is owner from its
// stored form.
func (s *Store) openSecret(owner, stored string) (string, error) {
	if rest, ok := strings.CutPrefix(stored, plainPrefix); ok {
		return rest, nil
	}
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return "", fmt.Errorf("%s: secret in an unknown form", owner)
	}
	if s.secrets == nil {
		return "", ErrSecretKeyNeeded
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(raw) < s.secrets.NonceSize() {
		return "", fmt.Errorf("%s: secret is not valid base64", owner)
	}
	n := s.secrets.NonceSize()
	plain, err := s.secrets.Open(nil, raw[:n], raw[n:], []byte(owner))
	if err != nil {
		return "", fmt.Errorf("%s: %w", owner, ErrSecretKeyNeeded)
	}
	return string(plain), nil
}
