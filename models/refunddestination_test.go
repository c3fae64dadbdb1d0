package models

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strKey encodes payload under version with a correct checksum, to build
// addresses whose only fault is elsewhere (their version byte).
func strKey(version byte, payload []byte) string {
	raw := append([]byte{version}, payload...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16XModem(raw))
	return strKeyEncoding.EncodeToString(raw)
}

func TestValidateRefundAddress(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i * 7)
	}
	// flip changes the character at i to another base32 one.
	flip := func(s string, i int) string {
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	tests := []struct {
		name, addr string
		reason     string // a part of the error message; empty if valid
	}{
		// The SEP-23 account and the Go SDK's muxed address for it
		// (independent vectors: they also check the CRC).
		{"SEP-23 account", sepAccount, ""},
		{"muxed, SDK vector", sepMuxed, ""},
		{"pubnet USDC issuer", DefaultUSDCIssuer(StellarPubnet), ""},
		{"testnet USDC issuer", DefaultUSDCIssuer(StellarTestnet), ""},
		{"muxed, id 0", strKey(strKeyMuxedVersion, append(append([]byte{}, key...), 0, 0, 0, 0, 0, 0, 0, 0)), ""},

		{"empty", "", "required"},
		{"lower case", strings.ToLower(sepAccount), "upper case"},
		{"not base32", sepAccount[:10] + "1" + sepAccount[11:], "position 11"},
		{"space", " " + sepAccount, "position 1"},
		{"secret seed", "SAB5556L5AN5KSR5WF7UOEFDCIODEWEO7H2UR4S5R62DFTQOGLKOVZDY", "secret seed"},
		{"contract", "CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA", "account (G…) or muxed"},
		{"account, bad checksum (last character)", flip(sepAccount, 55), "checksum"},
		{"account, typo in the key", flip(sepAccount, 20), "checksum"},
		{"muxed, bad checksum", flip(sepMuxed, 30), "checksum"},
		{"account, too short", sepAccount[:55], "56 characters, not 55"},
		{"account, too long", sepAccount + "A", "56 characters, not 57"},
		{"muxed, too short", sepMuxed[:68], "69 characters, not 68"},
		{"muxed, too long", sepMuxed + "A", "69 characters, not 70"},
		// The spare bit of the 69th character set: decodes to the same
		// bytes with a valid checksum, but is a second spelling.
		{"muxed, non-canonical spare bit", sepMuxed[:68] + "L", "base32"},
		// Starts with G but the version byte's low bits are not an
		// ed25519 account's; the checksum is right.
		{"account, wrong version byte", strKey(strKeyAccountVersion|1, key), "version byte"},
		{"muxed, wrong version byte", strKey(strKeyMuxedVersion|2, append(append([]byte{}, key...), 1, 2, 3, 4, 5, 6, 7, 8)), "version byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRefundAddress(tc.addr)
			if tc.reason == "" {
				assert.NoError(t, err)
				return
			}
			e := requireModelError(t, err, CodeInvalidRefundDestination)
			assert.Equal(t, "refund_destination.address", e.Field)
			assert.Contains(t, e.Message, tc.reason)
			if len(tc.addr) > 8 {
				assert.NotContains(t, e.Message, tc.addr, "the address is not repeated")
			}
		})
	}
	// The wrong-version cases really do start with the right letter.
	assert.Equal(t, byte('G'), strKey(strKeyAccountVersion|1, key)[0])
	assert.Equal(t, byte('M'), strKey(strKeyMuxedVersion|2, append(append([]byte{}, key...), 1, 2, 3, 4, 5, 6, 7, 8))[0])
}

func TestValidateRefundMemo(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32)))
	tests := []struct {
		memoType, memo string
		field          string // the field at fault; empty if valid
	}{
		{"", "", ""},
		{"none", "", ""},
		{"", "123", "refund_destination.memo_type"},
		{"none", "123", "refund_destination.memo_type"},
		{"MEMO_TEXT", "hi", "refund_destination.memo_type"},

		{"text", "a", ""},
		{"text", strings.Repeat("a", 28), ""},
		{"text", strings.Repeat("a", 29), "refund_destination.memo"},
		{"text", strings.Repeat("é", 14), ""},                        // 28 bytes
		{"text", strings.Repeat("é", 15), "refund_destination.memo"}, // 15 characters, 30 bytes
		{"text", "", "refund_destination.memo"},
		{"text", "\xff\xfe", "refund_destination.memo"},

		{"id", "0", ""},
		{"id", "18446744073709551615", ""},
		{"id", "18446744073709551616", "refund_destination.memo"},
		{"id", "-1", "refund_destination.memo"},
		{"id", "+1", "refund_destination.memo"},
		{"id", "01", "refund_destination.memo"},
		{"id", "1.5", "refund_destination.memo"},
		{"id", " 1", "refund_destination.memo"},
		{"id", "", "refund_destination.memo"},

		{"hash", hash, ""},
		{"hash", strings.ToUpper(hash), ""},
		{"hash", b64, ""},
		{"return", hash, ""},
		{"return", b64, ""},
		{"hash", hash[:62], "refund_destination.memo"},
		{"hash", hash + "ab", "refund_destination.memo"},
		{"hash", strings.Repeat("zz", 32), "refund_destination.memo"},
		{"hash", base64.StdEncoding.EncodeToString(make([]byte, 31)), "refund_destination.memo"}, // 44 characters, 31 bytes
		{"hash", base64.RawStdEncoding.EncodeToString(make([]byte, 32)), "refund_destination.memo"},
		{"return", "", "refund_destination.memo"},
	}
	for _, tc := range tests {
		t.Run(tc.memoType+"/"+tc.memo, func(t *testing.T) {
			err := ValidateRefundMemo(tc.memoType, tc.memo)
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			e := requireModelError(t, err, CodeInvalidRefundDestination)
			assert.Equal(t, tc.field, e.Field)
		})
	}
}

func TestRefundMemoHash(t *testing.T) {
	want := [32]byte{}
	for i := range want {
		want[i] = byte(i)
	}
	for _, s := range []string{
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
		base64.StdEncoding.EncodeToString(want[:]),
	} {
		got, err := RefundMemoHash(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
}

func TestValidateRefundDestination(t *testing.T) {
	tests := []struct {
		name  string
		d     RefundDestination
		field string // empty if valid
	}{
		{"address", RefundDestination{Address: sepAccount}, ""},
		{"address with an exchange's id memo", RefundDestination{Address: sepAccount, MemoType: "id", Memo: "987654321"}, ""},
		{"muxed address with a text memo", RefundDestination{Address: sepMuxed, MemoType: "text", Memo: "deposit 42"}, ""},
		{"to the sender", RefundDestination{ToSender: true}, ""},
		// A memo is the receiver's to ask for: to_sender names no account
		// whose owner asked for one, so it is refused, not stored beside.
		{"to the sender with a memo", RefundDestination{ToSender: true, MemoType: "text", Memo: "x"}, "refund_destination.memo_type"},
		{"to the sender with a memo type", RefundDestination{ToSender: true, MemoType: "id"}, "refund_destination.memo_type"},
		{"to the sender with a memo, no type", RefundDestination{ToSender: true, Memo: "x"}, "refund_destination.memo"},
		{"to the sender, memo type none", RefundDestination{ToSender: true, MemoType: "none"}, ""},
		{"neither", RefundDestination{}, "refund_destination.address"},
		{"both", RefundDestination{Address: sepAccount, ToSender: true}, "refund_destination.address"},
		{"bad address", RefundDestination{Address: sepAccount[:55] + "A"}, "refund_destination.address"},
		{"memo too long", RefundDestination{Address: sepAccount, MemoType: "text", Memo: strings.Repeat("m", 29)}, "refund_destination.memo"},
		{"to the sender, bad memo", RefundDestination{ToSender: true, MemoType: "id", Memo: "x"}, "refund_destination.memo_type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRefundDestination(tc.d)
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			e := requireModelError(t, err, CodeInvalidRefundDestination)
			assert.Equal(t, tc.field, e.Field)
		})
	}
}

func TestRefuseServiceAccount(t *testing.T) {
	other := StellarAccountID([32]byte{1, 2, 3})
	own := []string{other, sepAccount}
	for _, addr := range []string{sepAccount, sepMuxed} {
		err := RefuseServiceAccount(addr, own)
		var e *Error
		require.ErrorAs(t, err, &e, addr)
		assert.Equal(t, CodeInvalidRefundDestination, e.Code)
		assert.Equal(t, "refund_destination.address", e.Field)
		assert.NotContains(t, e.Message, addr)
	}
	assert.NoError(t, RefuseServiceAccount(DefaultUSDCIssuer(StellarPubnet), own))
	assert.NoError(t, RefuseServiceAccount(sepMuxed, nil))
	assert.NoError(t, RefuseServiceAccount("", own))
	assert.Equal(t, sepAccount, RefundAccount(sepMuxed))
	assert.Equal(t, sepAccount, RefundAccount(sepAccount))
	assert.Empty(t, RefundAccount("MBAD"))
}
