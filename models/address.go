package models

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addressField is the prefix of the Field of every address error, so a
// client can point at the offending input (shipping_address.postal_code).
const addressField = "shipping_address."

// Length caps, in characters. Carrier label lines are shorter than this
// (UPS and FedEx print 35), but marketplaces accept longer lines and wrap
// them, so the caps only stop garbage, not long real addresses.
const (
	maxAddressText = 100 // name, city, region
	// MaxAddressLine caps line1 and line2: the buying provider passes them
	// to retailers that reject lines longer than 60 characters, so a longer
	// line is refused when the order is created, not after it is paid.
	MaxAddressLine = 60
	minPhoneLen    = 7
	maxPhoneLen    = 20
	minPhoneDigits = 7
)

// regionRequired lists the destinations whose carriers will not accept a
// label without a state, province or prefecture: their address formats have
// a mandatory state line and domestic couriers route by it (US, CA, AU, BR,
// MX, IN), or the marketplaces' own checkout forms require it (CN, JP).
// Elsewhere the region is optional free text.
var regionRequired = map[string]bool{
	"US": true, "CA": true, "AU": true, "BR": true,
	"MX": true, "IN": true, "CN": true, "JP": true,
}

// noPostalCode lists the destinations that have no postal-code system, or
// one so little used that addresses there are written without it. For them
// the postal code is optional; when given it must still look like one (2 to
// 12 letters, digits, spaces or dashes). A country wrongly left off this
// list has its customers blocked, a country wrongly on it only loses a
// format check, so doubtful cases are listed. Ireland is not here: its
// Eircode is optional but, when given, checked against its own format.
var noPostalCode = map[string]bool{
	"AE": true, // United Arab Emirates
	"AG": true, // Antigua and Barbuda
	"AO": true, // Angola
	"AW": true, // Aruba
	"BF": true, // Burkina Faso
	"BI": true, // Burundi
	"BJ": true, // Benin
	"BO": true, // Bolivia
	"BQ": true, // Caribbean Netherlands
	"BS": true, // Bahamas
	"BV": true, // Bouvet Island
	"BW": true, // Botswana
	"BZ": true, // Belize
	"CD": true, // DR Congo
	"CF": true, // Central African Republic
	"CG": true, // Congo
	"CI": true, // Côte d'Ivoire
	"CK": true, // Cook Islands
	"CM": true, // Cameroon
	"CW": true, // Curaçao
	"DJ": true, // Djibouti
	"DM": true, // Dominica
	"EH": true, // Western Sahara
	"ER": true, // Eritrea
	"FJ": true, // Fiji
	"GA": true, // Gabon
	"GD": true, // Grenada
	"GH": true, // Ghana: digital addresses (GhanaPost GPS) instead of postcodes
	"GM": true, // Gambia
	"GQ": true, // Equatorial Guinea
	"GY": true, // Guyana
	"HK": true, // Hong Kong
	"HM": true, // Heard Island and McDonald Islands
	"JM": true, // Jamaica: codes introduced 2020, not yet in general use
	"KI": true, // Kiribati
	"KM": true, // Comoros
	"KN": true, // Saint Kitts and Nevis
	"KP": true, // North Korea
	"LY": true, // Libya
	"ML": true, // Mali
	"MO": true, // Macao
	"MR": true, // Mauritania
	"MW": true, // Malawi: codes exist, not used in addresses
	"NR": true, // Nauru
	"NU": true, // Niue
	"PA": true, // Panama: codes exist, not used in addresses
	"QA": true, // Qatar
	"RW": true, // Rwanda
	"SB": true, // Solomon Islands
	"SC": true, // Seychelles
	"SL": true, // Sierra Leone
	"SR": true, // Suriname
	"SS": true, // South Sudan
	"ST": true, // São Tomé and Príncipe
	"SX": true, // Sint Maarten
	"SY": true, // Syria
	"TD": true, // Chad
	"TF": true, // French Southern Territories
	"TG": true, // Togo
	"TK": true, // Tokelau
	"TL": true, // Timor-Leste
	"TO": true, // Tonga
	"TT": true, // Trinidad and Tobago: codes exist, rarely used
	"TV": true, // Tuvalu
	"UG": true, // Uganda
	"VU": true, // Vanuatu
	"YE": true, // Yemen
	"ZW": true, // Zimbabwe
}

// postalFormat is one country's postal-code format. The pattern runs over
// the upper-cased, whitespace-collapsed input and captures the parts of the
// code; joining the non-empty parts with sep gives the canonical form, so
// "sw1a1aa" and "SW1A  1AA" both become "SW1A 1AA".
type postalFormat struct {
	re       *regexp.Regexp
	sep      string
	optional bool     // the code may be left out (Ireland's Eircode)
	examples []string // canonical codes shown in the error message, never the customer's input
}

func newPostalFormat(pattern, sep string, examples ...string) postalFormat {
	return postalFormat{re: regexp.MustCompile(pattern), sep: sep, examples: examples}
}

var (
	usZIP = newPostalFormat(`^(\d{5})(?:[ -]?(\d{4}))?$`, "-", "12345", "12345-6789")
	// GB outward codes start with one or two area letters (never Q, V, X
	// first; never I, J, Z second); inward codes never use C, I, K, M, O, V.
	// GIR 0AA is the one historic exception still in use.
	gbPostcode = newPostalFormat(`^(GIR|[A-PR-UWYZ][A-HK-Y]?\d[A-Z\d]?)[ -]?(\d[ABD-HJLNP-UW-Z]{2})$`, " ", "SW1A 1AA")
)

// postalFormats holds the destinations whose format is checked exactly: the
// ones most orders go to. Others get genericPostal.
var postalFormats = map[string]postalFormat{
	"US": usZIP,
	// US territories and the freely associated states are addressed with
	// US ZIP codes whether the customer picks them as a country or as a
	// US state.
	"PR": usZIP, "GU": usZIP, "VI": usZIP, "AS": usZIP, "MP": usZIP,
	"FM": usZIP, "MH": usZIP, "PW": usZIP,
	// Canada Post never uses D, F, I, O, Q, U (read as other characters by
	// sorting machines), nor W or Z as the first letter.
	"CA": newPostalFormat(`^([ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z])[ -]?(\d[ABCEGHJ-NPRSTV-Z]\d)$`, " ", "K1A 0B1"),
	"GB": gbPostcode,
	// The Crown Dependencies use Royal Mail's format with their own areas.
	"JE": gbPostcode, "GG": gbPostcode, "IM": gbPostcode,
	"DE": newPostalFormat(`^((?:0[1-9]|[1-9]\d)\d{3})$`, "", "10115"),
	"FR": newPostalFormat(`^((?:0[1-9]|[1-8]\d|9[0-8])\d{3})$`, "", "75001"),
	"IT": newPostalFormat(`^(\d{5})$`, "", "00184"),
	// The first two digits are the province, 01 to 52.
	"ES": newPostalFormat(`^((?:0[1-9]|[1-4]\d|5[0-2])\d{3})$`, "", "28013"),
	"NL": newPostalFormat(`^([1-9]\d{3})[ -]?([A-Z]{2})$`, " ", "1012 AB"),
	"BE": newPostalFormat(`^([1-9]\d{3})$`, "", "1000"),
	"AT": newPostalFormat(`^([1-9]\d{3})$`, "", "1010"),
	"CH": newPostalFormat(`^([1-9]\d{3})$`, "", "8001"),
	"SE": newPostalFormat(`^([1-9]\d{2})[ -]?(\d{2})$`, " ", "114 55"),
	"PL": newPostalFormat(`^(\d{2})[ -]?(\d{3})$`, "-", "00-950"),
	"PT": newPostalFormat(`^([1-9]\d{3})[ -]?(\d{3})$`, "-", "1100-148"),
	// Eircode: a routing key (letter and two digits, or D6W) and a
	// four-character unique identifier, from an alphabet without B, G, I,
	// J, L, M, O, Q, S, U, Z. Many Irish addresses are still written
	// without one, so it is optional.
	"IE": {
		re:       regexp.MustCompile(`^([AC-FHKNPRTV-Y]\d{2}|D6W)[ -]?([0-9AC-FHKNPRTV-Y]{4})$`),
		sep:      " ",
		optional: true,
		examples: []string{"D02 X285"},
	},
	"AU": newPostalFormat(`^(\d{4})$`, "", "2000"), // NT codes start with 0 (0800)
	"NZ": newPostalFormat(`^(\d{4})$`, "", "6011"),
	"JP": newPostalFormat(`^(\d{3})[ -]?(\d{4})$`, "-", "100-0001"),
	"KR": newPostalFormat(`^(\d{5})$`, "", "03187"), // five digits since 2015
	"IN": newPostalFormat(`^([1-9]\d{2}) ?(\d{3})$`, "", "110001"),
	"BR": newPostalFormat(`^(\d{5})[ -]?(\d{3})$`, "-", "01310-100"),
	"MX": newPostalFormat(`^(\d{5})$`, "", "06500"),
	"SG": newPostalFormat(`^(\d{6})$`, "", "018956"),
	"CN": newPostalFormat(`^(\d{6})$`, "", "100000"),
}

// genericPostal is the shape of a postal code anywhere else: short, and made
// of the characters postal codes use. It catches a street or a phone number
// typed in the wrong box without knowing each country's rules.
var genericPostal = regexp.MustCompile(`^[A-Z0-9](?:[A-Z0-9 -]{0,10}[A-Z0-9])$`)

// usRegions maps the USPS codes for the states, DC, the inhabited
// territories, the freely associated states and the military "states" (AA,
// AE, AP for APO/FPO/DPO mail) to their names. Marketplaces and carriers
// want the code, so a full name is normalised to it.
var usRegions = map[string]string{
	"AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas",
	"CA": "California", "CO": "Colorado", "CT": "Connecticut", "DE": "Delaware",
	"FL": "Florida", "GA": "Georgia", "HI": "Hawaii", "ID": "Idaho",
	"IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas",
	"KY": "Kentucky", "LA": "Louisiana", "ME": "Maine", "MD": "Maryland",
	"MA": "Massachusetts", "MI": "Michigan", "MN": "Minnesota", "MS": "Mississippi",
	"MO": "Missouri", "MT": "Montana", "NE": "Nebraska", "NV": "Nevada",
	"NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico", "NY": "New York",
	"NC": "North Carolina", "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma",
	"OR": "Oregon", "PA": "Pennsylvania", "RI": "Rhode Island", "SC": "South Carolina",
	"SD": "South Dakota", "TN": "Tennessee", "TX": "Texas", "UT": "Utah",
	"VT": "Vermont", "VA": "Virginia", "WA": "Washington", "WV": "West Virginia",
	"WI": "Wisconsin", "WY": "Wyoming",
	"DC": "District of Columbia",
	"PR": "Puerto Rico", "GU": "Guam", "VI": "Virgin Islands", "AS": "American Samoa",
	"MP": "Northern Mariana Islands",
	"FM": "Micronesia", "MH": "Marshall Islands", "PW": "Palau",
	"AA": "Armed Forces Americas", "AE": "Armed Forces Europe", "AP": "Armed Forces Pacific",
}

// caRegions maps Canada Post's province and territory codes to their
// English names; caFrenchNames adds the French ones, as Quebec and New
// Brunswick customers often write them.
var caRegions = map[string]string{
	"AB": "Alberta", "BC": "British Columbia", "MB": "Manitoba", "NB": "New Brunswick",
	"NL": "Newfoundland and Labrador", "NS": "Nova Scotia", "NT": "Northwest Territories",
	"NU": "Nunavut", "ON": "Ontario", "PE": "Prince Edward Island", "QC": "Quebec",
	"SK": "Saskatchewan", "YT": "Yukon",
}

var caFrenchNames = map[string]string{
	"colombie-britannique": "BC", "nouveau-brunswick": "NB",
	"terre-neuve-et-labrador": "NL", "nouvelle-écosse": "NS",
	"territoires du nord-ouest": "NT", "île-du-prince-édouard": "PE",
	"québec": "QC",
}

// Extra spellings people use for a few regions, keyed like regionKey.
var (
	usAliases = map[string]string{
		"washington dc": "DC", "us virgin islands": "VI", "united states virgin islands": "VI",
		"federated states of micronesia": "FM",
	}
	caAliases = map[string]string{
		"newfoundland": "NL", "pei": "PE", "yukon territory": "YT",
	}
)

// regionIndex is one country's region lookup: code and name keys (see
// regionKey) to the code.
type regionIndex map[string]string

func newRegionIndex(codes map[string]string, extra ...map[string]string) regionIndex {
	idx := regionIndex{}
	for code, name := range codes {
		idx[regionKey(code)] = code
		idx[regionKey(name)] = code
	}
	for _, m := range extra {
		for name, code := range m {
			idx[regionKey(name)] = code
		}
	}
	return idx
}

// checkedRegions are the countries whose region must be a known one, built
// once at start-up and only read afterwards.
var checkedRegions = map[string]regionIndex{
	"US": newRegionIndex(usRegions, usAliases),
	"CA": newRegionIndex(caRegions, caFrenchNames, caAliases),
}

// regionKey folds the ways a region is commonly written ("N.Y.", "new
// york", "Washington, D.C.", "Newfoundland & Labrador") onto one key.
func regionKey(s string) string {
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, ".", "")
	s = strings.ReplaceAll(s, ",", " ")
	s = strings.ReplaceAll(s, "&", " and ")
	return strings.Join(strings.Fields(s), " ")
}

// ValidateAddress checks a shipping address and returns it normalised:
// every field trimmed with inner whitespace collapsed, the country upper
// case, a US or Canadian region as its two-letter code and the postal code
// in its country's canonical form ("SW1A 1AA", "K1A 0B1", "1012 AB",
// "12345-6789").
//
// The first problem found is returned as an *Error with CodeInvalidAddress
// and Field "shipping_address.<subfield>". Messages say what is expected and
// never repeat the input: addresses are personal data, and error messages
// end up in client logs.
//
// Required: name, line1, city, country (an assigned ISO 3166-1 alpha-2
// code), region where regionRequired says so, and the postal code except in
// noPostalCode countries and Ireland. Phone is optional. Whether the service
// ships to the country at all is the pricing rules' decision, not this one.
func ValidateAddress(a ShippingAddress) (ShippingAddress, error) {
	var out ShippingAddress
	var err error
	if out.Name, err = addressText("name", a.Name, true); err != nil {
		return ShippingAddress{}, err
	}
	if out.Phone, err = validatePhone(a.Phone); err != nil {
		return ShippingAddress{}, err
	}
	if out.Line1, err = addressLine("line1", a.Line1, true); err != nil {
		return ShippingAddress{}, err
	}
	if out.Line2, err = addressLine("line2", a.Line2, false); err != nil {
		return ShippingAddress{}, err
	}
	if out.City, err = addressText("city", a.City, true); err != nil {
		return ShippingAddress{}, err
	}
	if out.Country, err = validateAddressCountry(a.Country); err != nil {
		return ShippingAddress{}, err
	}
	if out.Region, err = validateRegion(out.Country, a.Region); err != nil {
		return ShippingAddress{}, err
	}
	if out.PostalCode, err = validatePostalCode(out.Country, a.PostalCode); err != nil {
		return ShippingAddress{}, err
	}
	return out, nil
}

func addressError(field, format string, args ...any) *Error {
	return FieldError(CodeInvalidAddress, addressField+field, format, args...)
}

// cleanAddressText trims s, rejects what must never reach a shipping label, and
// collapses inner whitespace (including no-break and ideographic spaces) to
// single spaces. Line breaks and tabs are rejected rather than collapsed:
// in an address they mean the client put several fields into one.
func cleanAddressText(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", addressError(field, "%s is not valid UTF-8 text", field)
	}
	for _, r := range s {
		if forbiddenAddressRune(r) {
			return "", addressError(field, "%s must not contain control characters, line breaks or tabs", field)
		}
	}
	return strings.Join(strings.Fields(s), " "), nil
}

// forbiddenAddressRune reports control characters (C0, DEL, C1), the Unicode line
// and paragraph separators, and the bidirectional overrides and isolates,
// which can make a label print differently from what was checked.
func forbiddenAddressRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	case r >= '\u202A' && r <= '\u202E', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// addressText validates one free-text field.
func addressText(field, s string, required bool) (string, error) {
	s, err := cleanAddressText(field, s)
	if err != nil {
		return "", err
	}
	if s == "" {
		if required {
			return "", addressError(field, "%s is required", field)
		}
		return "", nil
	}
	if utf8.RuneCountInString(s) > maxAddressText {
		return "", addressError(field, "%s must be at most %d characters", field, maxAddressText)
	}
	return s, nil
}

// addressLine validates a street line: free text of at most MaxAddressLine
// characters.
func addressLine(field, s string, required bool) (string, error) {
	s, err := addressText(field, s, required)
	if err == nil && utf8.RuneCountInString(s) > MaxAddressLine {
		return "", addressError(field, "%s must be at most %d characters; put the rest in line2", field, MaxAddressLine)
	}
	return s, err
}

// SplitName splits a validated full name into the given and family names
// buying providers ask for: the last word is the family name, the words
// before it the given name. ok is false for a one-word name, which has no
// family name to send.
func SplitName(name string) (first, last string, ok bool) {
	words := strings.Fields(name)
	if len(words) < 2 {
		return name, "", false
	}
	return strings.Join(words[:len(words)-1], " "), words[len(words)-1], true
}

// validatePhone accepts the ways people write phone numbers ("+1 (555)
// 123-4567", "020 7946 0958") without reformatting them: carriers only pass
// the number to the courier, who dials it as written.
func validatePhone(s string) (string, error) {
	s, err := cleanAddressText("phone", s)
	if err != nil || s == "" {
		return s, err
	}
	bad := addressError("phone",
		"phone must be %d to %d characters of digits, spaces, +, -, ( and ), with at least %d digits and + only at the start",
		minPhoneLen, maxPhoneLen, minPhoneDigits)
	if len(s) < minPhoneLen || len(s) > maxPhoneLen {
		return "", bad
	}
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0:
		case r == ' ', r == '-', r == '(', r == ')':
		default:
			// Covers non-ASCII too, so len(s) above counted characters.
			return "", bad
		}
	}
	if digits < minPhoneDigits {
		return "", bad
	}
	return s, nil
}

func validateAddressCountry(s string) (string, error) {
	s, err := cleanAddressText("country", s)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", addressError("country", "country is required")
	}
	c, ok := NormalizeCountry(s)
	if !ok {
		return "", addressError("country", "country must be a two-letter ISO 3166-1 code such as US, GB (not UK) or DE")
	}
	return c, nil
}

func validateRegion(country, s string) (string, error) {
	s, err := addressText("region", s, false)
	if err != nil {
		return "", err
	}
	if s == "" {
		if regionRequired[country] {
			return "", addressError("region", "region (state, province or prefecture) is required for this country")
		}
		return "", nil
	}
	idx, checked := checkedRegions[country]
	if !checked {
		return s, nil
	}
	if code, ok := idx[regionKey(s)]; ok {
		return code, nil
	}
	if country == "US" {
		return "", addressError("region", "region must be a US state, DC, territory or armed forces (AA, AE, AP) code such as NY, or its full name")
	}
	return "", addressError("region", "region must be a Canadian province or territory code such as ON, or its full name")
}

func validatePostalCode(country, s string) (string, error) {
	s, err := cleanAddressText("postal_code", s)
	if err != nil {
		return "", err
	}
	s = strings.ToUpper(foldWidth(s))
	f, known := postalFormats[country]
	if s == "" {
		if noPostalCode[country] || (known && f.optional) {
			return "", nil
		}
		return "", addressError("postal_code", "postal_code is required for this country")
	}
	if !known {
		if !genericPostal.MatchString(s) {
			return "", addressError("postal_code", "postal_code must be 2 to 12 letters, digits, spaces or dashes")
		}
		return s, nil
	}
	m := f.re.FindStringSubmatch(s)
	if m == nil {
		return "", addressError("postal_code", "postal_code is not valid for this country; expected a format like %s", strings.Join(f.examples, " or "))
	}
	parts := make([]string, 0, len(m)-1)
	for _, p := range m[1:] {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, f.sep), nil
}

// foldWidth maps full-width forms (U+FF01..U+FF5E) to ASCII: Japanese,
// Chinese and Korean input methods often produce "１００－０００１" for
// 100-0001. (cleanAddressText has already turned the ideographic space into " ".)
func foldWidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '\uFF01' && r <= '\uFF5E' {
			return r - 0xFEE0
		}
		return r
	}, s)
}
