package horizontest

import (
	"crypto/sha256"
	"fmt"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/models"
)

// AccountID returns a valid Stellar account id (a "G..." strkey with a
// correct checksum) derived from name, so tests get distinct, stable,
// well-formed addresses without key material.
func AccountID(name string) string {
	return models.StellarAccountID(sha256.Sum256([]byte("horizontest account " + name)))
}

// MuxedAccountID returns the muxed account (an "M..." strkey, SEP-23) of
// account g with id, as a test's destination. g must be a valid G...
// account id: anything else is the test's bug, and panics.
func MuxedAccountID(g string, id uint64) string {
	plain, err := xdr.AddressToMuxedAccount(g)
	if err != nil {
		panic(fmt.Sprintf("horizontest: muxing %q: %v", g, err))
	}
	m, err := xdr.NewMuxedAccount(xdr.CryptoKeyTypeKeyTypeMuxedEd25519,
		xdr.MuxedAccountMed25519{Id: xdr.Uint64(id), Ed25519: plain.MustEd25519()})
	if err != nil {
		panic(fmt.Sprintf("horizontest: muxing %q: %v", g, err))
	}
	return m.Address()
}
