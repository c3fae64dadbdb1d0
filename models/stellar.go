package models

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// StellarNetwork names the Stellar network a deployment watches and asks
// payers to pay on.
type StellarNetwork string

// The Stellar networks Memocart can run against.
const (
	StellarPubnet  StellarNetwork = "pubnet"
	StellarTestnet StellarNetwork = "testnet"
)

// Valid reports whether n is a network Memocart knows.
func (n StellarNetwork) Valid() bool {
	return n == StellarPubnet || n == StellarTestnet
}

// Passphrase returns the network passphrase that transactions on n are
// signed over, or "" for an unknown network. Wallets need it (see
// PayRequest.NetworkPassphrase) to avoid signing a testnet payment request
// for the public network, or the reverse.
func (n StellarNetwork) Passphrase() string {
	switch n {
	case StellarPubnet:
		return "Public Global Stellar Network ; September 2015"
	case StellarTestnet:
		return "Test SDF Network ; September 2015"
	}
	return ""
}

// DefaultUSDCIssuer returns the account that issues Circle's USDC on n, or
// "" for an unknown network. A Stellar asset is its code and its issuer
// together: anyone can issue an asset called USDC, so a payment counts as
// USDC only when its issuer is this one (or the one configured instead).
func DefaultUSDCIssuer(n StellarNetwork) string {
	switch n {
	case StellarPubnet:
		return "GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"
	case StellarTestnet:
		return "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
	}
	return ""
}

// StrKey layout of an account id: one version byte, a 32-byte ed25519
// public key, a 2-byte checksum, in unpadded base32.
const (
	strKeyAccountVersion = 6 << 3 // encodes to a leading 'G'
	strKeyAccountLen     = 56     // base32 characters: 35 bytes × 8 / 5
	strKeyDecodedLen     = 1 + 32 + 2
)

// strKeyEncoding is RFC 4648 base32 without padding. 56 characters carry
// exactly 35 bytes, with no spare trailing bits, so each key has one
// spelling.
var strKeyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ValidateStellarAccount checks that id is a Stellar account id (a "G..."
// StrKey) that funds can be sent to: 56 upper-case base32 characters
// decoding to the account version byte, a 32-byte public key and a correct
// CRC16-XModem checksum. It is meant for configuration, where a typo would
// send customers' payments to an account nobody controls, so the checksum
// is verified, not just the shape.
//
// Muxed accounts (M...) are refused because payments to them arrive
// credited to the underlying G... account and the muxed id would silently
// be ignored; secret seeds (S...) are refused with a message that says so.
// Errors never repeat id, since it may be a secret seed pasted by mistake.
func ValidateStellarAccount(id string) error {
	if id == "" {
		return errors.New("stellar account id is empty")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= '2' && c <= '7':
		case c >= 'a' && c <= 'z':
			return errors.New("stellar account id must be upper case")
		default:
			return fmt.Errorf("stellar account id has a character outside base32 (A-Z, 2-7) at position %d", i+1)
		}
	}
	switch id[0] {
	case 'G':
	case 'M':
		return errors.New("stellar account id is a muxed account (M...); use its G... account")
	case 'S':
		return errors.New("stellar account id is a secret seed (S...), which must never be shared; use the public account id (G...)")
	default:
		return fmt.Errorf("stellar account id must start with G, not %c", id[0])
	}
	if len(id) != strKeyAccountLen {
		return fmt.Errorf("stellar account id must be %d characters, got %d", strKeyAccountLen, len(id))
	}
	raw, err := strKeyEncoding.DecodeString(id)
	if err != nil || len(raw) != strKeyDecodedLen {
		return errors.New("stellar account id is not valid base32")
	}
	if raw[0] != strKeyAccountVersion {
		return fmt.Errorf("stellar account id has version byte %d, want %d (account)", raw[0], strKeyAccountVersion)
	}
	body, sum := raw[:strKeyDecodedLen-2], raw[strKeyDecodedLen-2:]
	want := crc16XModem(body)
	if uint16(sum[0])|uint16(sum[1])<<8 != want {
		return errors.New("stellar account id checksum does not match; check it for a typo")
	}
	return nil
}

// StellarAccountID encodes an ed25519 public key as a Stellar account id
// ("G..." StrKey), the inverse of what ValidateStellarAccount checks.
func StellarAccountID(key [32]byte) string {
	raw := make([]byte, 0, 35)
	raw = append(raw, 6<<3) // version byte of an ed25519 public key: "G"
	raw = append(raw, key[:]...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16XModem(raw))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
}

// crc16XModem is the CRC-16/XMODEM StrKey uses: polynomial 0x1021, initial
// value 0, no reflection, no final xor.
func crc16XModem(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// OrderNumberFromMemo returns the order number a payment's memo names,
// given Horizon's memo_type and memo. A text memo is read leniently, as
// NormalizeOrderNumber does, because payers type it into wallets by hand.
// An id memo is a uint64 that Horizon renders in decimal; since an order
// number never starts with 0, its decimal form is the order number itself,
// so it must be exactly that: 11 digits with a valid check digit. Hash and
// return memos are binary and never name an order, and neither does a
// payment without a memo, whose memo_type is "none" (or empty).
func OrderNumberFromMemo(memoType, memo string) (string, bool) {
	switch memoType {
	case "text":
		return NormalizeOrderNumber(memo)
	case "id":
		v, err := strconv.ParseUint(memo, 10, 64)
		// The round trip rejects a "+" sign and leading zeros, which
		// Horizon never produces and which would not be the order number.
		if err != nil || strconv.FormatUint(v, 10) != memo || !ValidOrderNumber(memo) {
			return "", false
		}
		return memo, true
	}
	return "", false
}

// SEP-0007 memo types PayRequest.MemoType can take.
const (
	MemoTypeText = "MEMO_TEXT"
	MemoTypeID   = "MEMO_ID"
)

// PayRequest is a SEP-0007 "pay" request: what a wallet needs to pay one
// order, shown to the payer as a link or a QR code.
type PayRequest struct {
	Destination string
	// Amount is what Destination must receive; zero leaves it to the payer
	// (SEP-0007 omits it), which an order never wants. It should already
	// be rounded to the asset's 7 decimals (see QuoteAmount, QuoteXLM).
	Amount decimal.Decimal
	// AssetCode and AssetIssuer are both empty for XLM.
	AssetCode   string
	AssetIssuer string
	Memo        string
	MemoType    string // MemoTypeText or MemoTypeID
	// Message is shown by the wallet and not put on chain; SEP-0007 caps
	// it at 300 characters.
	Message string
	// NetworkPassphrase is set only for a network other than pubnet, which
	// is what wallets assume without it.
	NetworkPassphrase string
}

// PayURI returns r as a SEP-0007 URI: web+stellar:pay?destination=...,
// with parameters in the order SEP-0007 lists them and the empty optional
// ones left out. Values are percent-encoded with spaces as %20, as in
// SEP-0007's examples, since not every wallet decodes "+" as a space. The
// amount is written in plain decimal without trailing zeros. PayURI does
// not validate r: callers build it from a validated order and config.
func PayURI(r PayRequest) string {
	var b strings.Builder
	b.WriteString("web+stellar:pay?destination=")
	b.WriteString(sep7Escape(r.Destination))
	add := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteByte('&')
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(sep7Escape(value))
	}
	if !r.Amount.IsZero() {
		add("amount", r.Amount.String())
	}
	add("asset_code", r.AssetCode)
	add("asset_issuer", r.AssetIssuer)
	add("memo", r.Memo)
	add("memo_type", r.MemoType)
	add("msg", r.Message)
	add("network_passphrase", r.NetworkPassphrase)
	return b.String()
}

// sep7Escape percent-encodes a query value. QueryEscape encodes a literal
// "+" as %2B, so every "+" left in its output stands for a space.
func sep7Escape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// stellarDecimals is the fixed precision of every Stellar amount: amounts
// are int64 counts of stroops, 10⁻⁷ of a unit.
const stellarDecimals = 7

// stroop is the smallest Stellar amount.
var stroop = decimal.New(1, -stellarDecimals)

// maxStellarAmount is the largest amount an int64 of stroops can hold.
var maxStellarAmount = decimal.New(1<<63-1, -stellarDecimals)

// QuoteXLM returns how many lumens pay totalUSD at usdPerXLM dollars per
// lumen, rounded up to the stroop: a payment one stroop short would leave
// the order unpaid, one stroop over costs the payer nothing noticeable. The
// division is exact before rounding, so the result is never below the
// total's worth. A price or total that is not positive is an error: a
// zero price would mean an infinite amount, a negative one a nonsense one.
func QuoteXLM(totalUSD, usdPerXLM decimal.Decimal) (decimal.Decimal, error) {
	if !usdPerXLM.IsPositive() {
		return decimal.Decimal{}, fmt.Errorf("quote XLM: price must be positive, got %s", usdPerXLM)
	}
	if !totalUSD.IsPositive() {
		return decimal.Decimal{}, fmt.Errorf("quote XLM: total must be positive, got %s", totalUSD)
	}
	// QuoRem truncates the quotient to 7 decimals and keeps the exact
	// remainder, where Div would round at a fixed precision first.
	q, rem := totalUSD.QuoRem(usdPerXLM, stellarDecimals)
	if !rem.IsZero() {
		q = q.Add(stroop)
	}
	return q, nil
}

// StellarAmount parses an amount as Horizon writes it ("12.3456789"):
// ASCII digits with an optional fraction of at most 7 digits. Anything
// else (a sign, an exponent, spaces, an empty string, an 8th decimal, more
// than an int64 of stroops) is an error rather than being rounded or
// guessed at, since the amount decides whether an order is paid.
func StellarAmount(s string) (decimal.Decimal, error) {
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || (hasPoint && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return decimal.Decimal{}, fmt.Errorf("stellar amount %q: want digits with an optional fraction, like 12.3456789", s)
	}
	if len(frac) > stellarDecimals {
		return decimal.Decimal{}, fmt.Errorf("stellar amount %q: more than %d decimal places", s, stellarDecimals)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("stellar amount %q: %w", s, err)
	}
	if d.GreaterThan(maxStellarAmount) {
		return decimal.Decimal{}, fmt.Errorf("stellar amount %q: above the largest Stellar amount %s", s, maxStellarAmount)
	}
	return d, nil
}

// allDigits reports whether s holds only ASCII digits (true for "").
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
