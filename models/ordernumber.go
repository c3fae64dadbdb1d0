package models

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Shape of an order number; see NewOrderNumber for why.
const (
	orderNumberLen = 11
	// orderNumberRandomDigits is the random part before the check digit.
	orderNumberRandomDigits = orderNumberLen - 1
	// maxOrderNumberBytes bounds the bytes NewOrderNumber reads. A healthy
	// source needs about 10; being rejected this often means the source
	// is broken (stuck at 0xFF, say), and erroring beats looping forever.
	maxOrderNumberBytes = 256
)

// errRandomnessExhausted reports a randomness source that keeps returning
// bytes NewOrderNumber has to reject.
var errRandomnessExhausted = errors.New("order number: randomness source returned too many out-of-range bytes")

// NewOrderNumber returns a new order number drawn from random
// (crypto/rand.Reader in production). Order numbers are what a person
// reads, types and puts in a payment memo, as opposed to the opaque order id
// (ord_...), so they are:
//
//   - digits only, to survive being read aloud, typed on a phone keypad and
//     carried in a Stellar text memo (28 bytes);
//   - random, not sequential, so they reveal nothing about order volume and
//     cannot be guessed from a neighbour's number;
//   - 11 digits: 10 random ones, the first never 0 (so the number keeps its
//     length wherever a leading zero would be dropped), then a Damm check
//     digit, so a typo in a memo is rejected instead of paying another
//     order (see ValidOrderNumber).
//
// Digits are drawn by rejection sampling, so all 9×10⁹ numbers are equally
// likely. That makes collisions rare, not impossible, and this package
// cannot see the numbers already issued: uniqueness is the database's job,
// through a unique constraint on the number, with the caller drawing a new
// number and retrying the insert when it is violated. A number is never
// reused, even after its order is cancelled, so an old receipt or a late
// payment can never point at someone else's order; if orders are ever
// purged, their numbers must stay reserved for that to hold.
func NewOrderNumber(random io.Reader) (string, error) {
	digits := make([]byte, 0, orderNumberLen)
	buf := make([]byte, 16)
	for read := 0; len(digits) < orderNumberRandomDigits; read += len(buf) {
		if read >= maxOrderNumberBytes {
			return "", errRandomnessExhausted
		}
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("order number: reading randomness: %w", err)
		}
		for _, b := range buf {
			if len(digits) == orderNumberRandomDigits {
				break
			}
			if len(digits) == 0 {
				// 252 = 28×9: bytes at or above it would favour 1–4.
				if b < 252 {
					digits = append(digits, '1'+b%9)
				}
				continue
			}
			// 250 = 25×10: bytes at or above it would favour 0–5.
			if b < 250 {
				digits = append(digits, '0'+b%10)
			}
		}
	}
	return string(append(digits, dammCheckDigit(digits))), nil
}

// ValidOrderNumber reports whether s is an order number in canonical form:
// 11 ASCII digits, the first not 0, with a correct Damm check digit. Order
// numbers double as payment memos, so a typo must never turn one order's
// number into another's: the Damm check digit rejects every single
// mistyped digit and every swap of two adjacent different digits, 09 ↔ 90
// included, the one transposition a Luhn check digit would let through.
func ValidOrderNumber(s string) bool {
	if len(s) != orderNumberLen || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return dammInterim([]byte(s)) == 0
}

// NormalizeOrderNumber returns the canonical order number in s, the way a
// person may have typed it in a payment memo or a support form: surrounding
// whitespace, and spaces or dashes between digit groups ("1234-5678-903",
// "1234 5678 903"). ok is false unless what remains is a valid order
// number; anything else in s (letters, '#') makes it invalid rather than
// being guessed around, so a memo matches an order only when it clearly
// names it.
func NormalizeOrderNumber(s string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r >= '0' && r <= '9':
			if b.Len() == orderNumberLen {
				return "", false // too long; stop before building more
			}
			b.WriteRune(r)
		case unicode.IsSpace(r) || isDash(r):
		default:
			return "", false
		}
	}
	n := b.String()
	if !ValidOrderNumber(n) {
		return "", false
	}
	return n, true
}

// isDash reports the hyphen-minus and the dashes that phones and word
// processors substitute for it (hyphen, non-breaking hyphen, figure dash,
// en dash, em dash, minus sign).
func isDash(r rune) bool {
	switch r {
	case '-', '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2212':
		return true
	}
	return false
}

// dammTable is the operation table of the order-10 totally anti-symmetric
// quasigroup from H. Michael Damm's 2004 thesis (the one Wikipedia's
// "Damm algorithm" article uses): row is the interim digit, column the next
// digit. Its diagonal is all zeros, and because the quasigroup is totally
// anti-symmetric, the check digit detects every single-digit substitution
// and every transposition of two adjacent digits.
var dammTable = [10][10]byte{
	{0, 3, 1, 7, 5, 9, 8, 6, 4, 2},
	{7, 0, 9, 2, 1, 5, 4, 8, 6, 3},
	{4, 2, 0, 6, 8, 7, 1, 3, 5, 9},
	{1, 7, 5, 0, 9, 8, 3, 4, 2, 6},
	{6, 1, 2, 3, 0, 4, 5, 9, 7, 8},
	{3, 6, 7, 4, 2, 0, 9, 5, 8, 1},
	{5, 8, 6, 9, 7, 2, 0, 1, 3, 4},
	{8, 9, 4, 5, 3, 6, 2, 0, 1, 7},
	{9, 4, 3, 8, 6, 1, 7, 2, 0, 5},
	{2, 5, 8, 1, 4, 3, 6, 7, 9, 0},
}

// dammCheckDigit returns the ASCII digit that makes payload followed by it
// pass the Damm check. payload must hold ASCII digits only.
func dammCheckDigit(payload []byte) byte {
	// The table's diagonal is zero, so appending the interim digit itself
	// brings the interim to 0.
	return '0' + dammInterim(payload)
}

// dammInterim runs the Damm algorithm over the ASCII digits in digits,
// left to right from an interim of 0, and returns the final interim digit:
// 0 exactly when digits ends in a correct check digit. digits must hold
// ASCII digits only.
func dammInterim(digits []byte) byte {
	var interim byte
	for _, c := range digits {
		interim = dammTable[interim][c-'0']
	}
	return interim
}
