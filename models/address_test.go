package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testAddress is a complete, valid address in country with the given region
// and postal code; the other fields are the same everywhere.
func testAddress(country, region, postal string) ShippingAddress {
	return ShippingAddress{
		Name:       "Ada Lovelace",
		Phone:      "+44 20 7946 0958",
		Line1:      "12 Example Street",
		Line2:      "Flat 3",
		City:       "Exampletown",
		Region:     region,
		PostalCode: postal,
		Country:    country,
	}
}

// requireAddressError asserts err is an invalid-address *Error naming field.
func requireAddressError(t *testing.T, err error, field string) *Error {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "want *Error, got %v", err)
	assert.Equal(t, CodeInvalidAddress, e.Code)
	assert.Equal(t, "shipping_address."+field, e.Field)
	assert.NotEmpty(t, e.Message)
	assert.ErrorIs(t, err, ErrInvalidAddress)
	return e
}

func TestValidateAddressPerCountry(t *testing.T) {
	tests := []struct {
		name       string
		country    string
		region     string
		postal     string
		wantRegion string
		wantPostal string
	}{
		{"US ZIP", "US", "NY", "10001", "NY", "10001"},
		{"US ZIP+4", "US", "CA", "94105-1804", "CA", "94105-1804"},
		{"US ZIP+4 without dash", "US", "CA", "941051804", "CA", "94105-1804"},
		{"US ZIP+4 with space", "US", "CA", "94105 1804", "CA", "94105-1804"},
		{"US state name", "US", "texas", "73301", "TX", "73301"},
		{"US state with dots", "US", "N.Y.", "10001", "NY", "10001"},
		{"US DC", "US", "Washington, D.C.", "20500", "DC", "20500"},
		{"US APO", "US", "AE", "09012", "AE", "09012"},
		{"US territory as state", "US", "PR", "00901", "PR", "00901"},
		{"PR as country", "PR", "", "00901", "", "00901"},
		{"GU as country", "GU", "", "96910-1234", "", "96910-1234"},
		{"CA", "CA", "ON", "K1A 0B1", "ON", "K1A 0B1"},
		{"CA compact lower case", "CA", "on", "k1a0b1", "ON", "K1A 0B1"},
		{"CA French name", "CA", "Québec", "H2Y 1C6", "QC", "H2Y 1C6"},
		{"CA ampersand", "CA", "Newfoundland & Labrador", "A1C 5M2", "NL", "A1C 5M2"},
		{"GB", "GB", "", "SW1A 1AA", "", "SW1A 1AA"},
		{"GB compact lower case", "GB", "", "sw1a1aa", "", "SW1A 1AA"},
		{"GB A9 9AA", "GB", "", "M1 1AE", "", "M1 1AE"},
		{"GB A99 9AA", "GB", "", "B33 8TH", "", "B33 8TH"},
		{"GB AA9 9AA", "GB", "", "CR2 6XH", "", "CR2 6XH"},
		{"GB AA99 9AA", "GB", "", "DN55 1PT", "", "DN55 1PT"},
		{"GB A9A 9AA", "GB", "", "W1A 0AX", "", "W1A 0AX"},
		{"GB AA9A 9AA", "GB", "", "EC1A1BB", "", "EC1A 1BB"},
		{"GB GIR", "GB", "", "GIR 0AA", "", "GIR 0AA"},
		{"GB region optional free text", "GB", "Greater London", "SW1A 1AA", "Greater London", "SW1A 1AA"},
		{"JE", "JE", "", "JE2 3AB", "", "JE2 3AB"},
		{"GG", "GG", "", "GY1 1AA", "", "GY1 1AA"},
		{"IM", "IM", "", "im11aa", "", "IM1 1AA"},
		{"DE", "DE", "", "10115", "", "10115"},
		{"DE leading zero", "DE", "", "01067", "", "01067"},
		{"FR", "FR", "", "75001", "", "75001"},
		{"FR overseas", "FR", "", "97400", "", "97400"},
		{"IT", "IT", "RM", "00184", "RM", "00184"},
		{"ES", "ES", "", "28013", "", "28013"},
		{"ES Barcelona", "ES", "", "08001", "", "08001"},
		{"NL", "NL", "", "1012 AB", "", "1012 AB"},
		{"NL compact lower case", "NL", "", "1012ab", "", "1012 AB"},
		{"BE", "BE", "", "1000", "", "1000"},
		{"AT", "AT", "", "1010", "", "1010"},
		{"CH", "CH", "", "8001", "", "8001"},
		{"SE", "SE", "", "114 55", "", "114 55"},
		{"SE compact", "SE", "", "11455", "", "114 55"},
		{"PL", "PL", "", "00-950", "", "00-950"},
		{"PL compact", "PL", "", "00950", "", "00-950"},
		{"PT", "PT", "", "1100-148", "", "1100-148"},
		{"PT compact", "PT", "", "1100148", "", "1100-148"},
		{"IE Eircode", "IE", "", "D02 X285", "", "D02 X285"},
		{"IE Eircode compact", "IE", "", "a65f4e2", "", "A65 F4E2"},
		{"IE D6W", "IE", "", "D6W 1234", "", "D6W 1234"},
		{"IE without Eircode", "IE", "Co. Kerry", "", "Co. Kerry", ""},
		{"AU", "AU", "NSW", "2000", "NSW", "2000"},
		{"AU NT leading zero", "AU", "Northern Territory", "0800", "Northern Territory", "0800"},
		{"NZ", "NZ", "", "6011", "", "6011"},
		{"JP", "JP", "Tokyo", "100-0001", "Tokyo", "100-0001"},
		{"JP compact", "JP", "Osaka", "5300001", "Osaka", "530-0001"},
		{"JP full-width", "JP", "東京都", "１００－０００１", "東京都", "100-0001"},
		{"KR", "KR", "", "03187", "", "03187"},
		{"IN", "IN", "Delhi", "110001", "Delhi", "110001"},
		{"IN with space", "IN", "Maharashtra", "400 001", "Maharashtra", "400001"},
		{"BR", "BR", "SP", "01310-100", "SP", "01310-100"},
		{"BR compact", "BR", "RJ", "20040020", "RJ", "20040-020"},
		{"MX", "MX", "CDMX", "06500", "CDMX", "06500"},
		{"SG", "SG", "", "018956", "", "018956"},
		{"CN", "CN", "Beijing", "100000", "Beijing", "100000"},
		{"AE no postal code", "AE", "Dubai", "", "Dubai", ""},
		{"AE optional postal code kept", "AE", "", "00000", "", "00000"},
		{"HK no postal code", "HK", "", "", "", ""},
		{"QA no postal code", "QA", "", "", "", ""},
		{"generic NO", "NO", "", "0150", "", "0150"},
		{"generic AR", "AR", "", "c1425dkf", "", "C1425DKF"},
		{"generic KY with dash", "KY", "", "KY1-1102", "", "KY1-1102"},
		{"generic BM with space", "BM", "", "HM 12", "", "HM 12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateAddress(testAddress(tc.country, tc.region, tc.postal))
			require.NoError(t, err)
			assert.Equal(t, tc.country, got.Country)
			assert.Equal(t, tc.wantRegion, got.Region)
			assert.Equal(t, tc.wantPostal, got.PostalCode)
		})
	}
}

func TestValidateAddressNormalises(t *testing.T) {
	in := ShippingAddress{
		Name:       "  Ada \u00a0 Lovelace ",
		Phone:      " +1 (555)  123-4567 ",
		Line1:      "\t12   Example Street\n",
		Line2:      "   ",
		City:       " New\u3000York ",
		Region:     " new york ",
		PostalCode: " 10001 ",
		Country:    " us ",
	}
	got, err := ValidateAddress(in)
	require.NoError(t, err)
	assert.Equal(t, ShippingAddress{
		Name:       "Ada Lovelace",
		Phone:      "+1 (555) 123-4567",
		Line1:      "12 Example Street",
		Line2:      "",
		City:       "New York",
		Region:     "NY",
		PostalCode: "10001",
		Country:    "US",
	}, got)
}

func TestValidateAddressInvalid(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(a *ShippingAddress)
		field string
	}{
		{"name missing", func(a *ShippingAddress) { a.Name = "" }, "name"},
		{"name blank", func(a *ShippingAddress) { a.Name = " \t " }, "name"},
		{"name too long", func(a *ShippingAddress) { a.Name = strings.Repeat("é", 101) }, "name"},
		{"name NUL", func(a *ShippingAddress) { a.Name = "Ada\x00Lovelace" }, "name"},
		{"name inner newline", func(a *ShippingAddress) { a.Name = "Ada\nLovelace" }, "name"},
		{"name invalid UTF-8", func(a *ShippingAddress) { a.Name = "Ada \xff" }, "name"},
		{"phone too short", func(a *ShippingAddress) { a.Phone = "555-12" }, "phone"},
		{"phone too long", func(a *ShippingAddress) { a.Phone = "+1 555 123 4567 89012" }, "phone"},
		{"phone letters", func(a *ShippingAddress) { a.Phone = "+1 555 CALL NOW" }, "phone"},
		{"phone too few digits", func(a *ShippingAddress) { a.Phone = "(12) 34-56 --" }, "phone"},
		{"phone plus inside", func(a *ShippingAddress) { a.Phone = "555 123+4567" }, "phone"},
		{"phone extension", func(a *ShippingAddress) { a.Phone = "555 123 4567 x12" }, "phone"},
		{"phone tab", func(a *ShippingAddress) { a.Phone = "555\t1234567" }, "phone"},
		{"line1 missing", func(a *ShippingAddress) { a.Line1 = "" }, "line1"},
		{"line1 too long", func(a *ShippingAddress) { a.Line1 = strings.Repeat("a", 101) }, "line1"},
		{"line1 bidi override", func(a *ShippingAddress) { a.Line1 = "12 \u202eteertS" }, "line1"},
		{"line1 line separator", func(a *ShippingAddress) { a.Line1 = "12 Street\u2028Flat 3" }, "line1"},
		{"line2 too long", func(a *ShippingAddress) { a.Line2 = strings.Repeat("a", 101) }, "line2"},
		{"line2 C1 control", func(a *ShippingAddress) { a.Line2 = "Flat\u00853" }, "line2"},
		{"city missing", func(a *ShippingAddress) { a.City = "" }, "city"},
		{"city too long", func(a *ShippingAddress) { a.City = strings.Repeat("a", 101) }, "city"},
		{"city DEL", func(a *ShippingAddress) { a.City = "Town\x7f" }, "city"},
		{"region too long", func(a *ShippingAddress) { a.Region = strings.Repeat("a", 101) }, "region"},
		{"region control", func(a *ShippingAddress) { a.Region = "Lon\x1bdon" }, "region"},
		{"country missing", func(a *ShippingAddress) { a.Country = "" }, "country"},
		{"country UK", func(a *ShippingAddress) { a.Country = "UK" }, "country"},
		{"country alpha-3", func(a *ShippingAddress) { a.Country = "GBR" }, "country"},
		{"country name", func(a *ShippingAddress) { a.Country = "United Kingdom" }, "country"},
		{"postal code missing", func(a *ShippingAddress) { a.PostalCode = "" }, "postal_code"},
		{"postal code wrong format", func(a *ShippingAddress) { a.PostalCode = "12345" }, "postal_code"},
		{"postal code control", func(a *ShippingAddress) { a.PostalCode = "SW1A\n1AA" }, "postal_code"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testAddress("GB", "", "SW1A 1AA")
			tc.edit(&a)
			got, err := ValidateAddress(a)
			requireAddressError(t, err, tc.field)
			assert.Equal(t, ShippingAddress{}, got, "no half-normalised address on error")
		})
	}
}

func TestValidateAddressFieldLimits(t *testing.T) {
	// The boundaries themselves are accepted, so the caps are not off by one.
	a := testAddress("GB", strings.Repeat("r", 100), "SW1A 1AA")
	a.Name = strings.Repeat("é", 100)
	a.Line1 = strings.Repeat("a", MaxAddressLine)
	a.Line2 = strings.Repeat("ü", MaxAddressLine) // characters, not bytes
	a.City = strings.Repeat("c", 100)
	_, err := ValidateAddress(a)
	require.NoError(t, err)

	// One more character on a street line is refused, naming the line:
	// the buying provider's retailers would refuse it after payment.
	for _, field := range []string{"line1", "line2"} {
		b := a
		if field == "line1" {
			b.Line1 += "a"
		} else {
			b.Line2 += "b"
		}
		_, err := ValidateAddress(b)
		require.ErrorIs(t, err, ErrInvalidAddress, field)
		var me *Error
		require.ErrorAs(t, err, &me)
		assert.Equal(t, "shipping_address."+field, me.Field)
	}

	for _, phone := range []string{"5551234", "+44 (0) 20 7946 0958", "(555) 123-4567", ""} {
		t.Run("phone "+phone, func(t *testing.T) {
			a := testAddress("GB", "", "SW1A 1AA")
			a.Phone = phone
			got, err := ValidateAddress(a)
			require.NoError(t, err)
			assert.Equal(t, phone, got.Phone)
		})
	}
}

func TestValidateAddressRegion(t *testing.T) {
	tests := []struct {
		name    string
		country string
		region  string
		postal  string
	}{
		{"US missing", "US", "", "10001"},
		{"US unknown code", "US", "XX", "10001"},
		{"US Canadian province", "US", "ON", "10001"},
		{"US misspelt", "US", "Nwe York", "10001"},
		{"CA missing", "CA", "", "K1A 0B1"},
		{"CA US state", "CA", "NY", "K1A 0B1"},
		{"CA obsolete PQ", "CA", "PQ", "H2Y 1C6"},
		{"AU missing", "AU", "", "2000"},
		{"BR missing", "BR", "", "01310-100"},
		{"MX missing", "MX", "", "06500"},
		{"IN missing", "IN", "", "110001"},
		{"CN missing", "CN", "", "100000"},
		{"JP missing", "JP", "", "100-0001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateAddress(testAddress(tc.country, tc.region, tc.postal))
			requireAddressError(t, err, "region")
		})
	}
}

func TestUSAndCanadianRegionCodes(t *testing.T) {
	us := strings.Fields(`AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD
		MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT
		VA WA WV WI WY DC PR GU VI AS MP AA AE AP`)
	require.Len(t, us, 50+1+5+3)
	for _, code := range us {
		t.Run("US "+code, func(t *testing.T) {
			got, err := ValidateAddress(testAddress("US", strings.ToLower(code), "10001"))
			require.NoError(t, err)
			assert.Equal(t, code, got.Region)
		})
	}
	ca := strings.Fields("AB BC MB NB NL NS NT NU ON PE QC SK YT")
	for _, code := range ca {
		t.Run("CA "+code, func(t *testing.T) {
			got, err := ValidateAddress(testAddress("CA", code, "K1A 0B1"))
			require.NoError(t, err)
			assert.Equal(t, code, got.Region)
		})
	}
	assert.Len(t, caRegions, len(ca), "Canada has 13 provinces and territories")

	// Every full name must lead back to its own code: a name shadowed by
	// another entry (or a typo that makes two keys equal) would silently
	// turn one state into another.
	for country, names := range map[string]map[string]string{"US": usRegions, "CA": caRegions} {
		for code, name := range names {
			assert.Equal(t, code, checkedRegions[country][regionKey(name)], "%s %s", country, name)
			assert.Equal(t, code, checkedRegions[country][regionKey(code)], "%s %s", country, code)
		}
	}
}

func TestValidateAddressPostalCodeInvalid(t *testing.T) {
	tests := []struct {
		country string
		region  string
		postal  string
	}{
		{"US", "NY", "1234"},
		{"US", "NY", "123456"},
		{"US", "NY", "ABCDE"},
		{"US", "NY", "12345-678"},
		{"US", "NY", ""},
		{"PR", "", "0090"},
		{"CA", "ON", "D1A 0B1"}, // D is never used
		{"CA", "ON", "W1A 0B1"}, // W never starts a code
		{"CA", "ON", "K1A 0B"},
		{"CA", "ON", "12345"},
		{"GB", "", "SW1A"},
		{"GB", "", "QW1 1AA"},  // Q never starts a code
		{"GB", "", "SW1A 1AC"}, // C is never in the inward code
		{"GB", "", "12345"},
		{"GB", "", ""},
		{"DE", "", "00123"},
		{"DE", "", "1011"},
		{"DE", "", ""},
		{"FR", "", "00100"},
		{"FR", "", "7500"},
		{"IT", "", "0018"},
		{"ES", "", "53001"}, // no province 53
		{"NL", "", "0123 AB"},
		{"NL", "", "1012 A"},
		{"NL", "", "1012"},
		{"BE", "", "10000"},
		{"BE", "", "0999"},
		{"AT", "", "101"},
		{"CH", "", "80010"},
		{"SE", "", "01455"},
		{"PL", "", "009500"},
		{"PT", "", "1100"},
		{"IE", "", "B02 X285"}, // B is not in the Eircode alphabet
		{"IE", "", "D02 X28"},
		{"AU", "NSW", "200"},
		{"NZ", "", "60111"},
		{"JP", "Tokyo", "100-000"},
		{"KR", "", "123-456"}, // the pre-2015 six-digit code
		{"IN", "Delhi", "011001"},
		{"BR", "SP", "01310-10"},
		{"MX", "CDMX", "0650"},
		{"SG", "", "01895"},
		{"CN", "Beijing", "10000"},
		{"NO", "", ""},                   // generic: required
		{"NO", "", "X"},                  // generic: too short
		{"NO", "", "1234567890123"},      // generic: too long
		{"NO", "", "01-50/"},             // generic: bad character
		{"NO", "", "-0150"},              // generic: must start with a letter or digit
		{"AE", "", "X"},                  // optional, but checked when given
		{"HK", "", "Kowloon, Hong Kong"}, // a city typed in the wrong box
	}
	for _, tc := range tests {
		t.Run(tc.country+" "+tc.postal, func(t *testing.T) {
			_, err := ValidateAddress(testAddress(tc.country, tc.region, tc.postal))
			requireAddressError(t, err, "postal_code")
		})
	}
}

func TestValidateAddressDoesNotEchoInput(t *testing.T) {
	// Each value carries a marker that must not reach the error: messages
	// go to clients and their logs, and addresses are personal data.
	tests := []struct {
		name  string
		edit  func(a *ShippingAddress)
		field string
	}{
		{"name", func(a *ShippingAddress) { a.Name = "Secretname" + strings.Repeat("x", 100) }, "name"},
		{"phone", func(a *ShippingAddress) { a.Phone = "SECRET 5551234" }, "phone"},
		{"line1", func(a *ShippingAddress) { a.Line1 = "Secret Street\x00" }, "line1"},
		{"country", func(a *ShippingAddress) { a.Country = "SECRET" }, "country"},
		{"region", func(a *ShippingAddress) { a.Country, a.Region, a.PostalCode = "US", "Secretland", "10001" }, "region"},
		{"postal code", func(a *ShippingAddress) { a.PostalCode = "SECRET1" }, "postal_code"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testAddress("GB", "", "SW1A 1AA")
			tc.edit(&a)
			_, err := ValidateAddress(a)
			requireAddressError(t, err, tc.field)
			assert.NotContains(t, strings.ToLower(err.Error()), "secret")
		})
	}
}

func TestAddressCountryTables(t *testing.T) {
	for cc := range noPostalCode {
		assert.True(t, ValidCountry(cc), "noPostalCode: %s", cc)
		_, formatted := postalFormats[cc]
		assert.False(t, formatted, "%s is both formatted and without postal codes", cc)
	}
	for cc := range postalFormats {
		assert.True(t, ValidCountry(cc), "postalFormats: %s", cc)
	}
	for cc := range regionRequired {
		assert.True(t, ValidCountry(cc), "regionRequired: %s", cc)
	}
	// Every example in an error message must itself be accepted, or the
	// message would tell the client to send something that fails.
	for cc, f := range postalFormats {
		require.NotEmpty(t, f.examples, cc)
		for _, ex := range f.examples {
			got, err := validatePostalCode(cc, ex)
			require.NoError(t, err, cc)
			assert.Equal(t, ex, got, "%s example is not in canonical form", cc)
		}
	}
}

func TestSplitName(t *testing.T) {
	tests := []struct {
		name, first, last string
		ok                bool
	}{
		{"Ada Lovelace", "Ada", "Lovelace", true},
		{"Augusta Ada King Lovelace", "Augusta Ada King", "Lovelace", true},
		{"  Ada   Lovelace ", "Ada", "Lovelace", true},
		{"Sukarno", "Sukarno", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, last, ok := SplitName(tc.name)
			assert.Equal(t, tc.first, first)
			assert.Equal(t, tc.last, last)
			assert.Equal(t, tc.ok, ok)
		})
	}
}
