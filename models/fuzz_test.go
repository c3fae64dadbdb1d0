package models

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of this file run their seeds and the committed corpus
// under testdata/fuzz/<FuzzName>/ as regression cases on every `go test`;
// `go test -run '^$' -fuzz '^FuzzX$' ./models/` explores further. They only
// use this package's exported and internal API, not the helpers of the
// other test files, so they keep compiling while those change.

// cleanText reports whether s is valid UTF-8 without a NUL byte, the
// minimum for any string that is stored, logged or shown.
func cleanText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// requireModelError returns err as an *Error with code, failing otherwise.
func requireModelError(t *testing.T, err error, code Code) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("error code %q, want %q (%v)", e.Code, code, err)
	}
	if !errors.Is(err, NewError(code)) {
		t.Fatalf("errors.Is(%v, %s) is false", err, code)
	}
	if e.Message == "" || !cleanText(e.Message) {
		t.Fatalf("error message %q is empty or not clean text", e.Message)
	}
	return e
}

// FuzzParseProductURL checks that ParseProductURL never panics, fails only
// with an invalid_url *Error, and on success returns a ref that is
// canonical (its URL parses back to the same ref), on a known marketplace
// and host, with ids its validators accept.
func FuzzParseProductURL(f *testing.F) {
	for _, s := range []string{
		// Accepted forms (TestParseProductURLAccepts).
		"https://www.amazon.com/dp/B0ABC12345",
		"https://amazon.com/dp/B0ABC12345/",
		"https://www.amazon.com/Sony-WH-1000XM5/dp/B09XS7JWHH/ref=sr_1_3?crid=2X&keywords=sony&th=1",
		"https://www.amazon.co.uk/dp/B09XS7JWHH/ref=cm_sw_r_cp_api",
		"https://www.amazon.de/gp/product/B09XS7JWHH/ref=ppx_yo_dt_b_asin_title?ie=UTF8&psc=1",
		"https://www.amazon.com/dp/030640615X",
		"https://www.amazon.com/dp/b0abc12345",
		"HTTPS://WWW.AMAZON.COM/dp/B0ABC12345#customerReviews",
		"https://www.amazon.com:443/dp/B0ABC12345",
		"http://www.amazon.com:80/dp/B0ABC12345",
		"  https://www.amazon.co.jp/dp/B0ABC12345\n",
		"https://amzn.to/3xYzAbC/?tag=foo",
		"https://a.co/d/aBc1234",
		"https://amzn.eu/d/Xy9zQ1w",
		"https://amzn.asia/d/abcdefghijklmnop",
		"https://www.ebay.com/itm/123456789012?hash=item1cbe&var=0&_trksid=p2047",
		"https://www.ebay.com/itm/123456789012?var=4567&_trksid=p2047",
		"https://www.ebay.co.uk/itm/Vintage-Camera-Lens-50mm/123456789012",
		"https://m.ebay.com.au/itm/123456789",
		"https://befr.ebay.be/itm/123456789012345",
		"http://benl.ebay.be/itm/123456789012/",
		// Rejected forms (TestParseProductURLRejects).
		"",
		"::::",
		"www.amazon.com/dp/B0ABC12345",
		"//www.amazon.com/dp/B0ABC12345",
		"ftp://www.amazon.com/dp/B0ABC12345",
		"javascript:alert(1)",
		"https:www.amazon.com/dp/B0ABC12345",
		"https://amazon.com@evil.com/dp/B0ABC12345",
		"https://user:pass@www.amazon.com/dp/B0ABC12345",
		"https://www.amazon.com:8443/dp/B0ABC12345",
		"https://www.amazon.com:80/dp/B0ABC12345",
		"https://[2001:db8::1]/dp/B0ABC12345",
		"https://www.amazon.com.evil.com/dp/B0ABC12345",
		"https://www.amazоn.com/dp/B0ABC12345", // Cyrillic о
		"https://www.xn--amazn-mye.com/dp/B0ABC12345",
		"https://www.amazon.com./dp/B0ABC12345",
		"https://www.www.amazon.com/dp/B0ABC12345",
		"https://m.amazon.com/dp/B0ABC12345",
		"https://www.amazon.com/s?k=headphones",
		"https://www.amazon.com/dp/B0ABC1234%35",
		"https://www.amazon.com/a/b/dp/B0ABC12345",
		"https://www.amazon.com//dp/B0ABC12345",
		"https://amzn.to/d/abc1234",
		"https://a.co/abc1234",
		"https://amzn.to/abc-123",
		"https://a.co/d/abc1234/extra",
		"https://www.amzn.to/abc1234",
		"https://www.ebay.com/itm/12345678",
		"https://www.ebay.com/itm/12345678901A",
		"https://www.ebay.com/itm/slug/123456789012/more",
		"https://www.ebay.com/itm/123456789012?var=12a",
		"https://www.ebay.com/itm/123456789012?var=12345678901234567890",
		"https://pages.ebay.com/itm/123456789012",
		"https://www.amazon.com/dp/B0ABC12345?x=" + strings.Repeat("a", MaxProductURLLength),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ref, err := ParseProductURL(raw)
		if err != nil {
			e := requireModelError(t, err, CodeInvalidURL)
			if e.Field != "" {
				t.Fatalf("invalid_url error names field %q", e.Field)
			}
			// The message is shown to clients and never echoes the link:
			// it is the default text with a fixed reason after it.
			if !strings.HasPrefix(e.Message, DefaultMessage(CodeInvalidURL)) {
				t.Fatalf("message %q does not start with the contract's text", e.Message)
			}
			if ref != (ProductRef{}) {
				t.Fatalf("error %v with a non-zero ref %+v", err, ref)
			}
			return
		}
		checkProductRef(t, ref)

		again, err := ParseProductURL(ref.URL)
		if err != nil {
			t.Fatalf("canonical URL %q of %q does not parse: %v", ref.URL, raw, err)
		}
		if again != ref {
			t.Fatalf("canonical URL %q of %q parses to %+v, not %+v", ref.URL, raw, again, ref)
		}
	})
}

// checkProductRef checks a ref ParseProductURL returned.
func checkProductRef(t *testing.T, ref ProductRef) {
	t.Helper()
	for _, s := range []string{string(ref.Marketplace), ref.ID, ref.ShortCode, ref.Host, ref.Variation, ref.URL} {
		if !cleanText(s) {
			t.Fatalf("ref %+v holds a string that is not clean text: %q", ref, s)
		}
	}
	if ref.ShipTo != "" {
		t.Fatalf("ref %+v has a destination; the link carries none", ref)
	}
	path := ""
	switch ref.Marketplace {
	case MarketplaceAmazon:
		if ref.Variation != "" {
			t.Fatalf("amazon ref %+v has a variation", ref)
		}
		if ref.IsShortLink() {
			underD, ok := amazonShortHosts[ref.Host]
			if !ok || ref.ID != "" || !isShortCode(ref.ShortCode) {
				t.Fatalf("bad short-link ref %+v", ref)
			}
			path = "/" + ref.ShortCode
			if underD {
				path = "/d/" + ref.ShortCode
			}
		} else {
			bare, www := strings.CutPrefix(ref.Host, "www.")
			if !www || !amazonHosts[bare] || !IsASIN(ref.ID) {
				t.Fatalf("bad amazon ref %+v", ref)
			}
			path = "/dp/" + ref.ID
		}
	case MarketplaceEbay:
		bare, www := strings.CutPrefix(ref.Host, "www.")
		if !www || !ebayHosts[bare] || !IsEbayItemID(ref.ID) || ref.ShortCode != "" {
			t.Fatalf("bad ebay ref %+v", ref)
		}
		if v := ref.Variation; v != "" && (v == "0" || len(v) > 19 || strings.Trim(v, "0123456789") != "") {
			t.Fatalf("bad ebay variation in %+v", ref)
		}
		path = "/itm/" + ref.ID
	default:
		t.Fatalf("ref %+v on an unknown marketplace", ref)
	}
	want := "https://" + ref.Host + path
	if ref.Variation != "" {
		want += "?var=" + ref.Variation
	}
	if ref.URL != want {
		t.Fatalf("ref %+v: URL is not the canonical %q", ref, want)
	}
	u, err := url.Parse(ref.URL)
	if err != nil || u.Hostname() != ref.Host || u.User != nil || u.Fragment != "" {
		t.Fatalf("canonical URL %q does not parse back to its host: %v", ref.URL, err)
	}
}

// addressFields are the subfields an address error may name.
var addressFields = map[string]bool{
	"name": true, "phone": true, "line1": true, "line2": true, "city": true,
	"region": true, "postal_code": true, "country": true,
}

// FuzzValidateAddress checks that ValidateAddress never panics, fails only
// with an invalid_address *Error naming one of the address's subfields, and
// on success returns an address that is clean text, within the length caps,
// and already normalised: validating it again gives it back unchanged.
func FuzzValidateAddress(f *testing.F) {
	add := func(name, phone, line1, line2, city, region, postal, country string) {
		f.Add(name, phone, line1, line2, city, region, postal, country)
	}
	const (
		name  = "Ada Lovelace"
		phone = "+44 20 7946 0958"
		line1 = "12 Example Street"
		line2 = "Flat 3"
		city  = "Exampletown"
	)
	// Valid addresses, one per postal-code format or rule
	// (TestValidateAddressPerCountry).
	for _, c := range [][3]string{
		{"US", "NY", "10001"}, {"US", "CA", "941051804"}, {"US", "texas", "73301"},
		{"US", "N.Y.", "10001"}, {"US", "Washington, D.C.", "20500"}, {"US", "AE", "09012"},
		{"PR", "", "00901"}, {"GU", "", "96910-1234"},
		{"CA", "on", "k1a0b1"}, {"CA", "Québec", "H2Y 1C6"}, {"CA", "Newfoundland & Labrador", "A1C 5M2"},
		{"GB", "", "sw1a1aa"}, {"GB", "", "GIR 0AA"}, {"GB", "Greater London", "EC1A1BB"},
		{"IM", "", "im11aa"}, {"DE", "", "01067"}, {"FR", "", "97400"}, {"IT", "RM", "00184"},
		{"ES", "", "08001"}, {"NL", "", "1012ab"}, {"BE", "", "1000"}, {"SE", "", "11455"},
		{"PL", "", "00950"}, {"PT", "", "1100148"}, {"IE", "", "a65f4e2"}, {"IE", "", "D6W 1234"},
		{"IE", "Co. Kerry", ""}, {"AU", "Northern Territory", "0800"}, {"NZ", "", "6011"},
		{"JP", "東京都", "１００－０００１"}, {"JP", "Osaka", "5300001"}, {"KR", "", "03187"},
		{"IN", "Maharashtra", "400 001"}, {"BR", "RJ", "20040020"}, {"MX", "CDMX", "06500"},
		{"SG", "", "018956"}, {"CN", "Beijing", "100000"}, {"AE", "Dubai", ""}, {"AE", "", "00000"},
		{"HK", "", ""}, {"NO", "", "0150"}, {"AR", "", "c1425dkf"}, {"KY", "", "KY1-1102"},
		{"BM", "", "HM 12"},
	} {
		add(name, phone, line1, line2, city, c[1], c[2], c[0])
	}
	// Whitespace to normalise (TestValidateAddressNormalises) and the
	// length caps themselves (TestValidateAddressFieldLimits).
	add("  Ada \u00a0 Lovelace ", " +1 (555)  123-4567 ", "\t12   Example Street\n", "   ", " New\u3000York ", " new york ", " 10001 ", " us ")
	add(strings.Repeat("é", 100), "5551234", strings.Repeat("a", MaxAddressLine), strings.Repeat("ü", MaxAddressLine),
		strings.Repeat("c", 100), strings.Repeat("r", 100), "SW1A 1AA", "GB")
	// Invalid ones (TestValidateAddressInvalid, ...Region, ...PostalCodeInvalid).
	add("", phone, line1, line2, city, "", "SW1A 1AA", "GB")
	add(strings.Repeat("é", 101), phone, line1, line2, city, "", "SW1A 1AA", "GB")
	add("Ada\x00Lovelace", phone, line1, line2, city, "", "SW1A 1AA", "GB")
	add("Ada \xff", phone, line1, line2, city, "", "SW1A 1AA", "GB")
	add(name, "555 123+4567", line1, line2, city, "", "SW1A 1AA", "GB")
	add(name, "(12) 34-56 --", line1, line2, city, "", "SW1A 1AA", "GB")
	add(name, "555\t1234567", line1, line2, city, "", "SW1A 1AA", "GB")
	add(name, phone, strings.Repeat("a", MaxAddressLine+1), line2, city, "", "SW1A 1AA", "GB")
	add(name, phone, "12 \u202eteertS", line2, city, "", "SW1A 1AA", "GB")
	add(name, phone, "12 Street\u2028Flat 3", line2, city, "", "SW1A 1AA", "GB")
	add(name, phone, line1, "Flat\u00853", city, "", "SW1A 1AA", "GB")
	add(name, phone, line1, line2, "Town\x7f", "", "SW1A 1AA", "GB")
	add(name, phone, line1, line2, city, "Lon\x1bdon", "SW1A 1AA", "GB")
	add(name, phone, line1, line2, city, "", "SW1A 1AA", "UK")
	add(name, phone, line1, line2, city, "", "SW1A 1AA", "GBR")
	add(name, phone, line1, line2, city, "", "SW1A\n1AA", "GB")
	add(name, phone, line1, line2, city, "", "SW1A 1AC", "GB")
	add(name, phone, line1, line2, city, "Nwe York", "10001", "US")
	add(name, phone, line1, line2, city, "PQ", "H2Y 1C6", "CA")
	add(name, phone, line1, line2, city, "", "100-0001", "JP")
	add(name, phone, line1, line2, city, "", "B02 X285", "IE")
	add(name, phone, line1, line2, city, "", "-0150", "NO")
	add(name, phone, line1, line2, city, "", "Kowloon, Hong Kong", "HK")

	f.Fuzz(func(t *testing.T, name, phone, line1, line2, city, region, postal, country string) {
		in := ShippingAddress{Name: name, Phone: phone, Line1: line1, Line2: line2, City: city,
			Region: region, PostalCode: postal, Country: country}
		out, err := ValidateAddress(in)
		if err != nil {
			e := requireModelError(t, err, CodeInvalidAddress)
			// ValidateAddress names the subfield with the prefix the API
			// uses, e.g. "shipping_address.postal_code".
			sub, ok := strings.CutPrefix(e.Field, "shipping_address.")
			if !ok || !addressFields[sub] {
				t.Fatalf("error field %q is not shipping_address.<subfield>", e.Field)
			}
			if out != (ShippingAddress{}) {
				t.Fatalf("error %v with a half-normalised address %+v", err, out)
			}
			return
		}
		checkAddress(t, out)
		again, err := ValidateAddress(out)
		if err != nil {
			t.Fatalf("normalised address %+v of %+v is refused: %v", out, in, err)
		}
		if again != out {
			t.Fatalf("normalising is not idempotent:\n in    %+v\n out   %+v\n again %+v", in, out, again)
		}
	})
}

// checkAddress checks an address ValidateAddress accepted.
func checkAddress(t *testing.T, a ShippingAddress) {
	t.Helper()
	fields := map[string]string{
		"name": a.Name, "phone": a.Phone, "line1": a.Line1, "line2": a.Line2, "city": a.City,
		"region": a.Region, "postal_code": a.PostalCode, "country": a.Country,
	}
	for field, s := range fields {
		if !cleanText(s) {
			t.Fatalf("%s %q is not clean text", field, s)
		}
		for _, r := range s {
			if forbiddenAddressRune(r) {
				t.Fatalf("%s %q holds the forbidden rune %U", field, s, r)
			}
		}
		if strings.Join(strings.Fields(s), " ") != s {
			t.Fatalf("%s %q is not trimmed with inner whitespace collapsed", field, s)
		}
	}
	for field, s := range map[string]string{"name": a.Name, "line1": a.Line1, "city": a.City, "country": a.Country} {
		if s == "" {
			t.Fatalf("required %s is empty in %+v", field, a)
		}
	}
	for field, s := range map[string]string{"line1": a.Line1, "line2": a.Line2} {
		if n := utf8.RuneCountInString(s); n > MaxAddressLine {
			t.Fatalf("%s has %d characters, more than %d", field, n, MaxAddressLine)
		}
	}
	for field, s := range map[string]string{"name": a.Name, "city": a.City, "region": a.Region} {
		if n := utf8.RuneCountInString(s); n > maxAddressText {
			t.Fatalf("%s has %d characters, more than %d", field, n, maxAddressText)
		}
	}
	if !ValidCountry(a.Country) {
		t.Fatalf("country %q is not a canonical ISO code", a.Country)
	}
	if regionRequired[a.Country] && a.Region == "" {
		t.Fatalf("no region for %s", a.Country)
	}
	switch a.Country {
	case "US":
		if _, ok := usRegions[a.Region]; !ok {
			t.Fatalf("US region %q is not a code", a.Region)
		}
	case "CA":
		if _, ok := caRegions[a.Region]; !ok {
			t.Fatalf("CA region %q is not a code", a.Region)
		}
	}
	if strings.Trim(a.PostalCode, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -") != "" {
		t.Fatalf("postal code %q is not upper-case ASCII", a.PostalCode)
	}
	if a.PostalCode == "" && !noPostalCode[a.Country] && !postalFormats[a.Country].optional {
		t.Fatalf("no postal code for %s", a.Country)
	}
}

// FuzzOrderNumber checks NormalizeOrderNumber and ValidOrderNumber on
// arbitrary input, and the Damm check digit's promise on a valid number
// derived from the input: every single-digit typo and every swap of two
// adjacent different digits is rejected.
func FuzzOrderNumber(f *testing.F) {
	for _, s := range []string{
		// TestValidOrderNumber and TestNormalizeOrderNumber.
		"12345678906", "10000000003", "99999999992", "12345678907", "12345678903",
		"79927398713", "12345678096", "01234567894", "1234567890", "123456789061", "",
		"1234567890a", "1234-5678-906", " 12345678906", "１２３４５６７８９０６",
		"  12345678906\n", "1234 5678 906", "1234–5678–906", " 123 456-789 06 ",
		"1 2 3 4 5 6 7 8 9 0 6", "#12345678906", "Order 12345678906", "1234-5678-9061",
		"---", "12345678906" + strings.Repeat("0", 100),
		// Payloads holding the 09 and 90 pairs Luhn cannot tell apart.
		"1090909090", "1909090909",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := NormalizeOrderNumber(s)
		if ok != ValidOrderNumber(n) {
			t.Fatalf("NormalizeOrderNumber(%q) = %q, %v, but ValidOrderNumber(%q) = %v", s, n, ok, n, !ok)
		}
		if !ok && n != "" {
			t.Fatalf("NormalizeOrderNumber(%q) failed but returned %q", s, n)
		}
		if ok {
			if again, ok2 := NormalizeOrderNumber(n); !ok2 || again != n {
				t.Fatalf("NormalizeOrderNumber(%q) = %q, %v: not idempotent", n, again, ok2)
			}
			// Only separators were dropped: the digits are the input's.
			digits := strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, s)
			if digits != n {
				t.Fatalf("NormalizeOrderNumber(%q) = %q, not the input's digits %q", s, n, digits)
			}
		}
		if ValidOrderNumber(s) {
			if got, ok := NormalizeOrderNumber(s); !ok || got != s {
				t.Fatalf("valid %q normalises to %q, %v", s, got, ok)
			}
		}

		// A valid number from the input's first ten bytes, drawn like
		// NewOrderNumber does (first digit never 0).
		payload := make([]byte, orderNumberRandomDigits)
		for i := range payload {
			var b byte
			if i < len(s) {
				b = s[i]
			}
			if i == 0 {
				payload[i] = '1' + b%9
			} else {
				payload[i] = '0' + b%10
			}
		}
		num := string(append(payload, dammCheckDigit(payload)))
		if !ValidOrderNumber(num) {
			t.Fatalf("%q with its check digit is invalid", num)
		}
		if got, ok := NormalizeOrderNumber(num[:4] + "-" + num[4:8] + " " + num[8:]); !ok || got != num {
			t.Fatalf("grouped %q normalises to %q, %v", num, got, ok)
		}
		for i := range len(num) {
			for d := byte('0'); d <= '9'; d++ {
				if d == num[i] {
					continue
				}
				typo := num[:i] + string(d) + num[i+1:]
				if ValidOrderNumber(typo) {
					t.Fatalf("typo %q of %q is valid", typo, num)
				}
			}
		}
		for i := range len(num) - 1 {
			a, b := num[i], num[i+1]
			if a == b {
				continue
			}
			swapped := num[:i] + string(b) + string(a) + num[i+2:]
			if ValidOrderNumber(swapped) {
				t.Fatalf("swap %q of %q is valid", swapped, num)
			}
		}
	})
}
