package models

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func assertDecimal(t *testing.T, want string, got decimal.Decimal, label string) {
	t.Helper()
	assert.Truef(t, dec(want).Equal(got), "%s: want %s, got %s", label, want, got)
}

// testRules is a small table with round numbers, so expected quotes can be
// worked out by hand in the test cases below.
func testRules() PricingRules {
	return PricingRules{
		Default: ShippingRule{Base: dec("20.00"), PerItem: dec("5.00"), TaxRate: dec("0.10")},
		Countries: map[string]ShippingRule{
			"US": {Base: dec("5.00"), PerItem: dec("1.00"), TaxRate: dec("0.0825")},
			"GB": {Base: dec("0"), PerItem: dec("0"), TaxRate: dec("0.10")},
		},
		ServiceFeeRate: dec("0.03"),
		ServiceFeeMin:  dec("1.00"),
		NoShip:         []string{"CU", "KP"},
	}
}

func line(price, currency string, qty int) CartLine {
	return CartLine{
		Product: Product{
			Marketplace: MarketplaceAmazon, ID: "B0TEST" + price, Title: "Test " + price,
			ProductURL: "https://www.amazon.com/dp/B0TEST0000", Currency: currency,
			Price: dec(price), Availability: InStock,
		},
		Quantity: qty,
	}
}

func TestQuoteComponents(t *testing.T) {
	type want struct{ subtotal, shipping, tax, fee, total string }
	tests := []struct {
		name    string
		country string
		lines   []CartLine
		want    want
	}{
		{
			// tax 0.0825 × 15.00 = 1.2375; fee 0.30 is below the 1.00 minimum.
			name: "us single item", country: "US",
			lines: []CartLine{line("10.00", "USD", 1)},
			want:  want{"10.00", "5.00", "1.24", "1.00", "17.24"},
		},
		{
			// 3 units: shipping 5 + 2×1; tax 0.0825 × 52.48 = 4.3296; fee 0.03 × 45.48 = 1.3644.
			name: "us two lines", country: "US",
			lines: []CartLine{line("19.99", "USD", 2), line("5.50", "USD", 1)},
			want:  want{"45.48", "7.00", "4.33", "1.36", "58.17"},
		},
		{
			name: "lowercase country uses its rule", country: " us ",
			lines: []CartLine{line("10.00", "USD", 1)},
			want:  want{"10.00", "5.00", "1.24", "1.00", "17.24"},
		},
		{
			// FR has no row: Default applies. 2 units: 20 + 5; tax 0.10 × 225.
			name: "unlisted country uses default", country: "FR",
			lines: []CartLine{line("100.00", "USD", 2)},
			want:  want{"200.00", "25.00", "22.50", "6.00", "253.50"},
		},
		{
			// tax 0.10 × 10.05 = 1.005: exactly half a cent rounds away from zero.
			name: "tax on a half cent", country: "GB",
			lines: []CartLine{line("10.05", "USD", 1)},
			want:  want{"10.05", "0", "1.01", "1.00", "12.06"},
		},
		{
			// fee 0.03 × 50.50 = 1.515 rounds up; tax 0.10 × 50.50 = 5.05.
			name: "fee on a half cent", country: "GB",
			lines: []CartLine{line("50.50", "USD", 1)},
			want:  want{"50.50", "0", "5.05", "1.52", "57.07"},
		},
		{
			// A line total below the minor unit is rounded before summing:
			// 3 × 0.333 = 0.999 → 1.00.
			name: "sub-cent unit price", country: "GB",
			lines: []CartLine{line("0.333", "USD", 3)},
			want:  want{"1.00", "0", "0.10", "1.00", "2.10"},
		},
		{
			// JPY has no minor unit: shipping 5 + 1 = 6; tax 0.0825 × 3966 =
			// 327.195 → 327; fee 0.03 × 3960 = 118.8 → 119.
			name: "jpy zero decimals", country: "US",
			lines: []CartLine{line("1980", "JPY", 2)},
			want:  want{"3960", "6", "327", "119", "4412"},
		},
		{
			// KWD has three decimals: tax 0.0825 × 17.5 = 1.44375 → 1.444.
			name: "kwd three decimals", country: "US",
			lines: []CartLine{line("12.500", "KWD", 1)},
			want:  want{"12.500", "5.000", "1.444", "1.000", "19.944"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := testRules().Quote(tc.country, tc.lines)
			require.NoError(t, err)
			assert.Equal(t, tc.lines[0].Product.Currency, q.Currency)
			assertDecimal(t, tc.want.subtotal, q.Subtotal, "subtotal")
			assertDecimal(t, tc.want.shipping, q.Shipping, "shipping")
			assertDecimal(t, tc.want.tax, q.Tax, "tax")
			assertDecimal(t, tc.want.fee, q.ServiceFee, "service fee")
			assertDecimal(t, tc.want.total, q.Total, "total")
		})
	}
}

func TestQuoteErrors(t *testing.T) {
	usd := []CartLine{line("10.00", "USD", 1)}
	tests := []struct {
		name      string
		country   string
		lines     []CartLine
		code      Code
		field     string
		msgSubstr string
	}{
		{"unknown country", "XX", usd, CodeInvalidRequest, "ship_to_country", "ISO 3166-1"},
		{"empty country", "", usd, CodeInvalidRequest, "ship_to_country", "ISO 3166-1"},
		{"alpha-3 country", "USA", usd, CodeInvalidRequest, "ship_to_country", "ISO 3166-1"},
		{"no ship", "CU", usd, CodeShippingUnavailable, "ship_to_country", "Cannot ship"},
		{"no ship lowercase", "kp", usd, CodeShippingUnavailable, "ship_to_country", "Cannot ship"},
		{"no lines", "US", nil, CodeInvalidRequest, "items", "at least one"},
		{"mixed currencies", "US", []CartLine{line("10.00", "USD", 1), line("10.00", "EUR", 1)}, CodeInvalidRequest, "items", "different currencies"},
		{"zero quantity", "US", []CartLine{line("10.00", "USD", 0)}, CodeInvalidRequest, "items", "quantity"},
		{"negative quantity", "US", []CartLine{line("10.00", "USD", -1)}, CodeInvalidRequest, "items", "quantity"},
		{"missing currency is our bug", "US", []CartLine{line("10.00", "", 1)}, CodeInternal, "", "currency"},
		{"negative price is our bug", "US", []CartLine{line("-1.00", "USD", 1)}, CodeInternal, "", "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := testRules().Quote(tc.country, tc.lines)
			require.Error(t, err)
			assert.Equal(t, Quote{}, q)
			assert.Equal(t, tc.code, CodeOf(err))
			assert.Contains(t, err.Error(), tc.msgSubstr)
			var e *Error
			if errors.As(err, &e) {
				assert.Equal(t, tc.field, e.Field)
			}
		})
	}
}

func TestQuoteNoShipIsSentinel(t *testing.T) {
	_, err := testRules().Quote("CU", []CartLine{line("10.00", "USD", 1)})
	assert.ErrorIs(t, err, ErrShippingUnavailable)
}

// The breakdown a client shows must add up, and each component must already
// be in the currency's minor unit, for any cart.
func TestQuoteTotalIsSumOfComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) // fixed seed: a failure reproduces
	rules := DefaultPricingRules()
	countries := []string{"US", "CA", "GB", "DE", "JP", "AU", "BR", "ZA", "NO", "SG"}
	currencies := []string{"USD", "EUR", "JPY", "KWD"}
	for i := range 2000 {
		currency := currencies[rng.IntN(len(currencies))]
		n := 1 + rng.IntN(MaxCartItems)
		lines := make([]CartLine, n)
		for j := range lines {
			// Prices with up to four decimals exercise line rounding too.
			price := decimal.New(rng.Int64N(10_000_000), -int32(rng.IntN(5)))
			lines[j] = CartLine{
				Product:  Product{Marketplace: MarketplaceEbay, ID: fmt.Sprint(j), Currency: currency, Price: price},
				Quantity: 1 + rng.IntN(MaxItemQuantity),
			}
		}
		country := countries[rng.IntN(len(countries))]
		q, err := rules.Quote(country, lines)
		require.NoError(t, err)

		sum := q.Subtotal.Add(q.Shipping).Add(q.Tax).Add(q.ServiceFee)
		require.Truef(t, q.Total.Equal(sum), "cart %d: total %s != sum %s", i, q.Total, sum)
		lineSum := decimal.Zero
		for _, it := range PriceItems(lines) {
			lineSum = lineSum.Add(it.LineTotal)
		}
		require.Truef(t, q.Subtotal.Equal(lineSum), "cart %d: subtotal %s != line totals %s", i, q.Subtotal, lineSum)
		for name, d := range map[string]decimal.Decimal{
			"subtotal": q.Subtotal, "shipping": q.Shipping, "tax": q.Tax, "fee": q.ServiceFee, "total": q.Total,
		} {
			require.Truef(t, d.Equal(RoundMoney(d, currency)), "cart %d: %s %s not rounded to %s", i, name, d, currency)
			require.Falsef(t, d.IsNegative(), "cart %d: %s negative", i, name)
		}
		require.True(t, q.ServiceFee.GreaterThanOrEqual(RoundMoney(rules.ServiceFeeMin, currency)))
	}
}

func TestPriceItems(t *testing.T) {
	p := Product{
		Marketplace: MarketplaceEbay, ID: "123456789012", Title: "Camera",
		ImageURL: "https://img.example/1.jpg", ProductURL: "https://www.ebay.com/itm/123456789012",
		Currency: "USD", Price: dec("19.995"), Availability: InStock,
	}
	items := PriceItems([]CartLine{{Product: p, Quantity: 3}, {Product: p, Quantity: 1}})
	require.Len(t, items, 2)
	it := items[0]
	assert.Equal(t, p.ProductURL, it.ProductURL)
	assert.Equal(t, p.Marketplace, it.Marketplace)
	assert.Equal(t, p.ID, it.ProductID)
	assert.Equal(t, p.Title, it.Title)
	assert.Equal(t, p.ImageURL, it.ImageURL)
	assert.Equal(t, 3, it.Quantity)
	assertDecimal(t, "19.995", it.UnitPrice, "unit price")
	assertDecimal(t, "59.99", it.LineTotal, "line total") // 59.985 rounds half up
	assertDecimal(t, "20.00", items[1].LineTotal, "line total")

	assert.Empty(t, PriceItems(nil))
}

func TestDefaultPricingRules(t *testing.T) {
	r := DefaultPricingRules()
	require.NoError(t, r.Validate())
	for _, cc := range []string{"US", "CA", "MX", "GB", "DE", "FR", "IT", "ES", "NL", "AU", "JP"} {
		assert.Contains(t, r.Countries, cc)
	}
	assert.ElementsMatch(t, DefaultNoShipCountries, r.NoShip)
	// US is domestic: cheaper than the international default.
	assert.True(t, r.Countries["US"].Base.LessThan(r.Default.Base))

	// Each call is independent: a caller editing its copy changes nothing else.
	r.Countries["US"] = ShippingRule{}
	r.NoShip[0] = "US"
	fresh := DefaultPricingRules()
	assert.True(t, fresh.Countries["US"].Base.IsPositive())
	assert.Equal(t, "CU", fresh.NoShip[0])
	assert.Equal(t, "CU", DefaultNoShipCountries[0])

	// The default table refuses the sanctioned destinations.
	_, err := fresh.Quote("IR", []CartLine{line("10.00", "USD", 1)})
	assert.ErrorIs(t, err, ErrShippingUnavailable)
}

const goodRulesJSON = `{
  "default":   {"base": "24.99", "per_item": "6.00", "tax_rate": "0.15"},
  "countries": {
    "US": {"base": "5.99", "per_item": "1.50", "tax_rate": "0.0825"},
    "DE": {"base": "14.99", "per_item": "3.50", "tax_rate": "0.19"}
  },
  "service_fee_rate": "0.03",
  "service_fee_min":  "1.00",
  "no_ship": ["CU", "IR"]
}`

func TestParsePricingRules(t *testing.T) {
	r, err := ParsePricingRules([]byte(goodRulesJSON))
	require.NoError(t, err)
	assertDecimal(t, "24.99", r.Default.Base, "default base")
	assertDecimal(t, "6.00", r.Default.PerItem, "default per item")
	assertDecimal(t, "0.15", r.Default.TaxRate, "default tax")
	require.Len(t, r.Countries, 2)
	assertDecimal(t, "5.99", r.Countries["US"].Base, "US base")
	assertDecimal(t, "0.0825", r.Countries["US"].TaxRate, "US tax")
	assertDecimal(t, "3.50", r.Countries["DE"].PerItem, "DE per item")
	assertDecimal(t, "0.03", r.ServiceFeeRate, "fee rate")
	assertDecimal(t, "1.00", r.ServiceFeeMin, "fee min")
	assert.Equal(t, []string{"CU", "IR"}, r.NoShip)

	q, err := r.Quote("US", []CartLine{line("10.00", "USD", 1)})
	require.NoError(t, err)
	assertDecimal(t, "5.99", q.Shipping, "shipping from parsed rules")
}

func TestParsePricingRulesNoShip(t *testing.T) {
	base := `"default": {"base": "1", "per_item": "1", "tax_rate": "0.1"}, "service_fee_rate": "0", "service_fee_min": "0"`

	r, err := ParsePricingRules([]byte(`{` + base + `}`))
	require.NoError(t, err)
	assert.Equal(t, DefaultNoShipCountries, r.NoShip, "absent no_ship keeps the safe default")
	assert.Empty(t, r.Countries)

	r, err = ParsePricingRules([]byte(`{` + base + `, "no_ship": []}`))
	require.NoError(t, err)
	assert.Empty(t, r.NoShip, "an explicit empty list refuses nothing")
}

func TestParsePricingRulesRejects(t *testing.T) {
	rule := `{"base": "1.00", "per_item": "1.00", "tax_rate": "0.10"}`
	fees := `"service_fee_rate": "0.03", "service_fee_min": "1.00"`
	tests := []struct {
		name    string
		json    string
		errPart string
	}{
		{"number for base", `{"default": {"base": 24.99, "per_item": "6", "tax_rate": "0.1"}, ` + fees + `}`, "JSON strings"},
		{"integer number for per_item", `{"default": {"base": "1", "per_item": 6, "tax_rate": "0.1"}, ` + fees + `}`, "JSON strings"},
		{"number for fee rate", `{"default": ` + rule + `, "service_fee_rate": 0.03, "service_fee_min": "1.00"}`, "JSON strings"},
		{"number in a country", `{"default": ` + rule + `, "countries": {"US": {"base": "1", "per_item": "1", "tax_rate": 0.08}}, ` + fees + `}`, "JSON strings"},
		{"null amount", `{"default": {"base": null, "per_item": "6", "tax_rate": "0.1"}, ` + fees + `}`, "default.base: required"},
		{"missing default", `{` + fees + `}`, "default: required"},
		{"missing tax rate", `{"default": {"base": "1", "per_item": "1"}, ` + fees + `}`, "default.tax_rate: required"},
		{"missing country field", `{"default": ` + rule + `, "countries": {"US": {"base": "1", "tax_rate": "0.1"}}, ` + fees + `}`, "countries.US.per_item: required"},
		{"missing fee min", `{"default": ` + rule + `, "service_fee_rate": "0.03"}`, "service_fee_min: required"},
		{"not a decimal", `{"default": {"base": "abc", "per_item": "1", "tax_rate": "0.1"}, ` + fees + `}`, "not a decimal"},
		{"empty string", `{"default": {"base": "", "per_item": "1", "tax_rate": "0.1"}, ` + fees + `}`, "not a decimal"},
		{"negative base", `{"default": {"base": "-1.00", "per_item": "1", "tax_rate": "0.1"}, ` + fees + `}`, "must not be negative"},
		{"negative fee min", `{"default": ` + rule + `, "service_fee_rate": "0.03", "service_fee_min": "-0.01"}`, "must not be negative"},
		{"tax rate of one", `{"default": {"base": "1", "per_item": "1", "tax_rate": "1"}, ` + fees + `}`, "[0, 1)"},
		{"tax rate as percent", `{"default": ` + rule + `, "countries": {"DE": {"base": "1", "per_item": "1", "tax_rate": "19"}}, ` + fees + `}`, "countries.DE.tax_rate"},
		{"negative tax rate", `{"default": {"base": "1", "per_item": "1", "tax_rate": "-0.1"}, ` + fees + `}`, "[0, 1)"},
		{"fee rate too high", `{"default": ` + rule + `, "service_fee_rate": "1.5", "service_fee_min": "1"}`, "service_fee_rate"},
		{"lowercase country", `{"default": ` + rule + `, "countries": {"us": ` + rule + `}, ` + fees + `}`, `"us"`},
		{"unknown country", `{"default": ` + rule + `, "countries": {"XX": ` + rule + `}, ` + fees + `}`, `"XX"`},
		{"bad no_ship code", `{"default": ` + rule + `, ` + fees + `, "no_ship": ["CU", "USA"]}`, `"USA"`},
		{"priced and refused", `{"default": ` + rule + `, "countries": {"CU": ` + rule + `}, ` + fees + `, "no_ship": ["CU"]}`, "both"},
		{"unknown field", `{"default": ` + rule + `, ` + fees + `, "service_fee": "1"}`, "unknown field"},
		{"typo in rule", `{"default": {"base": "1", "per_item": "1", "tax_rate": "0.1", "perItem": "2"}, ` + fees + `}`, "unknown field"},
		{"trailing data", `{"default": ` + rule + `, ` + fees + `} {}`, "after the JSON object"},
		{"malformed", `{"default": `, "pricing rules"},
		{"null", `null`, "default: required"},
		{"empty", ``, "pricing rules"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParsePricingRules([]byte(tc.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errPart)
			assert.Equal(t, PricingRules{}, r)
		})
	}
}
