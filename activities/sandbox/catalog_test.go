package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func mustRef(t *testing.T, raw string) models.ProductRef {
	t.Helper()
	ref, err := models.ParseProductURL(raw)
	require.NoError(t, err, raw)
	return ref
}

func TestCatalogProductShape(t *testing.T) {
	var c Catalog // the zero value is usable
	p, err := c.Product(t.Context(), mustRef(t, "https://www.amazon.com/dp/B0ABC12345"))
	require.NoError(t, err)
	assert.Equal(t, models.MarketplaceAmazon, p.Marketplace)
	assert.Equal(t, "B0ABC12345", p.ID)
	assert.True(t, strings.HasPrefix(p.Title, "Sandbox "), p.Title)
	assert.True(t, strings.HasSuffix(p.Title, " B0ABC12345"), p.Title)
	assert.Equal(t, "https://sandbox.memocart.dev/img/amazon/B0ABC12345.jpg", p.ImageURL)
	assert.Equal(t, "https://www.amazon.com/dp/B0ABC12345", p.ProductURL)
	assert.Equal(t, "USD", p.Currency)
	assert.Equal(t, models.InStock, p.Availability)
	// Pinned like ShortLinkASIN: clients script against these values.
	assert.Equal(t, "Sandbox Ergonomic Travel Mug B0ABC12345", p.Title)
	assert.Equal(t, "483.08", p.Price.StringFixed(2))

	e, err := NewCatalog().Product(t.Context(), mustRef(t, "https://www.ebay.co.uk/itm/123456789012"))
	require.NoError(t, err)
	assert.Equal(t, models.MarketplaceEbay, e.Marketplace)
	assert.Equal(t, "123456789012", e.ID)
	assert.Equal(t, "https://sandbox.memocart.dev/img/ebay/123456789012.jpg", e.ImageURL)
	assert.Equal(t, "https://www.ebay.co.uk/itm/123456789012", e.ProductURL)
	assert.Equal(t, models.InStock, e.Availability)
}

func TestCatalogDeterministic(t *testing.T) {
	c := NewCatalog()
	tests := []struct {
		name  string
		forms []string
	}{
		{"amazon url forms", []string{
			"https://www.amazon.com/dp/B09XS7JWHH",
			"https://www.amazon.com/dp/B09XS7JWHH", // same URL twice
			"http://amazon.com/Sony-Headphones/dp/b09xs7jwhh/ref=sr_1_1?th=1",
			"https://www.amazon.com/gp/product/B09XS7JWHH",
		}},
		{"ebay url forms", []string{
			"https://www.ebay.com/itm/123456789012",
			"https://m.ebay.com/itm/Vintage-Camera/123456789012?hash=x",
		}},
		{"short link twice", []string{"https://a.co/d/aBc1234", "https://a.co/d/aBc1234"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, err := c.Product(t.Context(), mustRef(t, tc.forms[0]))
			require.NoError(t, err)
			for _, f := range tc.forms[1:] {
				got, err := c.Product(t.Context(), mustRef(t, f))
				require.NoError(t, err)
				assert.Equal(t, first, got, f)
			}
		})
	}

	// Another storefront is another ProductURL but the same invented product.
	us, err := c.Product(t.Context(), mustRef(t, "https://www.amazon.com/dp/B09XS7JWHH"))
	require.NoError(t, err)
	de, err := c.Product(t.Context(), mustRef(t, "https://www.amazon.de/dp/B09XS7JWHH"))
	require.NoError(t, err)
	assert.Equal(t, "https://www.amazon.de/dp/B09XS7JWHH", de.ProductURL)
	assert.Equal(t, us.Title, de.Title)
	assert.True(t, us.Price.Equal(de.Price))
	assert.Equal(t, us.ImageURL, de.ImageURL)
}

func TestCatalogProductsDiffer(t *testing.T) {
	c := NewCatalog()
	a, err := c.Product(t.Context(), mustRef(t, "https://www.amazon.com/dp/B0ABC12345"))
	require.NoError(t, err)
	b, err := c.Product(t.Context(), mustRef(t, "https://www.amazon.com/dp/B0ABC12346"))
	require.NoError(t, err)
	assert.NotEqual(t, a.ImageURL, b.ImageURL)
	assert.False(t, a.Price.Equal(b.Price), "neighbouring ids should not share a price")

	// The marketplace is part of the identity: the same digits on both
	// marketplaces are two products.
	e1, err := c.Product(t.Context(), models.ProductRef{Marketplace: models.MarketplaceEbay, ID: "1234567890"})
	require.NoError(t, err)
	a1, err := c.Product(t.Context(), models.ProductRef{Marketplace: models.MarketplaceAmazon, ID: "1234567890"})
	require.NoError(t, err)
	assert.NotEqual(t, e1.ImageURL, a1.ImageURL)

	// Across many ids, prices and titles actually vary.
	prices := map[string]bool{}
	titles := map[string]bool{}
	for i := range 200 {
		p, err := c.Product(t.Context(), models.ProductRef{Marketplace: models.MarketplaceEbay, ID: fmt.Sprintf("%012d", 100000000000+i)})
		require.NoError(t, err)
		prices[p.Price.String()] = true
		titles[strings.TrimSuffix(p.Title, " "+p.ID)] = true
	}
	assert.Greater(t, len(prices), 150)
	assert.Greater(t, len(titles), 50)
}

func TestCatalogPriceBounds(t *testing.T) {
	c := NewCatalog()
	lo, hi := decimal.RequireFromString("5.00"), decimal.RequireFromString("500.00")
	for i := range 5000 {
		ref := models.ProductRef{Marketplace: models.MarketplaceAmazon, ID: fmt.Sprintf("B0%08d", i)}
		if i%2 == 1 {
			ref = models.ProductRef{Marketplace: models.MarketplaceEbay, ID: fmt.Sprintf("%012d", i)}
		}
		p, err := c.Product(t.Context(), ref)
		require.NoError(t, err)
		require.Truef(t, p.Price.GreaterThanOrEqual(lo) && p.Price.LessThanOrEqual(hi), "%s: price %s out of bounds", ref.ID, p.Price)
		require.Equal(t, int32(-2), p.Price.Exponent(), "price carries exactly cents")
		require.Truef(t, p.Price.Equal(p.Price.Round(2)), "%s: price %s has sub-cent digits", ref.ID, p.Price)
	}
}

func TestCatalogUnavailable(t *testing.T) {
	c := NewCatalog()
	for _, raw := range []string{
		"https://www.amazon.com/dp/" + UnavailableASIN,
		"https://www.amazon.co.uk/Some-Slug/dp/" + UnavailableASIN + "/ref=x",
		"https://amazon.de/gp/product/" + strings.ToLower(UnavailableASIN),
		"https://www.ebay.com/itm/" + UnavailableEbayItem,
		"https://www.ebay.de/itm/slug/" + UnavailableEbayItem,
	} {
		t.Run(raw, func(t *testing.T) {
			p, err := c.Product(t.Context(), mustRef(t, raw))
			require.Error(t, err)
			assert.ErrorIs(t, err, models.ErrProductUnavailable)
			assert.Equal(t, models.CodeProductUnavailable, models.CodeOf(err))
			assert.Equal(t, models.Product{}, p)
		})
	}
}

func TestCatalogFailSourcingPreviewsInStock(t *testing.T) {
	p, err := NewCatalog().Product(t.Context(), mustRef(t, "https://www.amazon.com/dp/"+FailSourcingASIN))
	require.NoError(t, err)
	assert.Equal(t, models.InStock, p.Availability)
	assert.Equal(t, FailSourcingASIN, p.ID)
}

func TestCatalogShortLinks(t *testing.T) {
	c := NewCatalog()
	tests := []struct {
		raw      string
		code     string
		wantHost string
	}{
		{"https://amzn.to/3xYzAbC", "3xYzAbC", "www.amazon.com"},
		{"https://a.co/d/aBc1234", "aBc1234", "www.amazon.com"},
		{"https://amzn.eu/d/Xy9zQ1w", "Xy9zQ1w", "www.amazon.de"},
		{"https://amzn.asia/d/0aB1cD2", "0aB1cD2", "www.amazon.co.jp"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			p, err := c.Product(t.Context(), mustRef(t, tc.raw))
			require.NoError(t, err)
			asin := ShortLinkASIN(tc.code)
			assert.Equal(t, asin, p.ID)
			assert.Len(t, asin, 10)
			assert.True(t, strings.HasPrefix(asin, "B0"), asin)
			assert.Equal(t, strings.ToUpper(asin), asin)
			assert.Equal(t, "https://"+tc.wantHost+"/dp/"+asin, p.ProductURL)

			// The resolved URL is a real product page that parses back to
			// the same product.
			direct, err := c.Product(t.Context(), mustRef(t, p.ProductURL))
			require.NoError(t, err)
			assert.Equal(t, p, direct)
		})
	}

	// Codes are case-sensitive, so codes differing in case are different links.
	assert.NotEqual(t, ShortLinkASIN("aBc1234"), ShortLinkASIN("abc1234"))
	// Pinned: a change here would silently move every client's sandbox fixtures.
	assert.Equal(t, "B0ZUPYMLMC", ShortLinkASIN("aBc1234"))
}

func TestCatalogRejectsMalformedRefs(t *testing.T) {
	c := NewCatalog()
	for name, ref := range map[string]models.ProductRef{
		"empty":              {},
		"unknown market":     {Marketplace: "etsy", ID: "B0ABC12345"},
		"amazon no id":       {Marketplace: models.MarketplaceAmazon},
		"amazon bad asin":    {Marketplace: models.MarketplaceAmazon, ID: "b0abc12345"},
		"ebay letters":       {Marketplace: models.MarketplaceEbay, ID: "12345678901A"},
		"unknown short host": {Marketplace: models.MarketplaceAmazon, ShortCode: "abc1234", Host: "bit.ly"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Product(t.Context(), ref)
			assert.Equal(t, models.CodeInvalidURL, models.CodeOf(err))
		})
	}
}

func TestCatalogContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p, err := NewCatalog().Product(ctx, mustRef(t, "https://www.amazon.com/dp/B0ABC12345"))
	assert.True(t, errors.Is(err, context.Canceled))
	assert.Equal(t, models.Product{}, p)
}
