package ebay

import "strings"

// marketplaceIDs maps each eBay storefront (without "www.") to the
// X-EBAY-C-MARKETPLACE-ID the Browse API prices its listings for: the
// marketplace decides the currency and the shipping eBay quotes.
//
// Belgium has one marketplace id, EBAY_BE, for both language editions
// (befr. and benl.ebay.be); EBAY_FRBE and EBAY_NLBE are the legacy
// Trading API's site names, not Browse API values. The language only
// changes texts, through Accept-Language, which the catalog does not need.
var marketplaceIDs = map[string]string{
	"ebay.com":    "EBAY_US",
	"ebay.co.uk":  "EBAY_GB",
	"ebay.de":     "EBAY_DE",
	"ebay.ca":     "EBAY_CA",
	"ebay.com.au": "EBAY_AU",
	"ebay.fr":     "EBAY_FR",
	"ebay.it":     "EBAY_IT",
	"ebay.es":     "EBAY_ES",
	"ebay.nl":     "EBAY_NL",
	"ebay.be":     "EBAY_BE",
	"ebay.at":     "EBAY_AT",
	"ebay.ch":     "EBAY_CH",
	"ebay.ie":     "EBAY_IE",
	"ebay.pl":     "EBAY_PL",
	"ebay.com.sg": "EBAY_SG",
	"ebay.com.my": "EBAY_MY",
	"ebay.ph":     "EBAY_PH",
	"ebay.com.hk": "EBAY_HK",
	"ebay.in":     "EBAY_IN",
}

// marketplaceID returns the marketplace id of a ref's host. A ref built
// without a host is a US listing, as an eBay link without a country is.
func marketplaceID(host string) (string, bool) {
	h := strings.ToLower(host)
	switch h {
	case "":
		return "EBAY_US", true
	case "befr.ebay.be", "benl.ebay.be":
		h = "ebay.be"
	}
	if bare, ok := strings.CutPrefix(h, "www."); ok {
		h = bare
	} else if bare, ok := strings.CutPrefix(h, "m."); ok {
		h = bare
	}
	id, ok := marketplaceIDs[h]
	return id, ok
}
