package horizontest

import (
	"crypto/sha256"

	"github.com/memocart/memocart/models"
)

// AccountID returns a valid Stellar account id (a "G..." strkey with a
// correct checksum) derived from name, so tests get distinct, stable,
// well-formed addresses without key material.
func AccountID(name string) string {
	return models.StellarAccountID(sha256.Sum256([]byte("horizontest account " + name)))
}
