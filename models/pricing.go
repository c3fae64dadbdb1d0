package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// ShippingRule prices delivery to one destination.
type ShippingRule struct {
	Base    decimal.Decimal // per cart
	PerItem decimal.Decimal // per unit after the first
	TaxRate decimal.Decimal // fraction, applied to subtotal+shipping (e.g. 0.0825)
}

// PricingRules is the table Quote prices carts with. It is configuration,
// not code: DefaultPricingRules is the built-in table and ParsePricingRules
// reads an operator's replacement.
//
// All amounts are taken in the cart's own currency. Catalog prices are USD
// today, so the tables are written in USD; a cart in another currency
// reuses the same numbers, rounded to that currency's minor unit. That is a
// deliberate simplification until rules carry their own currency and the
// service converts between currencies.
type PricingRules struct {
	Default        ShippingRule            // any destination not listed
	Countries      map[string]ShippingRule // by ISO alpha-2
	ServiceFeeRate decimal.Decimal         // fraction of subtotal
	ServiceFeeMin  decimal.Decimal
	NoShip         []string // destinations refused with shipping_unavailable
}

// DefaultPricingRules returns the built-in table. Shipping reflects
// marketplace-to-forwarder-to-door delivery: cheap domestically in the US,
// where both marketplaces fulfil, dearer abroad. Tax rates are each
// destination's standard VAT/GST rate, collected on import; for the US it
// is a typical combined state and local sales tax, since the real rate
// depends on the address. Every call returns fresh maps and slices, so a
// caller may adjust its copy.
func DefaultPricingRules() PricingRules {
	r := func(base, perItem, tax string) ShippingRule {
		return ShippingRule{
			Base:    decimal.RequireFromString(base),
			PerItem: decimal.RequireFromString(perItem),
			TaxRate: decimal.RequireFromString(tax),
		}
	}
	return PricingRules{
		// Destinations without a row: a courier rate and a VAT-like rate
		// typical of import duty plus tax.
		Default: r("24.99", "6.00", "0.15"),
		Countries: map[string]ShippingRule{
			"US": r("5.99", "1.50", "0.0825"), // domestic; typical combined sales tax
			"CA": r("12.99", "3.00", "0.13"),  // HST as in Ontario
			"MX": r("14.99", "3.50", "0.16"),  // IVA
			"GB": r("14.99", "3.50", "0.20"),  // VAT
			"IE": r("14.99", "3.50", "0.23"),  // VAT
			"DE": r("14.99", "3.50", "0.19"),  // MwSt
			"FR": r("14.99", "3.50", "0.20"),  // TVA
			"IT": r("14.99", "3.50", "0.22"),  // IVA
			"ES": r("14.99", "3.50", "0.21"),  // IVA
			"NL": r("14.99", "3.50", "0.21"),  // BTW
			"SE": r("16.99", "3.50", "0.25"),  // moms
			"PL": r("16.99", "3.50", "0.23"),  // VAT
			"CH": r("19.99", "4.50", "0.081"), // MWST
			"AU": r("19.99", "4.50", "0.10"),  // GST
			"NZ": r("19.99", "4.50", "0.15"),  // GST
			"JP": r("17.99", "4.00", "0.10"),  // consumption tax
			"SG": r("17.99", "4.00", "0.09"),  // GST
		},
		ServiceFeeRate: decimal.RequireFromString("0.03"),
		ServiceFeeMin:  decimal.RequireFromString("1.00"),
		NoShip:         slices.Clone(DefaultNoShipCountries),
	}
}

// Validate reports the first problem with the table: a negative amount, a
// rate outside [0, 1), or a country code that is not an assigned ISO
// 3166-1 alpha-2 code in uppercase. Keys are checked in sorted order so the
// same table always yields the same error.
func (r PricingRules) Validate() error {
	if err := r.Default.validate("default"); err != nil {
		return err
	}
	for _, cc := range slices.Sorted(maps.Keys(r.Countries)) {
		if !ValidCountry(cc) {
			return fmt.Errorf("pricing rules: countries: %q is not an uppercase ISO 3166-1 alpha-2 code", cc)
		}
		if err := r.Countries[cc].validate("countries." + cc); err != nil {
			return err
		}
	}
	if err := checkRate("service_fee_rate", r.ServiceFeeRate); err != nil {
		return err
	}
	if err := checkAmount("service_fee_min", r.ServiceFeeMin); err != nil {
		return err
	}
	for _, cc := range r.NoShip {
		if !ValidCountry(cc) {
			return fmt.Errorf("pricing rules: no_ship: %q is not an uppercase ISO 3166-1 alpha-2 code", cc)
		}
		// A destination both priced and refused is almost certainly an
		// editing mistake; make the operator say which one they meant.
		if _, ok := r.Countries[cc]; ok {
			return fmt.Errorf("pricing rules: %s is listed both in countries and in no_ship", cc)
		}
	}
	return nil
}

func (s ShippingRule) validate(path string) error {
	if err := checkAmount(path+".base", s.Base); err != nil {
		return err
	}
	if err := checkAmount(path+".per_item", s.PerItem); err != nil {
		return err
	}
	return checkRate(path+".tax_rate", s.TaxRate)
}

func checkAmount(path string, d decimal.Decimal) error {
	if d.IsNegative() {
		return fmt.Errorf("pricing rules: %s: must not be negative, got %s", path, d)
	}
	return nil
}

// checkRate keeps rates below 1: a rate of 100% or more is a percentage
// typed where a fraction belongs ("20" for 20%), not a real tax or fee.
func checkRate(path string, d decimal.Decimal) error {
	if d.IsNegative() || d.GreaterThanOrEqual(decimal.NewFromInt(1)) {
		return fmt.Errorf("pricing rules: %s: must be a fraction in [0, 1) such as \"0.2\" for 20%%, got %s", path, d)
	}
	return nil
}

// pricingRulesJSON is the file format of ParsePricingRules. Amounts are
// *string so that a JSON number fails to decode (floats never reach money)
// and a missing field is told apart from "0".
type pricingRulesJSON struct {
	Default        *shippingRuleJSON           `json:"default"`
	Countries      map[string]shippingRuleJSON `json:"countries"`
	ServiceFeeRate *string                     `json:"service_fee_rate"`
	ServiceFeeMin  *string                     `json:"service_fee_min"`
	NoShip         *[]string                   `json:"no_ship"`
}

type shippingRuleJSON struct {
	Base    *string `json:"base"`
	PerItem *string `json:"per_item"`
	TaxRate *string `json:"tax_rate"`
}

// ParsePricingRules reads a pricing table from JSON:
//
//	{
//	  "default":   {"base": "24.99", "per_item": "6.00", "tax_rate": "0.15"},
//	  "countries": {"US": {"base": "5.99", "per_item": "1.50", "tax_rate": "0.0825"}},
//	  "service_fee_rate": "0.03",
//	  "service_fee_min":  "1.00",
//	  "no_ship": ["CU", "IR", "KP", "SY", "RU", "BY", "AQ"]
//	}
//
// Every amount and rate is a JSON string holding a decimal; a JSON number
// is rejected so no float ever touches money. Every field is required
// except countries and no_ship; an absent no_ship means
// DefaultNoShipCountries, so forgetting it never opens sanctioned
// destinations (write [] to refuse none). Unknown fields are rejected, so a
// typo cannot silently drop a rule. The result is checked with Validate.
func ParsePricingRules(data []byte) (PricingRules, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in pricingRulesJSON
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Value == "number" {
			return PricingRules{}, fmt.Errorf("pricing rules: %s: amounts must be JSON strings such as \"12.50\", not numbers", te.Field)
		}
		return PricingRules{}, fmt.Errorf("pricing rules: %w", err)
	}
	if dec.More() {
		return PricingRules{}, errors.New("pricing rules: unexpected data after the JSON object")
	}

	var out PricingRules
	var err error
	if in.Default == nil {
		return PricingRules{}, errors.New("pricing rules: default: required")
	}
	if out.Default, err = in.Default.rule("default"); err != nil {
		return PricingRules{}, err
	}
	out.Countries = make(map[string]ShippingRule, len(in.Countries))
	// Sorted, so the same bad file always reports the same error.
	for _, cc := range slices.Sorted(maps.Keys(in.Countries)) {
		if out.Countries[cc], err = in.Countries[cc].rule("countries." + cc); err != nil {
			return PricingRules{}, err
		}
	}
	if out.ServiceFeeRate, err = parseDecimal("service_fee_rate", in.ServiceFeeRate); err != nil {
		return PricingRules{}, err
	}
	if out.ServiceFeeMin, err = parseDecimal("service_fee_min", in.ServiceFeeMin); err != nil {
		return PricingRules{}, err
	}
	if in.NoShip == nil {
		out.NoShip = slices.Clone(DefaultNoShipCountries)
	} else {
		out.NoShip = slices.Clone(*in.NoShip)
	}
	if err := out.Validate(); err != nil {
		return PricingRules{}, err
	}
	return out, nil
}

func (j shippingRuleJSON) rule(path string) (ShippingRule, error) {
	var r ShippingRule
	var err error
	if r.Base, err = parseDecimal(path+".base", j.Base); err != nil {
		return r, err
	}
	if r.PerItem, err = parseDecimal(path+".per_item", j.PerItem); err != nil {
		return r, err
	}
	if r.TaxRate, err = parseDecimal(path+".tax_rate", j.TaxRate); err != nil {
		return r, err
	}
	return r, nil
}

func parseDecimal(path string, s *string) (decimal.Decimal, error) {
	if s == nil {
		return decimal.Decimal{}, fmt.Errorf("pricing rules: %s: required", path)
	}
	// Plain notation only, and short: "1e400" is a decimal to the
	// library, and a 401-digit fee to every sum after it. Signs are left
	// to Validate, which says "must not be negative".
	d, err := decimal.NewFromString(*s)
	if err != nil || strings.ContainsAny(*s, "eE") || len(*s) > 24 {
		return decimal.Decimal{}, fmt.Errorf("pricing rules: %s: %q is not a decimal number written plainly, like 4.99", path, *s)
	}
	return d, nil
}

// Ships refuses a destination in NoShip (country normalised): the service
// does not ship there, so no cart is priced for it.
func (r PricingRules) Ships(country string) error {
	if slices.Contains(r.NoShip, country) {
		return &Error{Code: CodeShippingUnavailable, Message: DefaultMessage(CodeShippingUnavailable), Field: "ship_to_country"}
	}
	return nil
}

// Quote prices lines for delivery to country (an ISO 3166-1 alpha-2 code;
// surrounding space and lowercase are tolerated). Each component is rounded
// to the currency's minor unit on its own and Total is their exact sum, so
// the breakdown a client shows always adds up:
//
//   - Subtotal: the sum of the line totals of PriceItems.
//   - Shipping: Base + PerItem × (units − 1), from the destination's rule or Default.
//   - Tax: TaxRate × (Subtotal + Shipping); shipping is part of the taxable
//     import value in most VAT systems.
//   - ServiceFee: ServiceFeeRate × Subtotal, but at least ServiceFeeMin.
//
// An unknown country or an empty or malformed cart is CodeInvalidRequest
// naming the field; a destination in NoShip is CodeShippingUnavailable. All
// lines must share one currency: the cart has a single total.
func (r PricingRules) Quote(country string, lines []CartLine) (Quote, error) {
	cc, ok := NormalizeCountry(country)
	if !ok {
		return Quote{}, FieldError(CodeInvalidRequest, "ship_to_country",
			"ship_to_country must be an ISO 3166-1 alpha-2 country code such as \"US\"")
	}
	if err := r.Ships(cc); err != nil {
		return Quote{}, err
	}
	if len(lines) == 0 {
		return Quote{}, FieldError(CodeInvalidRequest, "items", "items must contain at least one product")
	}
	currency := lines[0].Product.Currency
	units := 0
	for _, l := range lines {
		// Products come from a catalog, not the client: a missing currency
		// or a negative price is our bug, reported as an internal error.
		if l.Product.Currency == "" {
			return Quote{}, fmt.Errorf("pricing: product %s/%s has no currency", l.Product.Marketplace, l.Product.ID)
		}
		if l.Product.Price.IsNegative() {
			return Quote{}, fmt.Errorf("pricing: product %s/%s has a negative price", l.Product.Marketplace, l.Product.ID)
		}
		if l.Product.Currency != currency {
			return Quote{}, FieldError(CodeInvalidRequest, "items",
				"items are priced in different currencies (%s and %s); put them in separate carts", currency, l.Product.Currency)
		}
		if l.Quantity < 1 {
			return Quote{}, FieldError(CodeInvalidRequest, "items", "quantity must be at least 1")
		}
		units += l.Quantity
	}

	rule, ok := r.Countries[cc]
	if !ok {
		rule = r.Default
	}
	subtotal := decimal.Zero
	for _, it := range PriceItems(lines) {
		subtotal = subtotal.Add(it.LineTotal)
	}
	subtotal = RoundMoney(subtotal, currency)
	shipping := RoundMoney(rule.Base.Add(rule.PerItem.Mul(decimal.NewFromInt(int64(units-1)))), currency)
	tax := RoundMoney(rule.TaxRate.Mul(subtotal.Add(shipping)), currency)
	fee := RoundMoney(decimal.Max(r.ServiceFeeMin, r.ServiceFeeRate.Mul(subtotal)), currency)
	return Quote{
		Currency:   currency,
		Subtotal:   subtotal,
		Shipping:   shipping,
		Tax:        tax,
		ServiceFee: fee,
		Total:      subtotal.Add(shipping).Add(tax).Add(fee),
	}, nil
}

// PriceItems turns cart lines into priced cart items: the unit price is the
// product's price and the line total is unit × quantity rounded to the
// currency's minor unit. Quote's subtotal is the sum of these line totals,
// so the items a client lists always add up to it.
func PriceItems(lines []CartLine) []CartItem {
	items := make([]CartItem, 0, len(lines))
	for _, l := range lines {
		p := l.Product
		items = append(items, CartItem{
			ProductURL:  p.ProductURL,
			Marketplace: p.Marketplace,
			ProductID:   p.ID,
			Title:       p.Title,
			ImageURL:    p.ImageURL,
			Quantity:    l.Quantity,
			UnitPrice:   p.Price,
			LineTotal:   RoundMoney(p.Price.Mul(decimal.NewFromInt(int64(l.Quantity))), p.Currency),
			Currency:    p.Currency,
			UpstreamID:  p.UpstreamID,
			Variation:   p.Variation,
			Listing:     p.Listing,
		})
	}
	return items
}
