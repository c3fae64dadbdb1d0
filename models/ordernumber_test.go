package models

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	mrand "math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seededReader is a deterministic randomness source, so failures reproduce.
func seededReader(seed byte) io.Reader {
	var s [32]byte
	s[0] = seed
	return mrand.NewChaCha8(s)
}

func TestNewOrderNumberFromKnownBytes(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{
			// 0 → first digit 1 (1 + 0 mod 9), then one digit per byte.
			name:  "one digit per byte",
			bytes: []byte{0, 2, 3, 4, 5, 6, 7, 8, 9, 0},
			want:  "12345678906",
		},
		{
			// 252..255 would bias the first digit, 250..255 the others:
			// they are skipped, and the digits come from the bytes after.
			name:  "out-of-range bytes skipped",
			bytes: []byte{255, 253, 252, 0, 250, 255, 2, 3, 4, 5, 6, 7, 8, 9, 0},
			want:  "12345678906",
		},
		{
			name:  "highest accepted bytes",
			bytes: []byte{251, 249, 249, 249, 249, 249, 249, 249, 249, 249},
			want:  "99999999992",
		},
		{
			name:  "reduction modulo 9 and 10",
			bytes: []byte{9, 10, 20, 30, 40, 50, 60, 70, 80, 90},
			want:  "10000000003",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Pad to a whole read; padding bytes must not be used.
			src := append(append([]byte{}, tc.bytes...), bytes.Repeat([]byte{7}, 32)...)
			got, err := NewOrderNumber(bytes.NewReader(src))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.True(t, ValidOrderNumber(got))
		})
	}
}

func TestNewOrderNumberUnbiasedDigits(t *testing.T) {
	// Feed every byte value as the first draw, followed by zeros. An
	// unbiased draw maps 0..251 onto 1..9 exactly 28 times each and skips
	// 252..255; a plain b%9 would give 1..4 one extra hit each.
	first := map[byte]int{}
	for b := range 256 {
		src := append([]byte{byte(b)}, make([]byte, 31)...)
		n, err := NewOrderNumber(bytes.NewReader(src))
		require.NoError(t, err)
		if b >= 252 {
			assert.Equal(t, "10000000003", n, "byte %d must be skipped", b)
			continue
		}
		first[n[0]]++
	}
	for d := byte('1'); d <= '9'; d++ {
		assert.Equal(t, 28, first[d], "first digit %c", d)
	}

	// The same for a later digit: 0..249 onto 0..9, 25 times each.
	later := map[byte]int{}
	for b := range 256 {
		src := append([]byte{0, byte(b)}, make([]byte, 30)...)
		n, err := NewOrderNumber(bytes.NewReader(src))
		require.NoError(t, err)
		if b >= 250 {
			assert.Equal(t, "10000000003", n, "byte %d must be skipped", b)
			continue
		}
		later[n[1]]++
	}
	for d := byte('0'); d <= '9'; d++ {
		assert.Equal(t, 25, later[d], "second digit %c", d)
	}
}

func TestNewOrderNumberRandom(t *testing.T) {
	seen := map[string]bool{}
	var firstDigits [10]int
	for range 2000 {
		n, err := NewOrderNumber(rand.Reader)
		require.NoError(t, err)
		require.Len(t, n, 11)
		require.True(t, ValidOrderNumber(n), n)
		firstDigits[n[0]-'0']++
		seen[n] = true
	}
	assert.Zero(t, firstDigits[0], "first digit is never 0")
	for d := 1; d <= 9; d++ {
		// Expected 222 each; 100 is far below any plausible draw.
		assert.Greater(t, firstDigits[d], 100, "first digit %d", d)
	}
	// 2000 draws from 9×10⁹ collide with probability about 2×10⁻⁴.
	assert.Len(t, seen, 2000, "numbers should not repeat")
}

func TestNewOrderNumberBadSource(t *testing.T) {
	t.Run("stuck at 0xFF", func(t *testing.T) {
		_, err := NewOrderNumber(bytes.NewReader(bytes.Repeat([]byte{0xFF}, 4096)))
		assert.ErrorIs(t, err, errRandomnessExhausted)
	})
	t.Run("empty", func(t *testing.T) {
		_, err := NewOrderNumber(bytes.NewReader(nil))
		assert.ErrorIs(t, err, io.EOF)
	})
	t.Run("short", func(t *testing.T) {
		_, err := NewOrderNumber(bytes.NewReader([]byte{1, 2, 3}))
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})
	t.Run("failing", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := NewOrderNumber(failingReader{boom})
		assert.ErrorIs(t, err, boom)
	})
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestDammCheckDigit(t *testing.T) {
	tests := []struct {
		payload string
		want    byte
	}{
		{"572", '4'}, // the textbook example: 5724 is valid
		{"", '0'},
		{"0", '0'},
		{"1234567890", '6'},
		{"1000000000", '3'},
		{"9999999999", '2'},
	}
	for _, tc := range tests {
		t.Run(tc.payload, func(t *testing.T) {
			got := dammCheckDigit([]byte(tc.payload))
			assert.Equal(t, string(tc.want), string(got))
			assert.Zero(t, dammInterim([]byte(tc.payload+string(got))), "payload+check must verify")
		})
	}
	assert.Zero(t, dammInterim([]byte("5724")), "5724 is valid")
	for d := byte('0'); d <= '9'; d++ {
		if d != '4' {
			assert.NotZero(t, dammInterim([]byte{'5', '7', '2', d}), "572%c is invalid", d)
		}
	}
}

// TestDammTable checks the properties the error detection rests on, so a
// mistyped table entry cannot go unnoticed: every row and column is a
// permutation of 0–9 (a quasigroup, hence every single-digit substitution
// is caught), the diagonal is zero, and the quasigroup is weakly totally
// anti-symmetric, (x∗a)∗b ≠ (x∗b)∗a for a ≠ b (hence every adjacent
// transposition is caught).
func TestDammTable(t *testing.T) {
	for i := range 10 {
		var row, col [10]bool
		for j := range 10 {
			row[dammTable[i][j]] = true
			col[dammTable[j][i]] = true
		}
		assert.Equal(t, [10]bool{true, true, true, true, true, true, true, true, true, true}, row, "row %d", i)
		assert.Equal(t, [10]bool{true, true, true, true, true, true, true, true, true, true}, col, "column %d", i)
		assert.Zero(t, dammTable[i][i], "diagonal at %d", i)
	}
	for x := range 10 {
		for a := range 10 {
			for b := range 10 {
				if a == b {
					continue
				}
				assert.NotEqual(t, dammTable[dammTable[x][a]][b], dammTable[dammTable[x][b]][a],
					"interim %d, digits %d%d", x, a, b)
			}
		}
	}
}

func TestValidOrderNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"12345678906", true},
		{"10000000003", true},
		{"99999999992", true},
		{"12345678907", false}, // wrong check digit
		{"12345678903", false}, // the Luhn check digit, not the Damm one
		{"79927398713", false}, // the textbook Luhn example is not Damm-valid
		{"12345678096", false}, // 90 → 09 swap, which Luhn would miss
		{"01234567894", false}, // Damm-valid, but never issued: leading 0
		{"1234567890", false},
		{"123456789061", false},
		{"", false},
		{"1234567890a", false},
		{"1234-5678-906", false}, // canonical form only; see NormalizeOrderNumber
		{" 12345678906", false},
		{"１２３４５６７８９０６", false}, // full-width digits
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, ValidOrderNumber(tc.in))
		})
	}
	// The leading-zero case above must fail for the leading zero alone.
	assert.Zero(t, dammInterim([]byte("01234567894")))
}

// sampleOrderNumbers returns generated numbers plus crafted ones that hold
// every adjacent digit pair, including 09 and 90, the pair Luhn cannot tell
// apart.
func sampleOrderNumbers(t *testing.T) []string {
	t.Helper()
	var out []string
	r := seededReader(1)
	for range 500 {
		n, err := NewOrderNumber(r)
		require.NoError(t, err)
		out = append(out, n)
	}
	for a := range 10 {
		for b := range 10 {
			// Payload "1<a><b><a><b>...": the pair appears at several
			// positions, and next to the check digit.
			p := []byte{'1'}
			for len(p) < 10 {
				p = append(p, byte('0'+a), byte('0'+b))
			}
			p = p[:10]
			n := string(append(p, dammCheckDigit(p)))
			require.True(t, ValidOrderNumber(n), n)
			out = append(out, n)
		}
	}
	return out
}

func TestOrderNumberCatchesEverySingleDigitTypo(t *testing.T) {
	for _, n := range sampleOrderNumbers(t) {
		for i := range len(n) {
			for d := byte('0'); d <= '9'; d++ {
				if d == n[i] {
					continue
				}
				typo := n[:i] + string(d) + n[i+1:]
				assert.False(t, ValidOrderNumber(typo), "%s → %s", n, typo)
			}
		}
	}
}

func TestOrderNumberCatchesAdjacentSwaps(t *testing.T) {
	zeroNine, leadingZero := 0, 0
	for _, n := range sampleOrderNumbers(t) {
		for i := range len(n) - 1 {
			a, b := n[i], n[i+1]
			if a == b {
				continue // not a change
			}
			swapped := n[:i] + string(b) + string(a) + n[i+2:]
			if i == 0 && b == '0' {
				// Never issued anyway, whatever the check digit says.
				leadingZero++
			}
			if a == '0' && b == '9' || a == '9' && b == '0' {
				zeroNine++
			}
			assert.False(t, ValidOrderNumber(swapped), "%s → %s", n, swapped)
		}
	}
	assert.Positive(t, zeroNine, "the sample must exercise the 09/90 swap Luhn misses")
	assert.Positive(t, leadingZero, "the sample must exercise a swap that puts 0 first")
}

func TestNormalizeOrderNumber(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{"canonical", "12345678906", "12345678906", true},
		{"surrounding spaces", "  12345678906\n", "12345678906", true},
		{"dashes", "1234-5678-906", "12345678906", true},
		{"spaces", "1234 5678 906", "12345678906", true},
		{"en dashes", "1234–5678–906", "12345678906", true},
		{"mixed", " 123 456-789 06 ", "12345678906", true},
		{"every digit spaced", "1 2 3 4 5 6 7 8 9 0 6", "12345678906", true},
		{"typo", "1234-5678-907", "", false},
		{"swap", "2134-5678-906", "", false},
		{"09 swap", "1234-5678-096", "", false},
		{"luhn number", "1234-5678-903", "", false},
		{"hash prefix", "#12345678906", "", false},
		{"words", "Order 12345678906", "", false},
		{"too long", "1234-5678-9061", "", false},
		{"too short", "1234-5678-90", "", false},
		{"dashes only", "---", "", false},
		{"empty", "", "", false},
		{"full-width digits", "１２３４５６７８９０６", "", false},
		{"very long digits", "12345678906" + string(bytes.Repeat([]byte("0"), 1000)), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NormalizeOrderNumber(tc.in)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNormalizeOrderNumberRoundTrip(t *testing.T) {
	// Any generated number, grouped the way a receipt might print it,
	// normalises back to itself.
	for _, n := range sampleOrderNumbers(t)[:50] {
		grouped := n[:4] + "-" + n[4:8] + "-" + n[8:]
		got, ok := NormalizeOrderNumber(grouped)
		require.True(t, ok, grouped)
		assert.Equal(t, n, got)
	}
}
