package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func amazonRef(host, asin string) ProductRef {
	return ProductRef{Marketplace: MarketplaceAmazon, ID: asin, Host: host, URL: "https://" + host + "/dp/" + asin}
}

func shortRef(host, code, path string) ProductRef {
	return ProductRef{Marketplace: MarketplaceAmazon, ShortCode: code, Host: host, URL: "https://" + host + path}
}

func ebayRef(host, id string) ProductRef {
	return ProductRef{Marketplace: MarketplaceEbay, ID: id, Host: host, URL: "https://" + host + "/itm/" + id}
}

func TestParseProductURLAccepts(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want ProductRef
	}{
		// Retailer page forms.
		{"dp", "https://www.amazon.com/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"dp without www", "https://amazon.com/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"dp trailing slash", "https://www.amazon.com/dp/B0ABC12345/", amazonRef("www.amazon.com", "B0ABC12345")},
		{"slug dp", "https://www.amazon.com/Sony-WH-1000XM5-Headphones/dp/B09XS7JWHH", amazonRef("www.amazon.com", "B09XS7JWHH")},
		{"slug dp ref and query", "https://www.amazon.com/Sony-WH-1000XM5/dp/B09XS7JWHH/ref=sr_1_3?crid=2X&keywords=sony&th=1", amazonRef("www.amazon.com", "B09XS7JWHH")},
		{"dp ref segment", "https://www.amazon.co.uk/dp/B09XS7JWHH/ref=cm_sw_r_cp_api", amazonRef("www.amazon.co.uk", "B09XS7JWHH")},
		{"gp product", "https://www.amazon.de/gp/product/B09XS7JWHH", amazonRef("www.amazon.de", "B09XS7JWHH")},
		{"gp product ref", "https://www.amazon.de/gp/product/B09XS7JWHH/ref=ppx_yo_dt_b_asin_title?ie=UTF8&psc=1", amazonRef("www.amazon.de", "B09XS7JWHH")},
		{"isbn asin", "https://www.amazon.com/dp/030640615X", amazonRef("www.amazon.com", "030640615X")},
		{"lowercase asin uppercased", "https://www.amazon.com/dp/b0abc12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"http upgraded", "http://www.amazon.com/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"uppercase scheme and host", "HTTPS://WWW.AMAZON.COM/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"fragment dropped", "https://www.amazon.com/dp/B0ABC12345#customerReviews", amazonRef("www.amazon.com", "B0ABC12345")},
		{"explicit default https port", "https://www.amazon.com:443/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"explicit default http port", "http://www.amazon.com:80/dp/B0ABC12345", amazonRef("www.amazon.com", "B0ABC12345")},
		{"surrounding whitespace", "  https://www.amazon.com/dp/B0ABC12345\n", amazonRef("www.amazon.com", "B0ABC12345")},

		// Retailer short links.
		{"amzn.to", "https://amzn.to/3xYzAbC", shortRef("amzn.to", "3xYzAbC", "/3xYzAbC")},
		{"amzn.to trailing slash and query", "https://amzn.to/3xYzAbC/?tag=foo", shortRef("amzn.to", "3xYzAbC", "/3xYzAbC")},
		{"a.co", "https://a.co/d/aBc1234", shortRef("a.co", "aBc1234", "/d/aBc1234")},
		{"a.co http", "http://a.co/d/aBc1234", shortRef("a.co", "aBc1234", "/d/aBc1234")},
		{"amzn.eu", "https://amzn.eu/d/Xy9zQ1w", shortRef("amzn.eu", "Xy9zQ1w", "/d/Xy9zQ1w")},
		{"amzn.asia", "https://amzn.asia/d/0aB1cD2", shortRef("amzn.asia", "0aB1cD2", "/d/0aB1cD2")},
		{"short code 4 chars", "https://amzn.to/abcd", shortRef("amzn.to", "abcd", "/abcd")},
		{"short code 16 chars", "https://a.co/d/abcdefghijklmnop", shortRef("a.co", "abcdefghijklmnop", "/d/abcdefghijklmnop")},

		// Auction item pages.
		{"itm", "https://www.ebay.com/itm/123456789012", ebayRef("www.ebay.com", "123456789012")},
		{"itm without www", "https://ebay.com/itm/123456789012", ebayRef("www.ebay.com", "123456789012")},
		{"itm query", "https://www.ebay.com/itm/123456789012?hash=item1cbe&var=0&_trksid=p2047", ebayRef("www.ebay.com", "123456789012")},
		{"itm variation", "https://www.ebay.com/itm/123456789012?var=4567&_trksid=p2047", ProductRef{Marketplace: MarketplaceEbay,
			ID: "123456789012", Variation: "4567", Host: "www.ebay.com", URL: "https://www.ebay.com/itm/123456789012?var=4567"}},
		{"itm trailing slash", "https://www.ebay.com/itm/123456789012/", ebayRef("www.ebay.com", "123456789012")},
		{"itm slug", "https://www.ebay.co.uk/itm/Vintage-Camera-Lens-50mm/123456789012", ebayRef("www.ebay.co.uk", "123456789012")},
		{"itm 9 digits", "https://www.ebay.de/itm/123456789", ebayRef("www.ebay.de", "123456789")},
		{"itm 15 digits", "https://www.ebay.de/itm/123456789012345", ebayRef("www.ebay.de", "123456789012345")},
		{"mobile host", "https://m.ebay.com/itm/123456789012", ebayRef("www.ebay.com", "123456789012")},
		{"mobile country host", "https://m.ebay.co.uk/itm/123456789012", ebayRef("www.ebay.co.uk", "123456789012")},
		{"befr", "https://befr.ebay.be/itm/123456789012", ebayRef("www.ebay.be", "123456789012")},
		{"benl", "https://benl.ebay.be/itm/123456789012", ebayRef("www.ebay.be", "123456789012")},
		{"ebay http upgraded", "http://www.ebay.com.au/itm/123456789012", ebayRef("www.ebay.com.au", "123456789012")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProductURL(tc.raw)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Every storefront the parser claims to support must actually parse, in
// both the www and bare form, so a typo in the host table cannot hide.
func TestParseProductURLAllHosts(t *testing.T) {
	amazon := []string{
		"amazon.com", "amazon.ca", "amazon.com.mx", "amazon.com.br", "amazon.co.uk", "amazon.de",
		"amazon.fr", "amazon.it", "amazon.es", "amazon.nl", "amazon.se", "amazon.pl", "amazon.com.be",
		"amazon.com.tr", "amazon.ae", "amazon.sa", "amazon.eg", "amazon.in", "amazon.co.jp", "amazon.sg",
		"amazon.com.au", "amazon.cn",
	}
	require.Len(t, amazonHosts, len(amazon))
	for _, h := range amazon {
		for _, in := range []string{h, "www." + h} {
			t.Run(in, func(t *testing.T) {
				got, err := ParseProductURL("https://" + in + "/dp/B0ABC12345")
				require.NoError(t, err)
				assert.Equal(t, amazonRef("www."+h, "B0ABC12345"), got)
			})
		}
	}
	ebay := []string{
		"ebay.com", "ebay.ca", "ebay.co.uk", "ebay.de", "ebay.fr", "ebay.it", "ebay.es", "ebay.nl",
		"ebay.be", "ebay.at", "ebay.ch", "ebay.ie", "ebay.pl", "ebay.com.au", "ebay.com.sg",
		"ebay.com.my", "ebay.ph", "ebay.com.hk", "ebay.in",
	}
	require.Len(t, ebayHosts, len(ebay))
	for _, h := range ebay {
		for _, in := range []string{h, "www." + h, "m." + h} {
			t.Run(in, func(t *testing.T) {
				got, err := ParseProductURL("https://" + in + "/itm/123456789012")
				require.NoError(t, err)
				assert.Equal(t, ebayRef("www."+h, "123456789012"), got)
			})
		}
	}
}

func TestParseProductURLRejects(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"empty", ""},
		{"blank", "   "},
		{"too long", "https://www.amazon.com/dp/B0ABC12345?x=" + strings.Repeat("a", MaxProductURLLength)},
		{"not a url", "::::"},
		{"no scheme", "www.amazon.com/dp/B0ABC12345"},
		{"scheme-relative", "//www.amazon.com/dp/B0ABC12345"},
		{"ftp", "ftp://www.amazon.com/dp/B0ABC12345"},
		{"javascript", "javascript:alert(1)"},
		{"opaque", "https:www.amazon.com/dp/B0ABC12345"},
		{"userinfo hides host", "https://amazon.com@evil.com/dp/B0ABC12345"},
		{"userinfo on real host", "https://user:pass@www.amazon.com/dp/B0ABC12345"},
		{"odd port", "https://www.amazon.com:8443/dp/B0ABC12345"},
		{"http port on https", "https://www.amazon.com:80/dp/B0ABC12345"},
		{"ipv4 host", "https://93.184.216.34/dp/B0ABC12345"},
		{"ipv6 host", "https://[2001:db8::1]/dp/B0ABC12345"},
		{"lookalike suffix", "https://amazon.com.evil.com/dp/B0ABC12345"},
		{"lookalike prefix", "https://notamazon.com/dp/B0ABC12345"},
		{"lookalike subdomain", "https://www.amazon.com.evil.com/dp/B0ABC12345"},
		{"ebay lookalike", "https://ebay.com.fake.io/itm/123456789012"},
		{"ebay hyphen lookalike", "https://www.ebay-com.net/itm/123456789012"},
		{"non-ascii host", "https://www.amazоn.com/dp/B0ABC12345"}, // Cyrillic о
		{"punycode host", "https://www.xn--amazn-mye.com/dp/B0ABC12345"},
		{"trailing dot host", "https://www.amazon.com./dp/B0ABC12345"},
		{"smile is dead", "https://smile.amazon.com/dp/B0ABC12345"},
		{"double www", "https://www.www.amazon.com/dp/B0ABC12345"},
		{"unknown amazon tld", "https://www.amazon.xyz/dp/B0ABC12345"},
		{"amazon mobile host", "https://m.amazon.com/dp/B0ABC12345"},
		{"amazon home page", "https://www.amazon.com/"},
		{"amazon search", "https://www.amazon.com/s?k=headphones"},
		{"dp missing asin", "https://www.amazon.com/dp/"},
		{"asin too short", "https://www.amazon.com/dp/B0ABC1234"},
		{"asin too long", "https://www.amazon.com/dp/B0ABC123456"},
		{"asin punctuation", "https://www.amazon.com/dp/B0ABC-1234"},
		{"asin percent-encoded", "https://www.amazon.com/dp/B0ABC1234%35"},
		{"two slugs before dp", "https://www.amazon.com/a/b/dp/B0ABC12345"},
		{"gp without product", "https://www.amazon.com/gp/B0ABC12345"},
		{"gp product missing asin", "https://www.amazon.com/gp/product/"},
		{"empty segment", "https://www.amazon.com//dp/B0ABC12345"},
		{"amazon itm path", "https://www.amazon.com/itm/123456789012"},
		{"amzn.to under d", "https://amzn.to/d/abc1234"},
		{"a.co without d", "https://a.co/abc1234"},
		{"a.co missing code", "https://a.co/d/"},
		{"short code too short", "https://amzn.to/abc"},
		{"short code too long", "https://amzn.to/abcdefghijklmnopq"},
		{"short code punctuation", "https://amzn.to/abc-123"},
		{"short link extra segment", "https://a.co/d/abc1234/extra"},
		{"short host with www", "https://www.amzn.to/abc1234"},
		{"ebay missing id", "https://www.ebay.com/itm/"},
		{"ebay id too short", "https://www.ebay.com/itm/12345678"},
		{"ebay id too long", "https://www.ebay.com/itm/1234567890123456"},
		{"ebay id not digits", "https://www.ebay.com/itm/12345678901A"},
		{"ebay slug without id", "https://www.ebay.com/itm/Vintage-Camera"},
		{"ebay extra segment", "https://www.ebay.com/itm/slug/123456789012/more"},
		{"ebay dp path", "https://www.ebay.com/dp/B0ABC12345"},
		{"ebay variation not a number", "https://www.ebay.com/itm/123456789012?var=12a"},
		{"ebay variation too long", "https://www.ebay.com/itm/123456789012?var=12345678901234567890"},
		{"ebay search", "https://www.ebay.com/sch/i.html?_nkw=camera"},
		{"ebay unknown tld", "https://www.ebay.cn/itm/123456789012"},
		{"ebay other subdomain", "https://pages.ebay.com/itm/123456789012"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProductURL(tc.raw)
			require.Error(t, err)
			assert.Equal(t, ProductRef{}, got)
			assert.Equal(t, CodeInvalidURL, CodeOf(err))
			assert.True(t, errors.Is(err, ErrInvalidURL))
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Contains(t, e.Message, "not a valid link of a supported marketplace")
			// The message is shown to clients; it must not reflect their
			// input back (a hostile link could carry markup or a phishing host).
			if tc.raw != "" && strings.TrimSpace(tc.raw) != "" {
				assert.NotContains(t, e.Message, strings.TrimSpace(tc.raw))
			}
			assert.NotContains(t, e.Message, "evil")
		})
	}
}

// The same product reached through different URL forms must give the same
// ref, so carts and caches key on one identity.
func TestParseProductURLCanonicalIdentity(t *testing.T) {
	forms := []string{
		"https://www.amazon.com/dp/B09XS7JWHH",
		"http://amazon.com/dp/b09xs7jwhh/",
		"https://www.amazon.com/Sony-Headphones/dp/B09XS7JWHH/ref=sr_1_1?keywords=sony",
		"https://www.amazon.com/gp/product/B09XS7JWHH?psc=1",
	}
	first, err := ParseProductURL(forms[0])
	require.NoError(t, err)
	for _, f := range forms[1:] {
		got, err := ParseProductURL(f)
		require.NoError(t, err, f)
		assert.Equal(t, first, got, f)
	}
	// And the canonical URL parses back to itself.
	again, err := ParseProductURL(first.URL)
	require.NoError(t, err)
	assert.Equal(t, first, again)
}
