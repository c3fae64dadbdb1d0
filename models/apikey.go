package models

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
)

// Mode separates test traffic (sandbox providers, no real money) from live
// traffic. Every cart and order belongs to exactly one mode, and a key only
// ever sees objects of its own mode.
type Mode string

// Modes.
const (
	ModeTest Mode = "test"
	ModeLive Mode = "live"
)

// Modes are both modes.
var Modes = []Mode{ModeTest, ModeLive}

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeTest || m == ModeLive }

// Tier is the plan an API key is on; it sets the rate limit and which
// endpoints the key may call.
type Tier string

// Tiers.
const (
	TierFree       Tier = "free"
	TierPro        Tier = "pro"
	TierEnterprise Tier = "enterprise"
)

// Valid reports whether t is a known tier.
func (t Tier) Valid() bool { return t == TierFree || t == TierPro || t == TierEnterprise }

// Per-minute request budgets of the fixed tiers. Enterprise keys carry
// their own number.
const (
	FreePerMinute = 60
	ProPerMinute  = 600
	// MaxPerMinute is the largest budget a key may have: a thousand times
	// Pro, and far within what the rate limiter enforces exactly (package
	// api checks this). `memocart keys create` refuses more, and a stored
	// value above it (written by hand) is capped, never unlimited.
	MaxPerMinute = 600_000
)

// DefaultKeyPrefix is the service-specific word keys start with.
const DefaultKeyPrefix = "mc"

// Account owns API keys, carts and orders. Data never crosses accounts.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// APIKey is a stored key. The secret itself is never stored: only its hash,
// plus a display prefix and the last four characters so operators can tell
// keys apart.
type APIKey struct {
	ID          string
	AccountID   string
	AccountName string
	Mode        Mode
	Tier        Tier
	// PerMinute is the enterprise key's own budget; ignored for other tiers.
	PerMinute     int
	DisplayPrefix string
	Last4         string
	CreatedAt     time.Time
	RevokedAt     *time.Time
}

// RateLimit returns the key's per-minute request budget.
func (k APIKey) RateLimit() int {
	switch k.Tier {
	case TierPro:
		return ProPerMinute
	case TierEnterprise:
		if k.PerMinute > 0 {
			return min(k.PerMinute, MaxPerMinute)
		}
		return ProPerMinute
	default:
		return FreePerMinute
	}
}

// keySecretLen is the length of the random part of generated keys: 32
// base62 characters carry about 190 bits, so keys cannot be guessed and a
// plain SHA-256 (no salt, no slow hash) is a safe lookup hash.
const keySecretLen = 32

// minKeySecretLen is the shortest random part accepted, e.g. for a fixed
// dev key supplied through the environment.
const minKeySecretLen = 16

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewAPIKeySecret returns a new key "<prefix>_<mode>_<32 base62 chars>"
// drawing randomness from random (crypto/rand.Reader in production).
func NewAPIKeySecret(prefix string, mode Mode, random io.Reader) (string, error) {
	s, err := randomString(random, keySecretLen)
	if err != nil {
		return "", err
	}
	return prefix + "_" + string(mode) + "_" + s, nil
}

// ParseAPIKey checks that raw has the form "<prefix>_test_<secret>" or
// "<prefix>_live_<secret>" with a secret of at least 16 letters or digits,
// and returns its mode.
func ParseAPIKey(prefix, raw string) (Mode, error) {
	rest, ok := strings.CutPrefix(raw, prefix+"_")
	if !ok {
		return "", ErrInvalidAPIKey
	}
	modeStr, secret, ok := strings.Cut(rest, "_")
	mode := Mode(modeStr)
	if !ok || !mode.Valid() || len(secret) < minKeySecretLen || len(secret) > 128 {
		return "", ErrInvalidAPIKey
	}
	for _, r := range secret {
		if !strings.ContainsRune(base62, r) {
			return "", ErrInvalidAPIKey
		}
	}
	return mode, nil
}

// HashAPIKey returns the hex SHA-256 of a key, the only form stored.
func HashAPIKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// APIKeyDisplay returns the non-secret parts of a key shown to operators:
// the prefix and mode plus four characters, and the last four characters.
func APIKeyDisplay(raw string) (displayPrefix, last4 string) {
	i := strings.LastIndex(raw, "_")
	end := min(i+5, len(raw))
	return raw[:end], raw[max(len(raw)-4, 0):]
}

// NewID returns an identifier "<prefix>_<24 base62 chars>". The prefix tells
// a human what kind of object an id names (crt_, ord_, key_, acct_).
func NewID(prefix string, random io.Reader) (string, error) {
	s, err := randomString(random, 24)
	if err != nil {
		return "", err
	}
	return prefix + "_" + s, nil
}

// IDFrom is the id with this prefix that seed names: NewID's shape, from
// a deterministic stream of seed, so the same seed always names the same
// thing (a refund by its key, a test payment by its request).
func IDFrom(prefix, seed string) string {
	id, _ := NewID(prefix, &seedStream{seed: sha256.Sum256([]byte(seed))})
	return id // seedStream never fails
}

// seedStream is an endless deterministic byte stream: SHA-256 of a seed
// and a counter, block after block.
type seedStream struct {
	seed [sha256.Size]byte
	n    uint64
	buf  []byte
}

func (k *seedStream) Read(p []byte) (int, error) {
	for len(k.buf) < len(p) {
		var block [sha256.Size + 8]byte
		copy(block[:], k.seed[:])
		binary.BigEndian.PutUint64(block[sha256.Size:], k.n)
		k.n++
		sum := sha256.Sum256(block[:])
		k.buf = append(k.buf, sum[:]...)
	}
	n := copy(p, k.buf)
	k.buf = k.buf[n:]
	return n, nil
}

// ValidID reports whether s has the shape NewID gives ids with this
// prefix. An id of another shape names nothing, so it can be answered
// "not found" without asking the database (and never reaches a driver
// that would refuse its bytes).
func ValidID(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"_")
	if !ok || len(rest) != 24 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// randomString draws n base62 characters without modulo bias.
func randomString(random io.Reader, n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("reading randomness: %w", err)
		}
		for _, b := range buf {
			// 248 = 4*62: bytes at or above it would bias the result.
			if b < 248 && len(out) < n {
				out = append(out, base62[int(b)%62])
			}
		}
	}
	return string(out), nil
}
