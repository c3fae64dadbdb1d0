package models

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCountryListSize(t *testing.T) {
	// ISO 3166-1 assigns 249 alpha-2 codes; a miscount means a typo or a
	// dropped line in the table.
	codes := strings.Fields(isoCountryCodes)
	assert.Len(t, codes, 249)
	assert.Len(t, countries, 249, "duplicate codes in the table")
	for _, c := range codes {
		assert.Len(t, c, 2, c)
		assert.Equal(t, strings.ToUpper(c), c)
	}
}

func TestValidCountry(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"US", true},
		{"GB", true},
		{"DE", true},
		{"JP", true},
		{"AX", true}, // Åland Islands
		{"SS", true}, // South Sudan, assigned 2011
		{"BQ", true}, // Caribbean Netherlands, assigned 2010
		{"AQ", true}, // valid even though we do not ship there
		{"KP", true},
		{"ZW", true},
		{"us", false}, // canonical form only
		{"Us", false},
		{"UK", false}, // exceptionally reserved, not assigned: GB is the code
		{"EU", false},
		{"XK", false}, // user-assigned (Kosovo), not ISO
		{"AN", false}, // Netherlands Antilles, withdrawn 2010
		{"YU", false}, // withdrawn
		{"ZZ", false},
		{"USA", false},
		{"U", false},
		{"", false},
		{" US", false},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			assert.Equal(t, tc.want, ValidCountry(tc.code))
		})
	}
}

func TestNormalizeCountry(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"US", "US", true},
		{"us", "US", true},
		{" gb\t", "GB", true},
		{"De", "DE", true},
		{"uk", "", false},
		{"usa", "", false},
		{"", "", false},
		{"  ", "", false},
		{"u s", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := NormalizeCountry(tc.in)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDefaultNoShipCountries(t *testing.T) {
	assert.ElementsMatch(t, []string{"CU", "IR", "KP", "SY", "RU", "BY", "AQ"}, DefaultNoShipCountries)
	for _, c := range DefaultNoShipCountries {
		assert.True(t, ValidCountry(c), c)
	}
}
