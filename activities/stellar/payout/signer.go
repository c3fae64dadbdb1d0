package payout

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// Signer signs payout transactions for the payout account. It is the only
// holder of the secret key, so a KMS or a remote signer can implement it
// without the key ever reaching the service.
type Signer interface {
	// Address is the payout account (G…) whose transactions it signs.
	Address() string
	// Sign returns tx signed for the network with that passphrase. It
	// must not change the transaction: the Payer checks that the hash is
	// unchanged.
	Sign(tx *txnbuild.Transaction, passphrase string) (*txnbuild.Transaction, error)
	// SignFeeBump signs a fee bump the payout account pays, likewise.
	SignFeeBump(tx *txnbuild.FeeBumpTransaction, passphrase string) (*txnbuild.FeeBumpTransaction, error)
}

// maxSeedFile bounds what NewFileSigner reads: a seed is 56 characters.
const maxSeedFile = 4 << 10

// FileSigner signs with a secret seed (S…) read from a file, as mounted
// from a secret store. It never shows the seed: every fmt verb and slog
// print only its address, and JSON sees no exported field.
type FileSigner struct {
	kp *keypair.Full
}

// NewFileSigner reads the secret seed in the file at path (surrounding
// white space is ignored). It refuses a file any user of the machine may
// read or write, since the key moves the payout account's money; group
// access is allowed, which is how Kubernetes mounts secrets for an
// fsGroup. Errors name the file, never its content.
func NewFileSigner(path string) (*FileSigner, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("payout seed file: %w", err)
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("payout seed file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("payout seed file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("payout seed file %s is open to every user (mode %04o): chmod o-rwx it (in Kubernetes, defaultMode 0400 or 0440)",
			path, info.Mode().Perm())
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxSeedFile+1))
	defer clear(buf)
	if err != nil {
		return nil, fmt.Errorf("payout seed file: %w", err)
	}
	if len(buf) > maxSeedFile {
		return nil, fmt.Errorf("payout seed file %s is too large to hold a secret seed", path)
	}
	seed := strings.TrimSpace(string(buf))
	switch {
	case seed == "":
		return nil, fmt.Errorf("payout seed file %s is empty", path)
	case seed[0] == 'G' || seed[0] == 'M':
		return nil, fmt.Errorf("payout seed file %s holds an account id, not a secret seed (S…)", path)
	}
	kp, err := keypair.ParseFull(seed)
	if err != nil {
		// The parser's error is not wrapped: it may quote its input.
		return nil, fmt.Errorf("payout seed file %s does not hold a valid Stellar secret seed (S…, 56 characters)", path)
	}
	return &FileSigner{kp: kp}, nil
}

// errNoKey is a FileSigner that was not made by NewFileSigner.
var errNoKey = errors.New("payout: FileSigner has no key: make it with NewFileSigner")

// Address returns the payout account the seed controls.
func (s FileSigner) Address() string {
	if s.kp == nil {
		return ""
	}
	return s.kp.Address()
}

// Sign signs tx with the seed.
func (s FileSigner) Sign(tx *txnbuild.Transaction, passphrase string) (*txnbuild.Transaction, error) {
	if s.kp == nil {
		return nil, errNoKey
	}
	return tx.Sign(passphrase, s.kp)
}

// SignFeeBump signs tx with the seed.
func (s FileSigner) SignFeeBump(tx *txnbuild.FeeBumpTransaction, passphrase string) (*txnbuild.FeeBumpTransaction, error) {
	if s.kp == nil {
		return nil, errNoKey
	}
	return tx.Sign(passphrase, s.kp)
}

// String shows the signer by its address only.
func (s FileSigner) String() string { return "payout.FileSigner{" + s.Address() + "}" }

// GoString is String, so %#v shows no key either.
func (s FileSigner) GoString() string { return s.String() }

// Format prints String for every verb, so that no verb (%d, %x...) can
// reach the key through reflection.
func (s FileSigner) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue logs the address only.
func (s FileSigner) LogValue() slog.Value { return slog.StringValue(s.String()) }
