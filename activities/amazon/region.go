package amazon

import (
	"strings"

	"github.com/memocart/memocart/models"
)

// RegionGroup is a group of storefronts served by one set of Creators API
// credentials and one token endpoint.
type RegionGroup string

// Region groups.
const (
	NA RegionGroup = "NA" // North and South America
	EU RegionGroup = "EU" // Europe, the Middle East and India
	FE RegionGroup = "FE" // the Far East and Australia
)

// TokenURL is the documented token endpoint of the group's credentials
// (version 3.x), "" for an unknown group.
func (g RegionGroup) TokenURL() string {
	switch g {
	case NA:
		return "https://api.amazon.com/auth/o2/token"
	case EU:
		return "https://api.amazon.co.uk/auth/o2/token"
	case FE:
		return "https://api.amazon.co.jp/auth/o2/token"
	}
	return ""
}

// storefrontGroups maps every storefront ParseProductURL accepts (without
// "www.") to its region group. amazon.cn is a storefront no group serves:
// the Creators API has no data for it.
var storefrontGroups = map[string]RegionGroup{
	"amazon.com": NA, "amazon.ca": NA, "amazon.com.mx": NA, "amazon.com.br": NA,
	"amazon.co.uk": EU, "amazon.de": EU, "amazon.fr": EU, "amazon.it": EU, "amazon.es": EU,
	"amazon.nl": EU, "amazon.se": EU, "amazon.pl": EU, "amazon.com.tr": EU, "amazon.ae": EU,
	"amazon.sa": EU, "amazon.eg": EU, "amazon.in": EU, "amazon.ie": EU, "amazon.com.be": EU,
	"amazon.co.jp": FE, "amazon.sg": FE, "amazon.com.au": FE,
	"amazon.cn": "",
}

// shortLinkHosts are the retailer's short-link hosts.
var shortLinkHosts = map[string]bool{"amzn.to": true, "a.co": true, "amzn.eu": true, "amzn.asia": true}

// storefront is where a product is looked up.
type storefront struct {
	bare  string // amazon.de
	host  string // www.amazon.de: the x-marketplace header and product URL host
	group RegionGroup
}

// storefrontOf returns the storefront of a product page host ("www.amazon.de"
// or "amazon.de"). An empty host is amazon.com, as a ref built without one
// means. ok is false for a host that is not a storefront at all.
func storefrontOf(host string) (storefront, bool) {
	bare := strings.TrimPrefix(strings.ToLower(host), "www.")
	if bare == "" {
		bare = "amazon.com"
	}
	group, ok := storefrontGroups[bare]
	if !ok {
		return storefront{}, false
	}
	return storefront{bare: bare, host: "www." + bare, group: group}, true
}

// isAmazonHost reports whether host (lowercase, no port) is a short-link
// host or a storefront's, the only hosts a short link may lead through.
func isAmazonHost(host string) bool {
	if shortLinkHosts[host] {
		return true
	}
	_, ok := storefrontGroups[strings.TrimPrefix(host, "www.")]
	return ok
}

// badRef reports a ref ParseProductURL would not have produced; it carries
// invalid_url so a client still gets the contract's answer.
func badRef(why string) error {
	return models.Errorf(models.CodeInvalidURL, "%s: %s", models.DefaultMessage(models.CodeInvalidURL), why)
}
