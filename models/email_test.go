package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateEmailValid(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"ada@example.com", "ada@example.com"},
		{"  ada@example.com\t", "ada@example.com"},
		{"Ada.Lovelace@Example.COM", "Ada.Lovelace@example.com"}, // local part keeps its case
		{"ada+receipts@mail.example.co.uk", "ada+receipts@mail.example.co.uk"},
		{"o'brien@example.ie", "o'brien@example.ie"},
		{"a_b-c=d{e}|f~g!h#i$j%k&l*m/n?o^p`q@example.com", "a_b-c=d{e}|f~g!h#i$j%k&l*m/n?o^p`q@example.com"},
		{"x@my-host.example", "x@my-host.example"},
		{"x@123.example.com", "x@123.example.com"}, // digits-only labels below the TLD
		{"x@xn--bcher-kva.example", "x@xn--bcher-kva.example"},
		{"x@example.xn--p1ai", "x@example.xn--p1ai"}, // punycode TLD (.рф)
		{"x@EXAMPLE.XN--P1AI", "x@example.xn--p1ai"},
		{strings.Repeat("a", 64) + "@example.com", strings.Repeat("a", 64) + "@example.com"},
		{"a@" + strings.Repeat("b", 63) + ".com", "a@" + strings.Repeat("b", 63) + ".com"},
		// 254 characters exactly: 64 + 1 + 63 + 1 + 63 + 1 + 57 + 1 + 3.
		{
			strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com",
			strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com",
		},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ValidateEmail(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestValidateEmailInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"blank", "   "},
		{"no at", "ada.example.com"},
		{"two ats", "ada@home@example.com"},
		{"empty local part", "@example.com"},
		{"empty domain", "ada@"},
		{"display name", "Ada Lovelace <ada@example.com>"},
		{"angle brackets", "<ada@example.com>"},
		{"comment", "ada@example.com (Ada)"},
		{"two addresses", "ada@example.com, bob@example.com"},
		{"quoted local part", `"ada"@example.com`},
		{"quoted local part with space", `"ada lovelace"@example.com`},
		{"space inside", "ada lovelace@example.com"},
		{"leading dot", ".ada@example.com"},
		{"trailing dot", "ada.@example.com"},
		{"double dot", "ada..lovelace@example.com"},
		{"non-ASCII local part", "adä@example.com"},
		{"local part too long", strings.Repeat("a", 65) + "@example.com"},
		{"too long", strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 58) + ".com"},
		{"no dot in domain", "ada@localhost"},
		{"IP literal", "ada@[192.168.0.1]"},
		{"IPv6 literal", "ada@[IPv6:::1]"},
		{"IP address as domain", "ada@192.168.0.1"},
		{"numeric TLD", "ada@example.123"},
		{"one-letter TLD", "ada@example.c"},
		{"TLD with digit", "ada@example.c0m"},
		{"TLD with hyphen", "ada@example.co-m"},
		{"bare xn-- TLD", "ada@example.xn--"},
		{"trailing dot domain", "ada@example.com."},
		{"empty label", "ada@example..com"},
		{"leading hyphen label", "ada@-example.com"},
		{"trailing hyphen label", "ada@example-.com"},
		{"underscore in domain", "ada@my_host.example.com"},
		{"non-ASCII domain", "ada@bücher.example"},
		{"label too long", "ada@" + strings.Repeat("b", 64) + ".com"},
		{"newline", "ada@example.com\nBcc: eve@example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValidateEmail(tc.in)
			assert.Empty(t, got)
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %v", err)
			assert.Equal(t, CodeInvalidEmail, e.Code)
			assert.Equal(t, "customer_email", e.Field)
			assert.NotEmpty(t, e.Message)
		})
	}
}

func TestValidateEmailDoesNotEchoInput(t *testing.T) {
	// Messages reach clients and their logs; an e-mail address is personal
	// data, so no part of it may appear in one.
	for _, in := range []string{
		"Secret Person <secretperson@example.com>",
		"secretperson@secretdomain",
		"secretperson@[10.0.0.1]",
		strings.Repeat("secret", 11) + "@example.com",
		"secretperson@secret.c0m",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := ValidateEmail(in)
			require.Error(t, err)
			assert.NotContains(t, strings.ToLower(err.Error()), "secret")
		})
	}
}
