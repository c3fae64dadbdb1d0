package models

import (
	"net/url"
	"strings"
)

// MaxProductURLLength bounds the links ParseProductURL accepts. Real
// product links with tracking parameters stay well below it; anything
// longer is refused before parsing so a hostile body costs nothing.
const MaxProductURLLength = 2048

// amazonHosts lists the retailer's real country storefronts, without
// "www.". An allowlist rather than a pattern: a suffix or substring match
// is exactly what lookalikes (amazon.com.evil.com, notamazon.com) exploit.
var amazonHosts = map[string]bool{
	"amazon.com": true, "amazon.ca": true, "amazon.com.mx": true, "amazon.com.br": true,
	"amazon.co.uk": true, "amazon.de": true, "amazon.fr": true, "amazon.it": true,
	"amazon.es": true, "amazon.nl": true, "amazon.se": true, "amazon.pl": true,
	"amazon.com.be": true, "amazon.com.tr": true, "amazon.ae": true, "amazon.sa": true,
	"amazon.eg": true, "amazon.in": true, "amazon.co.jp": true, "amazon.sg": true,
	"amazon.com.au": true, "amazon.cn": true,
}

// amazonShortHosts maps the retailer's short-link hosts to whether their
// code sits under "/d/" (a.co/d/<code>) or directly at the root
// (amzn.to/<code>).
var amazonShortHosts = map[string]bool{
	"amzn.to":   false,
	"a.co":      true,
	"amzn.eu":   true,
	"amzn.asia": true,
}

// ebayHosts lists the auction marketplace's real country sites, without
// "www." or "m.". The Belgian site also serves its two language editions
// from befr.ebay.be and benl.ebay.be; those are handled in ebaySite.
var ebayHosts = map[string]bool{
	"ebay.com": true, "ebay.ca": true, "ebay.co.uk": true, "ebay.de": true,
	"ebay.fr": true, "ebay.it": true, "ebay.es": true, "ebay.nl": true,
	"ebay.be": true, "ebay.at": true, "ebay.ch": true, "ebay.ie": true,
	"ebay.pl": true, "ebay.com.au": true, "ebay.com.sg": true, "ebay.com.my": true,
	"ebay.ph": true, "ebay.com.hk": true, "ebay.in": true,
}

// ParseProductURL validates a marketplace product link and returns its
// canonical reference. It accepts retailer product pages (/dp/<ASIN>,
// /<slug>/dp/<ASIN>, /gp/product/<ASIN>), retailer short links
// (amzn.to/<code>, a.co/d/<code>, amzn.eu/d/<code>, amzn.asia/d/<code>) and
// auction item pages (/itm/<id>, /itm/<slug>/<id>), on the marketplaces'
// real hosts only. Query strings, fragments and trailing /ref=... segments
// are dropped, so the same product always yields the same ref.
//
// Every failure is an *Error with CodeInvalidURL. The message gives a short
// reason but never echoes the link: it is client input and may be hostile.
func ParseProductURL(raw string) (ProductRef, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ProductRef{}, invalidURL("the link is empty")
	}
	if len(raw) > MaxProductURLLength {
		return ProductRef{}, invalidURL("the link is too long")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ProductRef{}, invalidURL("the link cannot be parsed")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return ProductRef{}, invalidURL("the link must start with https://")
	}
	// User info is how "https://amazon.com@evil.com/" hides its real host
	// from a human reader; no marketplace link carries it.
	if u.User != nil {
		return ProductRef{}, invalidURL("the link must not contain a user name or password")
	}
	if u.Opaque != "" {
		return ProductRef{}, invalidURL("the link has an unexpected form")
	}
	// A non-default port means some other server than the marketplace's
	// storefront, whatever the host name says.
	if port := u.Port(); port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		return ProductRef{}, invalidURL("the link names an unexpected port")
	}
	host := u.Hostname()
	if !isASCIIHost(host) {
		return ProductRef{}, invalidURL("the link's host is not a supported marketplace")
	}
	host = strings.ToLower(host)
	segs, ok := pathSegments(u.EscapedPath())
	if !ok {
		return ProductRef{}, invalidURL("the link's path has an unexpected form")
	}

	if bare := strings.TrimPrefix(host, "www."); amazonHosts[bare] {
		return parseAmazonPage(bare, segs)
	}
	if underD, ok := amazonShortHosts[host]; ok {
		return parseAmazonShort(host, underD, segs)
	}
	if site, ok := ebaySite(host); ok {
		ref, err := parseEbayItem(site, segs)
		if err != nil {
			return ProductRef{}, err
		}
		return withVariation(ref, u.Query().Get("var"))
	}
	return ProductRef{}, invalidURL("the link's host is not a supported marketplace")
}

func invalidURL(why string) *Error {
	return Errorf(CodeInvalidURL, "URL is not a valid link of a supported marketplace (Amazon or eBay): %s", why)
}

// isASCIIHost reports whether host is a plain ASCII DNS name. Internationalised
// and percent-encoded hosts are refused outright rather than normalised: no
// supported marketplace uses one, and normalising is where homograph tricks
// hide.
func isASCIIHost(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// pathSegments splits an escaped path into its segments. One trailing slash
// is tolerated (people copy links that way); an empty segment anywhere else
// is not a shape any marketplace produces.
func pathSegments(escaped string) ([]string, bool) {
	p := strings.TrimPrefix(escaped, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, true
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" {
			return nil, false
		}
	}
	return segs, true
}

// parseAmazonPage reads the ASIN from a product page path. Whatever follows
// the ASIN (ref=... tracking segments, a variant marker) does not change
// the product and is dropped.
func parseAmazonPage(bareHost string, segs []string) (ProductRef, error) {
	var asin string
	switch {
	case len(segs) >= 2 && segs[0] == "dp":
		asin = segs[1]
	case len(segs) >= 3 && segs[1] == "dp":
		asin = segs[2]
	case len(segs) >= 3 && segs[0] == "gp" && segs[1] == "product":
		asin = segs[2]
	default:
		return ProductRef{}, invalidURL("the link is not a product page (expected /dp/<product id>)")
	}
	asin = strings.ToUpper(asin)
	if !IsASIN(asin) {
		return ProductRef{}, invalidURL("the product id is malformed")
	}
	return productRef(MarketplaceAmazon, bareHost, "dp", asin), nil
}

// productRef is item id of marketplace m on www.<site>, with its canonical
// link https://www.<site>/<page>/<id>.
func productRef(m Marketplace, site, page, id string) ProductRef {
	host := "www." + site
	return ProductRef{Marketplace: m, ID: id, Host: host, URL: "https://" + host + "/" + page + "/" + id}
}

// IsASIN reports whether s is ten uppercase letters or digits, the shape of
// every ASIN (ISBN-10s included).
func IsASIN(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseAmazonShort reads the code of a short link. The code is kept as
// written: short codes are case-sensitive, unlike ASINs.
func parseAmazonShort(host string, underD bool, segs []string) (ProductRef, error) {
	var code, path string
	switch {
	case underD && len(segs) == 2 && segs[0] == "d":
		code, path = segs[1], "/d/"+segs[1]
	case !underD && len(segs) == 1:
		code, path = segs[0], "/"+segs[0]
	default:
		return ProductRef{}, invalidURL("the short link has an unexpected form")
	}
	if !isShortCode(code) {
		return ProductRef{}, invalidURL("the short link's code is malformed")
	}
	return ProductRef{
		Marketplace: MarketplaceAmazon,
		ShortCode:   code,
		Host:        host,
		URL:         "https://" + host + path,
	}, nil
}

func isShortCode(s string) bool {
	if len(s) < 4 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ebaySite maps an eBay host (with "www.", "m." or a Belgian language
// prefix) to its bare site name, e.g. "m.ebay.co.uk" → "ebay.co.uk".
func ebaySite(host string) (string, bool) {
	switch host {
	case "befr.ebay.be", "benl.ebay.be":
		return "ebay.be", true
	}
	bare := host
	if b, ok := strings.CutPrefix(host, "www."); ok {
		bare = b
	} else if b, ok := strings.CutPrefix(host, "m."); ok {
		bare = b
	}
	return bare, ebayHosts[bare]
}

// parseEbayItem reads the item id from /itm/<id> or the older
// /itm/<title-slug>/<id>.
func parseEbayItem(site string, segs []string) (ProductRef, error) {
	var id string
	switch {
	case len(segs) == 2 && segs[0] == "itm":
		id = segs[1]
	case len(segs) == 3 && segs[0] == "itm":
		id = segs[2]
	default:
		return ProductRef{}, invalidURL("the link is not an item page (expected /itm/<item id>)")
	}
	if !IsEbayItemID(id) {
		return ProductRef{}, invalidURL("the item id is malformed")
	}
	return productRef(MarketplaceEbay, site, "itm", id), nil
}

// withVariation adds the variation a multi-variation listing's link names
// in its ?var= parameter. "0" is what the marketplace writes for "no
// variation"; anything else must be a number, or the link was tampered with.
func withVariation(ref ProductRef, v string) (ProductRef, error) {
	if v == "" || v == "0" {
		return ref, nil
	}
	if len(v) > 19 || strings.Trim(v, "0123456789") != "" {
		return ProductRef{}, invalidURL("the variation id is malformed")
	}
	ref.Variation = v
	ref.URL += "?var=" + v
	return ref, nil
}

// IsEbayItemID reports whether s is 9 to 15 digits. Current item ids are
// 12 digits; the range leaves room for old listings and future growth
// without accepting arbitrary numbers.
func IsEbayItemID(s string) bool {
	if len(s) < 9 || len(s) > 15 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
