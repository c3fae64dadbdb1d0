package amazon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
)

// resources are what getItems is asked to return: the title, the main
// image and, of every offer, what decides whether and at what price it can
// be bought. isBuyBoxWinner is a resource of its own: without it every
// offer would look like a loser.
var resources = []string{
	"itemInfo.title",
	"images.primary.large",
	"offersV2.listings.price",
	"offersV2.listings.availability",
	"offersV2.listings.condition",
	"offersV2.listings.isBuyBoxWinner",
	"offersV2.listings.merchantInfo",
	"offersV2.listings.dealDetails",
}

// getItemsRequest is getItems' body.
type getItemsRequest struct {
	ItemIDs    []string `json:"itemIds"`
	ItemIDType string   `json:"itemIdType"`
	PartnerTag string   `json:"partnerTag"`
	Resources  []string `json:"resources"`
}

// getItemsResponse is the part of getItems' answer the catalog reads. The
// result container has two spellings: Amazon's GetItems reference page
// says itemResults, its SDK and cURL page itemsResult; either is read.
// errors[] lists the items that could not be returned (a partial answer).
// A failed call has a top-level error body instead (errorBody).
type getItemsResponse struct {
	ItemsResult *itemsResult `json:"itemsResult"`
	ItemResults *itemsResult `json:"itemResults"`
	Errors      []apiError   `json:"errors"`
}

type itemsResult struct {
	Items []item `json:"items"`
}

// items returns the items of whichever container the answer used.
func (r getItemsResponse) items() []item {
	var out []item
	if r.ItemsResult != nil {
		out = append(out, r.ItemsResult.Items...)
	}
	if r.ItemResults != nil {
		out = append(out, r.ItemResults.Items...)
	}
	return out
}

type apiError struct {
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// errorBody is the top-level error body of a failed call: 404
// ResourceNotFoundException (no requested item is accessible), 400
// ValidationException (with fieldList), 401, 403 AccessDeniedException,
// 429 ThrottleException (with retryAfterSeconds).
type errorBody struct {
	Type              string   `json:"type"`
	Message           string   `json:"message"`
	Reason            string   `json:"reason"`
	FieldList         []string `json:"fieldList"`
	ResourceType      string   `json:"resourceType"`
	RetryAfterSeconds *int64   `json:"retryAfterSeconds"`
}

type item struct {
	ASIN          string `json:"asin"`
	DetailPageURL string `json:"detailPageURL"`
	ItemInfo      struct {
		Title struct {
			DisplayValue string `json:"displayValue"`
		} `json:"title"`
	} `json:"itemInfo"`
	Images struct {
		Primary struct {
			Large struct {
				URL string `json:"url"`
			} `json:"large"`
		} `json:"primary"`
	} `json:"images"`
	OffersV2 *struct {
		Listings []listing `json:"listings"`
	} `json:"offersV2"`
}

type listing struct {
	Price *struct {
		Money *struct {
			// Amount is a JSON number: decoded as its literal, never
			// through a float.
			Amount   json.Number `json:"amount"`
			Currency string      `json:"currency"`
		} `json:"money"`
	} `json:"price"`
	Availability *struct {
		Type string `json:"type"`
	} `json:"availability"`
	IsBuyBoxWinner bool `json:"isBuyBoxWinner"`
	DealDetails    *struct {
		AccessType string `json:"accessType"`
	} `json:"dealDetails"`
	MerchantInfo *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"merchantInfo"`
}

// itemErrorCodes are the error codes that are answers about an item (it
// does not exist, or not for this API) rather than about the call.
var itemErrorCodes = map[string]bool{
	"ItemNotAccessible":         true,
	"InvalidParameterValue":     true, // a malformed or unknown ItemId
	"ResourceNotFoundException": true,
	"ItemNotFound":              true,
	"NoResults":                 true,
}

// upstreamError is a getItems or token call that did not produce an answer
// about the product: throttled, failed, refused or unreadable. Product
// decides from Status whether to retry.
type upstreamError struct {
	Status     int           // 0: no response (network error, timeout)
	RetryAfter time.Duration // from retryAfterSeconds or a Retry-After header
	Codes      []string      // the API's error types, reasons and codes: safe to log
	Fields     []string      // a ValidationException's fieldList: safe to log
	Err        error
}

func (e *upstreamError) Error() string {
	msg := "amazon: "
	if e.Status != 0 {
		msg += fmt.Sprintf("HTTP %d", e.Status)
	} else {
		msg += "no response"
	}
	if len(e.Codes) > 0 {
		msg += " (" + strings.Join(e.Codes, ", ") + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *upstreamError) Unwrap() error { return e.Err }

// retryable reports whether another attempt may succeed: throttling,
// server errors and calls that got no response.
// Retryable, HTTPStatus and RetryAfterWait make it an upstream.Failure.
func (e *upstreamError) Retryable() bool {
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

func (e *upstreamError) HTTPStatus() int               { return e.Status }
func (e *upstreamError) RetryAfterWait() time.Duration { return e.RetryAfter }

// readAnswer interprets a getItems response about asin on sf. An answer
// about the product (found, not buyable, unknown) is a Product or a
// product_unavailable error; anything else is an *upstreamError.
func readAnswer(status int, body []byte, asin string, sf storefront) (models.Product, error) {
	if status != http.StatusOK {
		return models.Product{}, failedCall(status, body, asin)
	}
	var resp getItemsResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return models.Product{}, &upstreamError{Status: status, Err: fmt.Errorf("decoding getItems answer: %w", err)}
	}
	for _, it := range resp.items() {
		if strings.EqualFold(it.ASIN, asin) {
			return itemProduct(it, asin, sf)
		}
	}
	// Asked for, answered without it: an error names why, or the API just
	// left it out. Either way the product cannot be looked up. An errors
	// list about the call itself (a 200 is not expected with one) is not
	// an answer about the product.
	if len(resp.Errors) > 0 && !aboutItems(resp.Errors) {
		return models.Product{}, &upstreamError{Status: status, Codes: errorCodes(resp.Errors), Err: errors.New("getItems answered errors about the call")}
	}
	return models.Product{}, notFound(asin)
}

// failedCall interprets a getItems answer that is not a 200. A 404
// ResourceNotFoundException means none of the ids is accessible: an
// answer about the product, not an outage. Everything else is an
// *upstreamError carrying the body's type and reason for the logs and its
// retryAfterSeconds for the retry.
func failedCall(status int, body []byte, asin string) error {
	var eb errorBody
	var list getItemsResponse
	_ = json.Unmarshal(body, &eb)
	_ = json.Unmarshal(body, &list)
	if status == http.StatusNotFound && (eb.Type == "ResourceNotFoundException" || aboutItems(list.Errors)) {
		return notFound(asin)
	}
	ue := &upstreamError{Status: status, Fields: eb.FieldList}
	for _, c := range []string{eb.Type, eb.Reason} {
		if c != "" {
			ue.Codes = append(ue.Codes, c)
		}
	}
	ue.Codes = append(ue.Codes, errorCodes(list.Errors)...)
	if s := eb.RetryAfterSeconds; s != nil && *s > 0 {
		ue.RetryAfter = time.Duration(min(*s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	return ue
}

// maxRetryAfter caps a retryAfterSeconds, so a huge one cannot overflow;
// any wait that long is answered at once anyway.
const maxRetryAfter = 24 * time.Hour

// itemProduct turns an item into a Product, or says why it cannot be bought.
func itemProduct(it item, asin string, sf storefront) (models.Product, error) {
	var offers []listing
	if it.OffersV2 != nil {
		offers = it.OffersV2.Listings
	}
	if len(offers) == 0 {
		return models.Product{}, unavailable(asin, "This product has no offer that can be bought at Amazon")
	}
	offer, ok := standardOffer(offers)
	if !ok {
		return models.Product{}, unavailable(asin,
			"This product is offered at Amazon only at a members-only deal price, which Memocart cannot buy at")
	}
	kind := ""
	if offer.Availability != nil {
		kind = offer.Availability.Type
	}
	switch kind {
	case "IN_STOCK", "IN_STOCK_SCARCE":
	case "OUT_OF_STOCK":
		return models.Product{}, unavailable(asin, "This product is out of stock at Amazon")
	case "PREORDER":
		return models.Product{}, unavailable(asin, "This product is only available for pre-order at Amazon")
	case "LEADTIME":
		return models.Product{}, unavailable(asin, "This product is not in stock at Amazon: it ships only after a lead time")
	case "AVAILABLE_DATE":
		return models.Product{}, unavailable(asin, "This product is not available at Amazon yet")
	case "UNAVAILABLE":
		return models.Product{}, unavailable(asin, "This product is currently unavailable at Amazon")
	default: // UNKNOWN, missing, or a type this code does not know
		return models.Product{}, unavailable(asin, "Amazon does not say this product is in stock")
	}
	if offer.Price == nil || offer.Price.Money == nil || offer.Price.Money.Amount == "" {
		return models.Product{}, unavailable(asin, "This product has no offer that can be bought at Amazon: it has no price")
	}
	price, err := models.ParseAmount(offer.Price.Money.Amount.String(), models.MaxPriceDigits, models.MaxAmountDecimals)
	currency := offer.Price.Money.Currency
	if err != nil || !price.IsPositive() || !models.IsCurrencyCode(currency) {
		return models.Product{}, unavailable(asin, "This product has no offer that can be bought at Amazon: its price is unreadable")
	}
	merchant := ""
	if m := offer.MerchantInfo; m != nil {
		merchant = m.Name
		if merchant == "" {
			merchant = m.ID
		}
	}
	title := strings.TrimSpace(it.ItemInfo.Title.DisplayValue)
	if title == "" {
		title = "Amazon product " + asin
	}
	return models.Product{
		Marketplace:  models.MarketplaceAmazon,
		ID:           asin,
		Title:        title,
		ImageURL:     it.Images.Primary.Large.URL,
		ProductURL:   "https://" + sf.host + "/dp/" + asin,
		Currency:     currency,
		Price:        price,
		Availability: models.InStock,
		UpstreamID:   asin,
		Listing:      merchant,
	}, nil
}

// standardOffer picks the offer a product is quoted at: the buy-box offer
// (the one a shopper gets with "Add to cart"), else the first, Amazon's
// featured one. Offers at a restricted deal price (dealDetails.accessType
// PRIME_EXCLUSIVE, PRIME_EARLY_ACCESS...) are skipped: the buying account
// may not get that price, and quoting it would under-charge the order.
// ok is false when every offer is restricted.
func standardOffer(offers []listing) (listing, bool) {
	var open []listing
	for _, l := range offers {
		if l.DealDetails == nil || l.DealDetails.AccessType == "" || l.DealDetails.AccessType == "ALL" {
			open = append(open, l)
		}
	}
	if len(open) == 0 {
		return listing{}, false
	}
	for _, l := range open {
		if l.IsBuyBoxWinner {
			return l, true
		}
	}
	return open[0], true
}

// aboutItems reports whether errs are all about items, not about the call.
func aboutItems(errs []apiError) bool {
	if len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if !itemErrorCodes[e.Code] {
			return false
		}
	}
	return true
}

func errorCodes(errs []apiError) []string {
	var codes []string
	for _, e := range errs {
		switch {
		case e.Code != "" && e.Type != "":
			codes = append(codes, e.Type+"/"+e.Code)
		case e.Code != "":
			codes = append(codes, e.Code)
		case e.Type != "":
			codes = append(codes, e.Type)
		}
	}
	return codes
}

// unavailable is the answer for a product that cannot be bought; why is
// shown to API clients.
func unavailable(asin, why string) error {
	return fmt.Errorf("amazon: item %s: %w", asin, models.Errorf(models.CodeProductUnavailable, "%s", why))
}

func notFound(asin string) error {
	return unavailable(asin, "This product was not found at Amazon, or Amazon does not provide its data")
}
