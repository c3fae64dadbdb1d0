package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// CartStatus is the lifecycle state of a cart.
type CartStatus string

// Cart statuses. A cart is ready until it expires or an order is made from
// it; expiry is computed from ExpiresAt, never stored, so it needs no job.
const (
	CartReady   CartStatus = "ready"
	CartOrdered CartStatus = "ordered"
)

// Cart quantity and size bounds. They keep a single cart within what one
// order can sensibly source, and the API documents them.
const (
	MaxCartItems    = 20
	MaxItemQuantity = 10
)

// DefaultCartTTL is how long a cart stays usable after creation.
const DefaultCartTTL = 30 * time.Minute

// CartLine is one product and quantity to be priced.
type CartLine struct {
	Product  Product
	Quantity int
}

// CartItem is a priced cart line as stored and returned.
type CartItem struct {
	ProductURL  string
	Marketplace Marketplace
	ProductID   string
	Title       string
	ImageURL    string
	Quantity    int
	UnitPrice   decimal.Decimal
	LineTotal   decimal.Decimal
	// Snapshot of the priced listing (see Product).
	Currency   string
	UpstreamID string
	Variation  string
	Listing    string
}

// Quote is the priced breakdown of a cart. Every component is rounded to
// the currency's minor unit and Total is exactly their sum.
type Quote struct {
	Currency   string
	Subtotal   decimal.Decimal
	Shipping   decimal.Decimal
	Tax        decimal.Decimal
	ServiceFee decimal.Decimal
	Total      decimal.Decimal
}

// Cart is a priced set of items for one destination, owned by one account
// in one mode.
type Cart struct {
	ID               string
	AccountID        string
	Mode             Mode
	Status           CartStatus
	ShipToCountry    string
	ShipToPostalCode string
	Quote
	Items     []CartItem
	CreatedAt time.Time
	ExpiresAt time.Time
	// Metadata is the client's own (ValidateMetadata); nil when none.
	Metadata map[string]string
}

// Usable reports whether an order can still be created from the cart at now.
func (c Cart) Usable(now time.Time) bool {
	return c.Status == CartReady && now.Before(c.ExpiresAt)
}
