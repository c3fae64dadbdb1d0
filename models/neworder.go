package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// OrderTerms is everything besides the cart that an order is built from:
// who orders, what they asked for (validated), where payers pay, and the
// exchange rate locked for an asset not quoted 1:1.
type OrderTerms struct {
	ID        string // minted by the caller
	AccountID string
	Mode      Mode
	Email     string          // validated (ValidateEmail)
	Asset     Asset           // LookupAsset
	Address   ShippingAddress // validated (ValidateAddress)
	// Metadata is the order request's (ValidateMetadata), merged over the
	// cart's.
	Metadata map[string]string
	// RefundDestination is where money owed back goes, if the client said
	// (ValidateRefundDestination); nil otherwise.
	RefundDestination *RefundDestination

	PayTo      string // receiving account
	Network    string // pubnet, testnet or sandbox
	USDCIssuer string

	// Rate is the asset's price in the cart's currency, for assets quoted
	// at a rate (XLM); nil for those quoted 1:1.
	Rate *Rate

	Now    time.Time
	Window time.Duration // time to pay
}

// BuildOrder turns a usable cart into a new order, waiting for payment. It
// is the one place an order's terms are decided:
//   - the destination must be the cart's: shipping and tax were priced for it;
//   - the recipient needs a given and a family name, which the buying
//     provider requires (a test order is built the same way, so test
//     integrations meet the rule before they go live); a live order also
//     needs a phone number;
//   - the amount to pay is the cart's total in the asset (1:1 for USDC, at
//     the locked rate for XLM), payable until Now+Window;
//   - the metadata is the cart's with the request's merged over it
//     (MergeMetadata), at most MaxMetadataKeys keys in all;
//   - the supplier budget is what the customer pays for the goods:
//     subtotal, shipping and tax, without Memocart's service fee. The buying
//     provider may spend at most that, so a price rise after the cart was
//     priced fails the order (money back) instead of costing more than was
//     collected.
//
// The order number and memo are minted by the store, which can retry on a
// collision.
func BuildOrder(cart Cart, t OrderTerms) (Order, error) {
	if cart.ShipToCountry != t.Address.Country {
		return Order{}, FieldError(CodeInvalidAddress, "shipping_address.country",
			"shipping_address.country must be the cart's destination, %s", cart.ShipToCountry)
	}
	if _, _, ok := SplitName(t.Address.Name); !ok {
		return Order{}, FieldError(CodeInvalidAddress, "shipping_address.name",
			"shipping_address.name must hold a given name and a family name")
	}
	// The buying provider requires a phone number for the carrier; a live
	// order without one would be refused after payment.
	if t.Mode == ModeLive && t.Address.Phone == "" {
		return Order{}, FieldError(CodeInvalidAddress, "shipping_address.phone",
			"shipping_address.phone is required for live orders")
	}
	metadata, err := MergeMetadata(cart.Metadata, t.Metadata)
	if err != nil {
		return Order{}, err
	}
	o := Order{
		ID: t.ID, AccountID: t.AccountID, Mode: t.Mode, CartID: cart.ID,
		Status: OrderCreated, PaymentStatus: PaymentPending,
		CustomerEmail: t.Email, Address: t.Address, Currency: cart.Currency, Total: cart.Total,
		PaymentAsset: t.Asset.Code, PaymentAddress: t.PayTo, PaymentNetwork: t.Network,
		PaymentMemoType: "text", PaymentExpiresAt: t.Now.Add(t.Window), AmountReceived: decimal.Zero,
		SupplierBudget: cart.Subtotal.Add(cart.Shipping).Add(cart.Tax),
		CreatedAt:      t.Now, UpdatedAt: t.Now, Metadata: metadata,
		RefundDestination: t.RefundDestination,
	}
	if t.Rate != nil {
		if cart.Currency != t.Rate.Quote {
			return Order{}, FieldError(CodeUnsupportedAsset, "payment_asset",
				"%s cannot be quoted for a %s cart yet", t.Asset.Code, cart.Currency)
		}
		if o.PaymentAmount, err = QuoteXLM(cart.Total, t.Rate.Price); err != nil {
			return Order{}, err
		}
		at := t.Rate.At
		o.RatePrice, o.RateSource, o.RateAt = t.Rate.Price, t.Rate.Source, &at
		return o, nil
	}
	if o.PaymentAmount, err = QuoteAmount(t.Asset, cart.Total, cart.Currency); err != nil {
		return Order{}, err
	}
	o.PaymentAssetIssuer = t.USDCIssuer
	return o, nil
}
