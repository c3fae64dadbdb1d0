package ebay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
)

// Messages API clients see. Plain words: they never carry eBay's own text,
// which may change, leak internals or be in another language.
const (
	msgNotConfigured   = "Live product data from eBay is not configured on this deployment"
	msgUnavailable     = "eBay product data is unavailable right now; retry later"
	msgAuction         = "This listing is an auction; only Buy It Now listings can be bought"
	msgNoPrice         = "This listing has no Buy It Now price"
	msgEnded           = "This listing has ended"
	msgOutOfStock      = "This item is out of stock"
	msgPickupOnly      = "This item can only be collected from the seller, not shipped"
	msgNotFound        = "This item does not exist or was removed"
	msgNeedsVariation  = "This listing has several variations (such as sizes or colours); link the one you want, using the item link that ends in ?var=<variation id>"
	msgNotBuyableNow   = "This item cannot be bought right now; try again in a few minutes"
	msgSiteUnsupported = "Live product data is not available for this eBay site"
	msgBadListing      = "This listing cannot be priced"
)

// eBay's errorIds the catalog tells apart (Browse API getItemByLegacyId).
const (
	errIDItemNotFound     = 11001 // the specified item id was not found
	errIDLegacyNotFound   = 11003 // the specified legacy item id was not found
	errIDNotAvailable     = 11004 // not available for purchase now (e.g. being revised)
	errIDItemGroup        = 11006 // a multi-variation listing: legacy_variation_id is required
	errIDMarketplaceUnsup = 11011 // the marketplace id is not supported
)

// The slice of the Browse API's Item schema the catalog reads. Amounts are
// decimal strings in eBay's JSON and stay strings until decimal parses
// them: a float never touches a price.
type (
	amount struct {
		Value    string `json:"value"`
		Currency string `json:"currency"`
	}
	estimatedAvailability struct {
		DeliveryOptions             []string `json:"deliveryOptions"`
		EstimatedAvailabilityStatus string   `json:"estimatedAvailabilityStatus"`
		// Absent when the seller shows "More than 10 available".
		EstimatedAvailableQuantity *int `json:"estimatedAvailableQuantity"`
	}
	item struct {
		ItemID       string  `json:"itemId"` // v1|<legacy id>|<variation id or 0>
		LegacyItemID string  `json:"legacyItemId"`
		Title        string  `json:"title"`
		Price        *amount `json:"price"` // absent on an auction without Buy It Now
		Image        *struct {
			ImageURL string `json:"imageUrl"`
		} `json:"image"`
		ItemWebURL              string                  `json:"itemWebUrl"`
		BuyingOptions           []string                `json:"buyingOptions"`
		CurrentBidPrice         *amount                 `json:"currentBidPrice"`
		BidCount                int                     `json:"bidCount"`
		ItemEndDate             string                  `json:"itemEndDate"`
		EstimatedAvailabilities []estimatedAvailability `json:"estimatedAvailabilities"`
		Condition               string                  `json:"condition"`
		Seller                  struct {
			Username string `json:"username"`
		} `json:"seller"`
	}
	// apiError is one entry of eBay's {"errors":[...]} body.
	apiError struct {
		ErrorID  int    `json:"errorId"`
		Domain   string `json:"domain"`
		Category string `json:"category"`
		// message, longMessage and parameters are not read: they are
		// eBay's words, not ours to show, and ids are what is stable.
	}
)

// upstreamError is an answer from eBay (or its absence) that is neither
// an item nor a refusal the catalog understands: rate limits, outages,
// rejected tokens, malformed bodies, network failures.
type upstreamError struct {
	Status     int   // 0 when no HTTP answer arrived
	ErrorIDs   []int // from the errors body, if any
	RetryAfter time.Duration
	Err        error // transport or decoding failure
	// final is what a non-retryable failure means to the API client.
	final *models.Error
}

func (e *upstreamError) Error() string {
	var b strings.Builder
	b.WriteString("ebay browse: ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "answered %d %s", e.Status, http.StatusText(e.Status))
	} else {
		b.WriteString("no answer")
	}
	if len(e.ErrorIDs) > 0 {
		fmt.Fprintf(&b, " (errorId %v)", e.ErrorIDs)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *upstreamError) Unwrap() []error {
	var errs []error
	if e.final != nil {
		errs = append(errs, e.final)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// retryable reports whether the same request may succeed later: throttling
// (eBay's quota refusals are 429 too), server errors, no answer at all.
// Retryable, HTTPStatus and RetryAfterWait make it an upstream.Failure.
func (e *upstreamError) Retryable() bool {
	return e.final == nil && (e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500 ||
		(e.Status == http.StatusOK && e.Err != nil))
}

func (e *upstreamError) HTTPStatus() int               { return e.Status }
func (e *upstreamError) RetryAfterWait() time.Duration { return e.RetryAfter }

// readAnswer interprets one getItemByLegacyId answer for ref. It returns
// the product, a *models.Error for a listing that exists but cannot be
// bought (or does not exist), or an *upstreamError for everything else.
// now decides whether the listing has ended.
func readAnswer(ref models.ProductRef, status int, body []byte, now time.Time) (models.Product, error) {
	if status == http.StatusOK {
		var it item
		if err := json.Unmarshal(body, &it); err != nil {
			return models.Product{}, &upstreamError{Status: status, Err: fmt.Errorf("decoding item: %w", err)}
		}
		return productFrom(ref, it, now)
	}

	ids := errorIDs(body)
	has := func(id int) bool { return slices.Contains(ids, id) }
	ue := &upstreamError{Status: status, ErrorIDs: ids}
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusTooManyRequests, status >= 500:
		return models.Product{}, ue
	case status == http.StatusNotFound, has(errIDLegacyNotFound), has(errIDItemNotFound):
		return models.Product{}, unavailable(msgNotFound)
	case has(errIDItemGroup):
		return models.Product{}, unavailable(msgNeedsVariation)
	case has(errIDNotAvailable):
		return models.Product{}, unavailable(msgNotBuyableNow)
	case has(errIDMarketplaceUnsup):
		ue.final = unavailable(msgSiteUnsupported)
		return models.Product{}, ue
	case status >= 400:
		// A refusal of this listing that eBay does not document for this
		// call: the link is the likeliest culprit, retrying will not help.
		ue.final = models.NewError(models.CodeProductUnavailable)
		return models.Product{}, ue
	default:
		ue.final = models.Errorf(models.CodeMarketplaceUnavailable, msgUnavailable)
		return models.Product{}, ue
	}
}

// errorIDs returns the errorIds of an eBay errors body, nil if the body is
// not one.
func errorIDs(body []byte) []int {
	var b struct {
		Errors []apiError `json:"errors"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	ids := make([]int, 0, len(b.Errors))
	for _, e := range b.Errors {
		ids = append(ids, e.ErrorID)
	}
	return ids
}

// productFrom maps a listing to a product, refusing what cannot be bought
// at a fixed price right now. The order of the checks decides which reason
// a client hears when several apply: an ended auction has ended.
func productFrom(ref models.ProductRef, it item, now time.Time) (models.Product, error) {
	if end, ok := parseTime(it.ItemEndDate); ok && !now.Before(end) {
		return models.Product{}, unavailable(msgEnded)
	}
	if !slices.Contains(it.BuyingOptions, "FIXED_PRICE") {
		if slices.Contains(it.BuyingOptions, "AUCTION") {
			return models.Product{}, unavailable(msgAuction)
		}
		return models.Product{}, unavailable(msgNoPrice)
	}
	if it.Price == nil || it.Price.Value == "" {
		return models.Product{}, unavailable(msgNoPrice)
	}
	if err := checkAvailability(it.EstimatedAvailabilities); err != nil {
		return models.Product{}, err
	}
	price, err := models.ParseAmount(it.Price.Value, models.MaxPriceDigits, models.MaxAmountDecimals)
	if err != nil || !price.IsPositive() || !models.IsCurrencyCode(it.Price.Currency) {
		return models.Product{}, unavailable(msgBadListing)
	}

	title := strings.TrimSpace(it.Title)
	if title == "" {
		title = "eBay item " + ref.ID
	}
	productURL := ref.URL
	if productURL == "" {
		productURL = canonicalURL(ref)
	}
	var imageURL string
	if it.Image != nil {
		imageURL = it.Image.ImageURL
	}
	return models.Product{
		Marketplace:  models.MarketplaceEbay,
		ID:           ref.ID,
		Title:        title,
		ImageURL:     imageURL,
		ProductURL:   productURL,
		Currency:     it.Price.Currency,
		Price:        price,
		Availability: models.InStock,
		UpstreamID:   it.ItemID,
		Variation:    ref.Variation,
		Listing:      it.Seller.Username,
	}, nil
}

// checkAvailability refuses a listing that no shippable delivery option
// has in stock. Only IN_STOCK and LIMITED_STOCK count as buyable, so a
// status eBay adds later is refused rather than sold blind; a missing
// quantity (the seller shows "more than 10") is not a zero.
func checkAvailability(avs []estimatedAvailability) error {
	if len(avs) == 0 {
		// eBay sends an estimate for every live listing; without one there
		// is nothing to refuse on, and the buying step checks again.
		return nil
	}
	shippable := false
	for _, av := range avs {
		if len(av.DeliveryOptions) > 0 && !slices.Contains(av.DeliveryOptions, "SHIP_TO_HOME") {
			continue
		}
		shippable = true
		switch av.EstimatedAvailabilityStatus {
		case "IN_STOCK", "LIMITED_STOCK":
			if av.EstimatedAvailableQuantity == nil || *av.EstimatedAvailableQuantity > 0 {
				return nil
			}
		}
	}
	if !shippable {
		return unavailable(msgPickupOnly)
	}
	return unavailable(msgOutOfStock)
}

func unavailable(msg string) *models.Error {
	return models.Errorf(models.CodeProductUnavailable, "%s", msg)
}

// parseTime reads eBay's timestamps ("2026-05-16T19:13:42.000Z").
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// canonicalURL rebuilds a ref's URL when a caller built the ref by hand.
func canonicalURL(ref models.ProductRef) string {
	host := ref.Host
	if host == "" {
		host = "www.ebay.com"
	}
	u := "https://" + host + "/itm/" + ref.ID
	if ref.Variation != "" {
		u += "?var=" + ref.Variation
	}
	return u
}
