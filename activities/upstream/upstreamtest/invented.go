package upstreamtest

import "crypto/sha256"

// What the simulators (the test servers, and the sandbox catalog of
// test-mode keys) invent products from, so that their made-up products
// read alike.
var (
	adjectives = []string{
		"Wireless", "Compact", "Ergonomic", "Stainless", "Portable", "Rechargeable",
		"Waterproof", "Foldable", "Smart", "Vintage", "Ultralight", "Heavy-Duty",
		"Bamboo", "Ceramic", "Magnetic", "Solar",
	}
	nouns = []string{
		"Headphones", "Coffee Grinder", "Desk Lamp", "Backpack", "Water Bottle", "Keyboard",
		"Camera Lens", "Phone Stand", "Cutting Board", "Speaker", "Travel Mug", "Yoga Mat",
		"Power Bank", "Wall Clock", "Sunglasses", "Chess Set",
	}
)

// InventedName is the name of a made-up product, an adjective and a noun
// that a and b (bytes of a hash) pick: "Wireless Headphones".
func InventedName(a, b byte) string {
	return adjectives[int(a)%len(adjectives)] + " " + nouns[int(b)%len(nouns)]
}

// asinAlphabet is what InventedASIN draws from: the characters ASINs use.
const asinAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// InventedASIN is a made-up ASIN: "B0" and eight characters derived from a
// hash of seed, the shape of modern ASINs.
func InventedASIN(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	out := []byte("B0")
	for _, b := range sum[:8] {
		// The slight modulo bias is irrelevant here: the ids need to be
		// stable and varied, not uniform.
		out = append(out, asinAlphabet[int(b)%len(asinAlphabet)])
	}
	return string(out)
}

// ShortLinkStorefronts returns the storefront each Amazon short-link host
// leads to in a simulator. The real services redirect to whichever
// storefront the sharer used; the region's main one keeps the answer a
// function of the link. The map is the caller's.
func ShortLinkStorefronts() map[string]string {
	return map[string]string{
		"amzn.to":   "www.amazon.com",
		"a.co":      "www.amazon.com",
		"amzn.eu":   "www.amazon.de",
		"amzn.asia": "www.amazon.co.jp",
	}
}
