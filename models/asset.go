package models

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// assetField is the request field every asset error names.
const assetField = "payment_asset"

// Asset is a crypto asset an order can be paid in.
type Asset struct {
	Code        string // upper case, as in API requests and responses: "USDC"
	Decimals    int32  // decimal places the chain can carry for the asset
	Description string
}

// assets is every accepted asset, in the order SupportedAssets and error
// messages list them. Both are Stellar assets, and Stellar amounts have
// exactly 7 decimal places.
var assets = []Asset{
	{Code: "USDC", Decimals: 7, Description: "USD Coin (Circle) on Stellar"},
	{Code: "XLM", Decimals: 7, Description: "Stellar lumens"},
}

// assetPegs gives, for the assets that can be quoted without a market rate,
// the currency they are redeemable 1:1 for. An asset missing here (XLM) has
// a floating price: it is quoted at an exchange rate (QuoteXLM, with the
// rate the order locks from activities/rates), not by QuoteAmount.
var assetPegs = map[string]string{
	"USDC": "USD",
}

// LookupAsset returns the accepted asset with the given code, ignoring case
// and surrounding spaces ("usdc" is USDC). An unknown code is an *Error
// with CodeUnsupportedAsset and Field "payment_asset" whose message lists
// the accepted codes. An accepted asset may still be unquotable for a cart's
// currency: see QuoteAmount.
func LookupAsset(code string) (Asset, error) {
	c := strings.ToUpper(strings.TrimSpace(code))
	for _, a := range assets {
		if a.Code == c {
			return a, nil
		}
	}
	if c == "" {
		return Asset{}, FieldError(CodeUnsupportedAsset, assetField,
			"payment_asset is required; accepted: %s", strings.Join(SupportedAssets(), ", "))
	}
	return Asset{}, FieldError(CodeUnsupportedAsset, assetField,
		"payment_asset must be one of: %s", strings.Join(SupportedAssets(), ", "))
}

// SupportedAssets returns the codes of the accepted assets, in a fixed
// order. The slice is the caller's own.
func SupportedAssets() []string {
	codes := make([]string, len(assets))
	for i, a := range assets {
		codes[i] = a.Code
	}
	return codes
}

// QuoteAmount returns how much of a pegged asset pays an order total in
// currency (USDC for USD); the total is rounded up to the asset's decimals,
// because a payment one unit short would leave the order unpaid while one
// unit over costs the payer nothing noticeable. An asset not pegged to
// currency (XLM, which BuildOrder quotes with QuoteXLM at a rate instead, or
// USDC against EUR) is an *Error with CodeUnsupportedAsset and Field
// "payment_asset", so the client can choose another asset.
//
// The asset's decimals are taken from the accepted-asset table, not from
// the argument, so a hand-built Asset cannot change the rounding. A total
// that is not positive is a caller bug, not a client error, and returns a
// plain error.
func QuoteAmount(asset Asset, total decimal.Decimal, currency string) (decimal.Decimal, error) {
	a, err := LookupAsset(asset.Code)
	if err != nil {
		return decimal.Decimal{}, err
	}
	cur := strings.ToUpper(strings.TrimSpace(currency))
	if peg, ok := assetPegs[a.Code]; !ok || peg != cur {
		msg := fmt.Sprintf("payment_asset %s cannot be quoted for %s totals yet", a.Code, cur)
		if alt := quotableFor(cur); len(alt) > 0 {
			msg += "; use " + strings.Join(alt, " or ")
		}
		return decimal.Decimal{}, FieldError(CodeUnsupportedAsset, assetField, "%s", msg)
	}
	if !total.IsPositive() {
		return decimal.Decimal{}, fmt.Errorf("quote %s: total must be positive, got %s", a.Code, total)
	}
	return total.RoundCeil(a.Decimals), nil
}

// quotableFor returns the codes of the assets that can be quoted for
// currency, to suggest one in the error message.
func quotableFor(currency string) []string {
	var codes []string
	for _, a := range assets {
		if assetPegs[a.Code] == currency {
			codes = append(codes, a.Code)
		}
	}
	return codes
}

// Floating reports whether a is quoted at a market rate (a
// models.RateProvider's), not redeemable 1:1 for a currency: an order in it
// locks a fresh rate.
func (a Asset) Floating() bool {
	_, pegged := assetPegs[a.Code]
	return !pegged
}

// Native reports whether a is the Stellar network's own asset (lumens),
// which payment links (SEP-0007) name by naming no asset.
func (a Asset) Native() bool { return a.Code == "XLM" }
