package models

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// minorUnits lists ISO 4217 currencies whose minor unit is not two digits.
// Anything not listed has two (USD, EUR, GBP, CAD, AUD, ...).
var minorUnits = map[string]int32{
	"JPY": 0, "KRW": 0, "CLP": 0, "ISK": 0, "HUF": 2, "VND": 0,
	"BHD": 3, "KWD": 3, "OMR": 3, "JOD": 3, "TND": 3,
}

// MinorUnits returns the number of decimal places of currency's minor unit.
func MinorUnits(currency string) int32 {
	if n, ok := minorUnits[currency]; ok {
		return n
	}
	return 2
}

// RoundMoney rounds an amount to the currency's minor unit, half away from
// zero (commercial rounding), as each price component is rounded.
func RoundMoney(amount decimal.Decimal, currency string) decimal.Decimal {
	return amount.Round(MinorUnits(currency))
}

// IsCurrencyCode reports whether s has the shape of an ISO 4217 code:
// three uppercase letters. Catalog clients check what a marketplace sends
// before a price is built on it.
func IsCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// Bounds on amounts that enter from outside (API requests, marketplaces,
// configuration), chosen so every sum the service builds from them fits
// the database's numeric(20, 8) columns with room to spare.
const (
	// MaxPriceDigits bounds the integer digits of a unit price: under a
	// billion in the currency's major unit (yen prices are large); twenty
	// lines of ten still fit numeric(20, 8).
	MaxPriceDigits = 9
	// MaxPaymentDigits bounds the integer digits of a payment amount.
	MaxPaymentDigits = 12
	// MaxAmountDecimals is the most decimal places any amount may have
	// (Stellar's seven).
	MaxAmountDecimals = 7
)

// ParseAmount reads a non-negative decimal written plainly: ASCII digits
// with an optional fraction ("12", "12.50", "0.0000001"), at most maxInt
// digits before the point and maxFrac after it. No sign, no exponent, no
// spaces: "1e400" would otherwise be a 401-digit number, and an amount
// decides what is charged or credited, so nothing is guessed or rounded.
func ParseAmount(s string, maxInt, maxFrac int) (decimal.Decimal, error) {
	whole, frac, hasPoint := strings.Cut(s, ".")
	if whole == "" || (hasPoint && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return decimal.Decimal{}, fmt.Errorf("amount %q: want digits with an optional fraction, like 12.50", truncateForError(s))
	}
	if n := len(strings.TrimLeft(whole, "0")); n > maxInt {
		return decimal.Decimal{}, fmt.Errorf("amount %q: more than %d digits before the decimal point", truncateForError(s), maxInt)
	}
	if len(frac) > maxFrac {
		return decimal.Decimal{}, fmt.Errorf("amount %q: more than %d decimal places", truncateForError(s), maxFrac)
	}
	// Leading zeros are bounded too, so the text handed on stays small.
	if len(whole) > maxInt+8 {
		return decimal.Decimal{}, fmt.Errorf("amount %q: too many leading zeros", truncateForError(s))
	}
	return decimal.NewFromString(s)
}

// truncateForError keeps error messages short whatever the input size.
func truncateForError(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}
