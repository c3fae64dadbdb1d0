package creatorstest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
)

// Reserved ASINs. See the package comment for what each answers.
const (
	OutOfStockASIN   = "B0CATOOS01"
	PreorderASIN     = "B0CATPRE01"
	NoOffersASIN     = "B0CATNOOF1"
	NoPriceASIN      = "B0CATNOPR1"
	NotFoundASIN     = "B0CATNF001"
	BuyBoxSecondASIN = "B0CATBBX01"
	ScarceASIN       = "B0CATSCR01"
	SlowASIN         = "B0CATSLW01"
	PrimeDealASIN    = "B0CATPRM01"
	PrimeOnlyASIN    = "B0CATPRM02"
)

// The offers of PrimeDealASIN: the buy-box winner at a Prime-exclusive
// deal price, and the standard offer. PrimeOnlyASIN has only the deal
// offer, at PrimeDealPrice.
const (
	PrimeDealPrice     = "29.99"
	PrimeStandardPrice = "39.99"
)

// The two offers of BuyBoxSecondASIN: the first listed is a reseller's and
// dearer, the second is the buy-box winner. Amounts as served.
const (
	BuyBoxOtherPrice  = "49.99"
	BuyBoxWinnerPrice = "44.5"
)

// Item is what the server answers for an ASIN, as SetItem describes it.
// Empty fields take defaults: the title, image and merchant derived from
// the ASIN and storefront; no Listings means one new, in-stock buy-box
// offer at the price Price reports.
type Item struct {
	Title    string
	ImageURL string
	// Listings are served in order, as offersV2.listings.
	Listings []Listing
	// NoOffers serves the item without offersV2 at all, as Amazon does for
	// an item nobody currently sells.
	NoOffers bool
	// NotFound leaves the item out of the items and reports it in the
	// errors list with code ItemNotAccessible.
	NotFound bool
	// Delay holds the whole response back this long.
	Delay time.Duration
}

// Listing is one offer of an Item. Empty fields take defaults, except
// Price: "" serves the listing without a price.
type Listing struct {
	// Price is served verbatim as the JSON number price.money.amount, so
	// it must be a JSON number literal ("19.99", "8.7", "2980").
	Price    string
	Currency string // default: the storefront's
	// Availability is availability.type: IN_STOCK (default),
	// IN_STOCK_SCARCE, OUT_OF_STOCK, PREORDER, LEADTIME, AVAILABLE_DATE,
	// UNAVAILABLE or UNKNOWN.
	Availability string
	BuyBoxWinner bool
	Condition    string // condition.value, default New
	MerchantName string // default Amazon.<tld>
	MerchantID   string
	// DealAccessType, when set, serves dealDetails.accessType: who may
	// buy at this price (ALL, PRIME_EXCLUSIVE, PRIME_EARLY_ACCESS).
	DealAccessType string
}

// storefronts maps each storefront the API serves (without "www.") to the
// currency it prices in.
var storefronts = map[string]string{
	"amazon.com": "USD", "amazon.ca": "CAD", "amazon.com.mx": "MXN", "amazon.com.br": "BRL",
	"amazon.co.uk": "GBP", "amazon.de": "EUR", "amazon.fr": "EUR", "amazon.it": "EUR",
	"amazon.es": "EUR", "amazon.nl": "EUR", "amazon.se": "SEK", "amazon.pl": "PLN",
	"amazon.com.tr": "TRY", "amazon.ae": "AED", "amazon.sa": "SAR", "amazon.eg": "EGP",
	"amazon.in": "INR", "amazon.ie": "EUR", "amazon.com.be": "EUR",
	"amazon.co.jp": "JPY", "amazon.sg": "SGD", "amazon.com.au": "AUD",
}

// wholeCurrencies are priced without minor units.
var wholeCurrencies = map[string]bool{"JPY": true}

// Hashed prices lie in [minPriceCents, maxPriceCents] minor units (whole
// units for JPY).
const (
	minPriceCents = 500
	maxPriceCents = 50000
)

// imageBase is under a reserved TLD: test data never points at Amazon.
const imageBase = "https://images.creatorstest.invalid/I/"

// Price returns the amount and currency the server prices an ordinary
// ASIN at on a marketplace ("www.amazon.de"): derived from a hash of the
// ASIN, the same number on every storefront, in that storefront's
// currency. The amount is formatted as Amazon's JSON numbers are, without
// trailing zeros ("19.9", "120").
func Price(asin, marketplace string) (amount, currency string) {
	currency = storefronts[strings.TrimPrefix(marketplace, "www.")]
	if currency == "" {
		currency = "USD"
	}
	sum := sha256.Sum256([]byte("creatorstest:" + asin))
	minor := minPriceCents + binary.BigEndian.Uint64(sum[:8])%(maxPriceCents-minPriceCents+1)
	if wholeCurrencies[currency] {
		return strconv.FormatUint(minor, 10), currency
	}
	s := fmt.Sprintf("%d.%02d", minor/100, minor%100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s, currency
}

// Title returns the title the server gives an ordinary ASIN.
func Title(asin string) string {
	sum := sha256.Sum256([]byte("creatorstest:" + asin))
	return "Creators Test " + upstreamtest.InventedName(sum[8], sum[9]) + " " + asin
}

// ImageURL returns the primary large image the server gives an ordinary
// ASIN.
func ImageURL(asin string) string { return imageBase + asin + "._SL500_.jpg" }

// magicItem returns what a reserved ASIN answers on a storefront.
func magicItem(asin, bare string) (Item, bool) {
	amount, _ := Price(asin, "www."+bare)
	switch asin {
	case OutOfStockASIN:
		return Item{Listings: []Listing{{Price: amount, Availability: "OUT_OF_STOCK", BuyBoxWinner: true}}}, true
	case PreorderASIN:
		return Item{Listings: []Listing{{Price: amount, Availability: "PREORDER", BuyBoxWinner: true}}}, true
	case NoOffersASIN:
		return Item{NoOffers: true}, true
	case NoPriceASIN:
		return Item{Listings: []Listing{{Availability: "IN_STOCK", BuyBoxWinner: true}}}, true
	case NotFoundASIN:
		return Item{NotFound: true}, true
	case BuyBoxSecondASIN:
		return Item{Listings: []Listing{
			{Price: BuyBoxOtherPrice, MerchantName: "Creators Test Reseller", MerchantID: "A2CREATORSTEST"},
			{Price: BuyBoxWinnerPrice, BuyBoxWinner: true},
		}}, true
	case ScarceASIN:
		return Item{Listings: []Listing{{Price: amount, Availability: "IN_STOCK_SCARCE", BuyBoxWinner: true}}}, true
	case SlowASIN:
		return Item{}, true // the delay is the server's SetSlowDelay
	case PrimeDealASIN:
		return Item{Listings: []Listing{
			{Price: PrimeDealPrice, BuyBoxWinner: true, DealAccessType: "PRIME_EXCLUSIVE"},
			{Price: PrimeStandardPrice},
		}}, true
	case PrimeOnlyASIN:
		return Item{Listings: []Listing{{Price: PrimeDealPrice, BuyBoxWinner: true, DealAccessType: "PRIME_EXCLUSIVE"}}}, true
	}
	return Item{}, false
}

// resolved fills in an item's defaults for a storefront.
func resolved(asin, bare string, it Item) Item {
	amount, currency := Price(asin, "www."+bare)
	if it.Title == "" {
		it.Title = Title(asin)
	}
	if it.ImageURL == "" {
		it.ImageURL = ImageURL(asin)
	}
	if len(it.Listings) == 0 {
		it.Listings = []Listing{{Price: amount, BuyBoxWinner: true}}
	} else {
		it.Listings = append([]Listing(nil), it.Listings...)
	}
	for i := range it.Listings {
		l := &it.Listings[i]
		if l.Currency == "" {
			l.Currency = currency
		}
		if l.Availability == "" {
			l.Availability = "IN_STOCK"
		}
		if l.Condition == "" {
			l.Condition = "New"
		}
		if l.MerchantName == "" {
			l.MerchantName = merchantName(bare)
		}
		if l.MerchantID == "" {
			l.MerchantID = "A1CREATORSTEST"
		}
	}
	return it
}

// merchantName is how Amazon names itself as a seller on a storefront:
// "Amazon.com", "Amazon.co.uk", "Amazon.de".
func merchantName(bare string) string {
	return "A" + strings.TrimPrefix(bare, "a")
}

// availabilityMessages are the texts Amazon shows with each availability
// type; clients must not rely on them.
var availabilityMessages = map[string]string{
	"IN_STOCK":        "In Stock",
	"IN_STOCK_SCARCE": "Only 3 left in stock - order soon.",
	"OUT_OF_STOCK":    "Currently unavailable.",
	"PREORDER":        "This item will be released on a future date.",
	"LEADTIME":        "Usually ships within 3 to 4 weeks.",
	"AVAILABLE_DATE":  "This item will be available on a future date.",
	"UNAVAILABLE":     "Currently unavailable.",
}

// displayAmount formats an amount roughly as Amazon displays it.
func displayAmount(amount, currency string) string {
	switch currency {
	case "USD":
		return "$" + amount
	case "GBP":
		return "£" + amount
	case "EUR":
		return strings.Replace(amount, ".", ",", 1) + " €"
	case "JPY":
		return "￥" + amount
	}
	return currency + " " + amount
}
