package models

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Request fields the destination errors name, as in the API's
// refund_destination object.
const (
	refundDestinationField = "refund_destination"
	refundAddressField     = refundDestinationField + ".address"
	refundMemoTypeField    = refundDestinationField + ".memo_type"
	refundMemoField        = refundDestinationField + ".memo"
)

// MaxRefundMemoText is the most bytes a Stellar text memo holds.
const MaxRefundMemoText = 28

// StrKey layout of a muxed account (M…): version byte, 32-byte ed25519
// key, 8-byte id (big-endian), 2-byte checksum. 43 bytes take 69 base32
// characters with one spare bit, which must be zero.
const (
	strKeyMuxedVersion    = 12 << 3 // encodes to a leading 'M'
	strKeyMuxedLen        = 69
	strKeyMuxedDecodedLen = 1 + 32 + 8 + 2
)

// badDestination is an invalid_refund_destination error naming the field
// at fault, with a reason a payer can act on. It never repeats the
// address or memo.
func badDestination(field, format string, args ...any) *Error {
	return FieldError(CodeInvalidRefundDestination, field, format, args...)
}

// ValidateRefundDestination checks what can be checked of d without the
// network: either an address or to_sender, not both; an address that is a
// StrKey account (G…) or muxed account (M…) with a correct version byte
// and checksum (ValidateRefundAddress); a memo that fits its type
// (ValidateRefundMemo), and none with to_sender, which names no account
// whose owner asked for one (a memo is the receiver's, an exchange's
// deposit memo). Whether the account exists and trusts the asset is
// Horizon's to say. Errors are invalid_refund_destination with the reason
// and the field.
func ValidateRefundDestination(d RefundDestination) error {
	if d.ToSender && d.Address == "" && (d.MemoType != "" && d.MemoType != "none" || d.Memo != "") {
		field := refundMemoTypeField
		if d.MemoType == "" || d.MemoType == "none" {
			field = refundMemoField
		}
		return badDestination(field, "to_sender takes no memo: give the address and memo the payer asked for instead")
	}
	return validateDestinationShape(d)
}

// validateDestinationShape is ValidateRefundDestination without its rule
// on to_sender's memo, which came later: SetRefundDestination, which
// Refund workflows run again when they replay destinations accepted
// before it, keeps to what they checked then.
func validateDestinationShape(d RefundDestination) error {
	switch {
	case d.ToSender && d.Address != "":
		return badDestination(refundAddressField, "Give an address or to_sender, not both")
	case d.ToSender:
	case d.Address == "":
		return badDestination(refundAddressField, "An address (or to_sender: true) is required")
	default:
		if err := ValidateRefundAddress(d.Address); err != nil {
			return err
		}
	}
	return ValidateRefundMemo(d.MemoType, d.Memo)
}

// ValidateRefundAddress checks that addr is a Stellar account a refund
// can be paid to: a G… account id (56 characters) or an M… muxed account
// (69 characters), upper-case unpadded base32 decoding to its version
// byte, key (and id) and a CRC16-XModem checksum over them, written in
// its one canonical spelling. Secret seeds are refused with a warning.
func ValidateRefundAddress(addr string) error {
	if addr == "" {
		return badDestination(refundAddressField, "An address is required")
	}
	for i := 0; i < len(addr); i++ {
		c := addr[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= '2' && c <= '7':
		case c >= 'a' && c <= 'z':
			return badDestination(refundAddressField, "The address must be in upper case")
		default:
			return badDestination(refundAddressField, "The address has a character that is not in a Stellar address (A-Z, 2-7) at position %d", i+1)
		}
	}
	var version byte
	var length, decoded int
	switch addr[0] {
	case 'G':
		version, length, decoded = strKeyAccountVersion, strKeyAccountLen, strKeyDecodedLen
	case 'M':
		version, length, decoded = strKeyMuxedVersion, strKeyMuxedLen, strKeyMuxedDecodedLen
	case 'S':
		return badDestination(refundAddressField, "This is a secret seed (S…), which must never be shared: give the public address (G…) and create a new account if the seed was exposed")
	default:
		return badDestination(refundAddressField, "The address must be a Stellar account (G…) or muxed account (M…)")
	}
	if len(addr) != length {
		return badDestination(refundAddressField, "A Stellar address starting with %c has %d characters, not %d", addr[0], length, len(addr))
	}
	raw, err := strKeyEncoding.DecodeString(addr)
	if err != nil || len(raw) != decoded || strKeyEncoding.EncodeToString(raw) != addr {
		// The round trip refuses a spelling with non-zero spare bits,
		// which would name the same account a second way.
		return badDestination(refundAddressField, "The address is not valid base32")
	}
	if raw[0] != version {
		return badDestination(refundAddressField, "The address has the wrong version byte for a %c… address", addr[0])
	}
	body, sum := raw[:decoded-2], raw[decoded-2:]
	if binary.LittleEndian.Uint16(sum) != crc16XModem(body) {
		return badDestination(refundAddressField, "The address checksum does not match: check it for a typo")
	}
	return nil
}

// ValidateRefundMemo checks that memo fits memoType, as Stellar encodes
// memos:
//   - "" or "none": no memo;
//   - "text": 1 to 28 bytes of UTF-8 (bytes, not characters);
//   - "id": an unsigned 64-bit integer in plain decimal, no sign, no
//     leading zeros;
//   - "hash" or "return": 32 bytes, written as 64 hex digits or as
//     standard padded base64 (44 characters, how Horizon shows them).
func ValidateRefundMemo(memoType, memo string) error {
	switch memoType {
	case "", "none":
		if memo != "" {
			return badDestination(refundMemoTypeField, "A memo needs its memo_type (text, id, hash or return)")
		}
	case "text":
		switch {
		case memo == "":
			return badDestination(refundMemoField, "A text memo must not be empty")
		case !utf8.ValidString(memo):
			return badDestination(refundMemoField, "A text memo must be valid UTF-8")
		case len(memo) > MaxRefundMemoText:
			return badDestination(refundMemoField, "A text memo holds at most %d bytes, this one has %d", MaxRefundMemoText, len(memo))
		}
	case "id":
		v, err := strconv.ParseUint(memo, 10, 64)
		if err != nil || strconv.FormatUint(v, 10) != memo {
			return badDestination(refundMemoField, "An id memo must be a whole number from 0 to 18446744073709551615, in plain digits")
		}
	case "hash", "return":
		if _, err := RefundMemoHash(memo); err != nil {
			return err
		}
	default:
		return badDestination(refundMemoTypeField, "memo_type must be text, id, hash or return")
	}
	return nil
}

// RefundMemoHash decodes a hash or return memo: 64 hex digits (either
// case) or standard padded base64, 32 bytes either way.
func RefundMemoHash(memo string) ([32]byte, error) {
	var out [32]byte
	var b []byte
	err := errNoSpelling
	switch len(memo) {
	case 64:
		b, err = hex.DecodeString(memo)
	case 44:
		b, err = base64.StdEncoding.Strict().DecodeString(memo)
	}
	if err != nil || len(b) != len(out) {
		return out, badDestination(refundMemoField, "A hash or return memo is 32 bytes: 64 hex digits or 44 characters of base64")
	}
	copy(out[:], b)
	return out, nil
}

// errNoSpelling is a hash memo of a length neither spelling has.
var errNoSpelling = errors.New("neither hex nor base64 of 32 bytes")

// RefundAccount returns the account (G…) that a payment to addr credits:
// addr itself, or for a muxed account (M…) the account it is a muxed
// form of. "" for an address ValidateRefundAddress refuses.
func RefundAccount(addr string) string {
	if ValidateRefundAddress(addr) != nil {
		return ""
	}
	if addr[0] == 'G' {
		return addr
	}
	raw, _ := strKeyEncoding.DecodeString(addr)
	var key [32]byte
	copy(key[:], raw[1:33])
	return StellarAccountID(key)
}

// RefuseServiceAccount refuses a destination address that is one of own,
// the service's own Stellar accounts (where payers pay, where refunds are
// paid from), or a muxed form of one: a refund paid to the receiving
// account comes back as a payment whose refund goes there again, a loop
// only the payout account's balance ends. The error is
// invalid_refund_destination naming the address field.
func RefuseServiceAccount(addr string, own []string) error {
	account := RefundAccount(addr)
	for _, o := range own {
		if account != "" && account == o {
			return badDestination(refundAddressField, "The destination is an account of this service, which a refund is never paid to: give the payer's own account")
		}
	}
	return nil
}
