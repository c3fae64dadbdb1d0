package models

import "github.com/shopspring/decimal"

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
