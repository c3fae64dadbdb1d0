package models

import "github.com/shopspring/decimal"

// Marketplace is a supported third-party marketplace. The values are the
// lowercase names the API returns in product.marketplace.
type Marketplace string

// Marketplaces.
const (
	MarketplaceAmazon Marketplace = "amazon" // the large general retailer: /dp/<ASIN> pages and short links
	MarketplaceEbay   Marketplace = "ebay"   // the auction marketplace: /itm/<id> pages
)

// ProductRef is a parsed, validated marketplace product link.
type ProductRef struct {
	Marketplace Marketplace
	// ID is the ASIN or the item id. Empty for a short link until a
	// catalog resolves it.
	ID string
	// ShortCode is set for retailer short links (amzn.to/<code>, a.co/d/<code>).
	ShortCode string
	// Host is the lowercase host the link was on (www.amazon.de, amzn.to, www.ebay.co.uk).
	Host string
	// URL is the canonical product URL: https://<host>/dp/<ASIN> or
	// https://<host>/itm/<id>, without tracking parameters; for a short link
	// the short link itself.
	URL string
}

// IsShortLink reports whether the ref still needs resolving to a product id.
func (r ProductRef) IsShortLink() bool { return r.ShortCode != "" }

// Availability of a product.
type Availability string

// Availabilities. Only in_stock products can be put in a cart.
const (
	InStock    Availability = "in_stock"
	OutOfStock Availability = "out_of_stock"
)

// Product is what a catalog knows about a marketplace product.
type Product struct {
	Marketplace  Marketplace
	ID           string // ASIN or item id
	Title        string
	ImageURL     string
	ProductURL   string // canonical URL (short links resolved)
	Currency     string // ISO 4217
	Price        decimal.Decimal
	Availability Availability
}
