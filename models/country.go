package models

import "strings"

// isoCountryCodes is every officially assigned ISO 3166-1 alpha-2 code
// (249), one line per initial letter. Exceptionally reserved codes (UK, EU,
// AC, ...) and user-assigned ones (XK) are left out: carriers and
// marketplaces key destinations by the assigned codes, so accepting the
// others would only defer the failure to fulfilment.
const isoCountryCodes = `
	AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ
	BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ
	CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ
	DE DJ DK DM DO DZ
	EC EE EG EH ER ES ET
	FI FJ FK FM FO FR
	GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY
	HK HM HN HR HT HU
	ID IE IL IM IN IO IQ IR IS IT
	JE JM JO JP
	KE KG KH KI KM KN KP KR KW KY KZ
	LA LB LC LI LK LR LS LT LU LV LY
	MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ
	NA NC NE NF NG NI NL NO NP NR NU NZ
	OM
	PA PE PF PG PH PK PL PM PN PR PS PT PW PY
	QA
	RE RO RS RU RW
	SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ
	TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ
	UA UG UM US UY UZ
	VA VC VE VG VI VN VU
	WF WS
	YE YT
	ZA ZM ZW
`

// countries is isoCountryCodes as a set, built once; it is never written
// after package initialisation, so concurrent reads are safe.
var countries = func() map[string]bool {
	m := make(map[string]bool, 249)
	for _, c := range strings.Fields(isoCountryCodes) {
		m[c] = true
	}
	return m
}()

// ValidCountry reports whether code is an assigned ISO 3166-1 alpha-2 code
// in its canonical uppercase form. It does not fold case, so a stored or
// compared code is always canonical; use NormalizeCountry on user input.
func ValidCountry(code string) bool {
	return countries[code]
}

// NormalizeCountry trims and uppercases s and reports whether the result is
// an assigned ISO 3166-1 alpha-2 code. The normalised code is returned only
// when it is valid.
func NormalizeCountry(s string) (string, bool) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if !countries[c] {
		return "", false
	}
	return c, true
}

// DefaultNoShipCountries are the destinations the service refuses. Each
// entry is there because an order could not lawfully or practically be
// delivered, so refusing at cart time beats failing after payment:
var DefaultNoShipCountries = []string{
	"CU", // Cuba: comprehensive US embargo (CACR); US marketplaces do not ship there.
	"IR", // Iran: comprehensive US, and broad EU, sanctions (ITSR).
	"KP", // North Korea: comprehensive UN, US and EU sanctions.
	"SY", // Syria: long under comprehensive US/EU sanctions; the 2025 easing still leaves export-licence requirements that carriers honour. Revisit as it progresses.
	"RU", // Russia: broad US/EU/UK export restrictions on consumer goods; marketplaces and carriers have suspended deliveries.
	"BY", // Belarus: export restrictions aligned with those on Russia, same effect on fulfilment.
	"AQ", // Antarctica: no carrier delivers there.
}
