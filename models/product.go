package models

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/shopspring/decimal"
)

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
	// Variation is the auction marketplace's variation id of a
	// multi-variation listing (the link's ?var= parameter), empty otherwise.
	Variation string
	// URL is the canonical product URL: https://<host>/dp/<ASIN> or
	// https://<host>/itm/<id> (with ?var=<variation> when set), without
	// tracking parameters; for a short link the short link itself.
	URL string
	// ShipTo is the destination country (ISO alpha-2) the lookup is for:
	// set by the caller when pricing a cart, empty for a preview. It is not
	// part of the link; live catalogs use it for availability and caching.
	ShipTo string
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

	// The snapshot a cart line keeps of where its price came from, so an
	// operator (and the buying provider) can tell exactly what was priced.
	// UpstreamID is the provider's id of the priced item: the ASIN, or the
	// auction marketplace's "v1|<item>|<variation>" id.
	UpstreamID string
	Variation  string // variation id, when the listing has variations
	// Listing names the offer the price came from: the buy-box merchant on
	// the retailer, the seller on the auction marketplace; "sandbox" in
	// test mode.
	Listing string
}

// liveStorefronts are where live orders can be bought: the storefronts the
// buying provider supports and that price in the currency orders are paid
// in (USD). The provider also buys on amazon.de, but in euros, which the
// supplier budget (in the cart's currency) cannot bound yet.
var liveStorefronts = map[string]bool{"www.amazon.com": true, "www.ebay.com": true}

// liveDestinations are where the buying provider delivers live orders
// from those storefronts: it buys auction-marketplace items for US
// addresses only, and one rule for both keeps carts mixable.
var liveDestinations = map[string]bool{"US": true}

// CheckLiveBuyable reports whether a product can be bought for a live
// order shipping to country: product_unavailable for a storefront the
// buying provider cannot buy from, shipping_unavailable for a destination
// it does not deliver to. Test mode has no such limits.
func CheckLiveBuyable(p Product, country string) error {
	host := ""
	if u, err := url.Parse(p.ProductURL); err == nil {
		host = u.Hostname()
	}
	if !liveStorefronts[host] {
		return Errorf(CodeProductUnavailable,
			"Live orders can be bought on www.amazon.com and www.ebay.com only, not on %s", strings.TrimPrefix(host, "www."))
	}
	if !liveDestinations[country] {
		return &Error{Code: CodeShippingUnavailable, Field: "ship_to_country",
			Message: "Live orders ship to the United States (US) only for now"}
	}
	return nil
}

// CheckLiveCart reports whether products can be bought together in one
// live order: the buying provider buys from one retailer per order, so a
// cart mixing marketplaces is refused (product_unavailable, naming the
// first item from another marketplace) before anyone pays for it.
func CheckLiveCart(ps []Product) error {
	for i, p := range ps {
		if p.Marketplace != ps[0].Marketplace {
			return &Error{Code: CodeProductUnavailable, Field: fmt.Sprintf("items[%d].product_url", i),
				Message: fmt.Sprintf("Live orders buy from one marketplace at a time: items[%d] is on %s, items[0] on %s; put them in separate carts",
					i, p.Marketplace, ps[0].Marketplace)}
		}
	}
	return nil
}
