package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

// Reserved product ids that make the sandbox take a failure path, so client
// developers can exercise their error handling without a live marketplace.
const (
	// UnavailableASIN previews as product_unavailable on every retailer
	// storefront: https://www.amazon.com/dp/B0UNAVAIL0.
	UnavailableASIN = "B0UNAVAIL0"
	// UnavailableEbayItem previews as product_unavailable on every auction
	// site: https://www.ebay.com/itm/999999999999.
	UnavailableEbayItem = "999999999999"
	// FailSourcingASIN previews and carts as an ordinary in-stock product;
	// it is the sandbox fulfiller that refuses it after payment, so the
	// paid-but-unsourceable path (order failed, refund due) can be tested.
	FailSourcingASIN = "B0FAILSRC0"
)

// Sandbox prices lie in [minPriceCents, maxPriceCents]: wide enough to show
// shipping, tax and fee rules at work, never zero.
const (
	minPriceCents = 500
	maxPriceCents = 50000
)

// imageBase is where sandbox product images are served; the host belongs
// to Memocart, so test-mode responses never point at a marketplace.
const imageBase = "https://sandbox.memocart.dev/img/"

// Catalog is the test-mode product catalog. It answers for any well-formed
// product reference with an invented, stable product: the same product
// always has the same title, price and image, whichever URL form named it.
// The zero value is ready to use and safe for concurrent use.
type Catalog struct{}

// NewCatalog returns a sandbox catalog.
func NewCatalog() *Catalog { return &Catalog{} }

// Product returns the sandbox product ref names. Short links resolve to an
// ASIN derived from their code (see ShortLinkASIN). The reserved
// UnavailableASIN and UnavailableEbayItem return an error wrapping
// models.ErrProductUnavailable; a ref no parser would produce returns an
// invalid_url error.
func (c *Catalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	if err := ctx.Err(); err != nil {
		return models.Product{}, err
	}
	id, host, err := resolve(ref)
	if err != nil {
		return models.Product{}, err
	}
	var productURL string
	switch ref.Marketplace {
	case models.MarketplaceAmazon:
		if id == UnavailableASIN {
			return models.Product{}, unavailable(ref.Marketplace, id)
		}
		productURL = "https://" + host + "/dp/" + id
	case models.MarketplaceEbay:
		if id == UnavailableEbayItem {
			return models.Product{}, unavailable(ref.Marketplace, id)
		}
		productURL = "https://" + host + "/itm/" + id
	}

	// Everything invented hangs off marketplace and id only, never the URL
	// or host, so /dp/X, /slug/dp/X and amazon.de/dp/X are one product.
	sum := sha256.Sum256([]byte(string(ref.Marketplace) + ":" + id))
	cents := minPriceCents + int64(binary.BigEndian.Uint64(sum[:8])%(maxPriceCents-minPriceCents+1))
	return models.Product{
		Marketplace: ref.Marketplace,
		ID:          id,
		Title:       "Sandbox " + upstreamtest.InventedName(sum[8], sum[9]) + " " + id,
		ImageURL:    imageBase + string(ref.Marketplace) + "/" + id + ".jpg",
		ProductURL:  productURL,
		Currency:    "USD",
		// Built from integer cents: a float never touches the price.
		Price:        decimal.New(cents, -2),
		Availability: models.InStock,
		UpstreamID:   id,
		Listing:      "sandbox",
	}, nil
}

// resolve returns the product id and the storefront host a ref names,
// resolving short links.
func resolve(ref models.ProductRef) (id, host string, err error) {
	switch ref.Marketplace {
	case models.MarketplaceAmazon:
		if ref.IsShortLink() {
			host, ok := shortLinkStorefront[ref.Host]
			if !ok {
				return "", "", badRef("unknown short-link host")
			}
			return ShortLinkASIN(ref.ShortCode), host, nil
		}
		if !models.IsASIN(ref.ID) {
			return "", "", badRef("malformed product id")
		}
		return ref.ID, hostOr(ref.Host, "www.amazon.com"), nil
	case models.MarketplaceEbay:
		if !models.IsEbayItemID(ref.ID) {
			return "", "", badRef("malformed item id")
		}
		return ref.ID, hostOr(ref.Host, "www.ebay.com"), nil
	default:
		return "", "", badRef("unknown marketplace")
	}
}

// shortLinkStorefront is the storefront each short-link host resolves to in
// the sandbox.
var shortLinkStorefront = upstreamtest.ShortLinkStorefronts()

// ShortLinkASIN returns the ASIN the sandbox resolves a short-link code to:
// "B0" followed by eight characters derived from a hash of the code, the
// shape of modern ASINs. The code is case-sensitive, as on the real
// short-link services. Exported so tests elsewhere can predict it.
func ShortLinkASIN(code string) string {
	return upstreamtest.InventedASIN("shortlink:" + code)
}

func unavailable(m models.Marketplace, id string) error {
	return fmt.Errorf("sandbox catalog: %s product %s: %w", m, id, models.NewError(models.CodeProductUnavailable))
}

// badRef reports a ref that ParseProductURL would never have produced. It
// carries invalid_url so a client still gets the contract's answer.
func badRef(why string) error {
	return models.Errorf(models.CodeInvalidURL, "%s: %s", models.DefaultMessage(models.CodeInvalidURL), why)
}

func hostOr(host, fallback string) string {
	if host == "" {
		return fallback
	}
	return host
}
